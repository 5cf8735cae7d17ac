r"""Fitted BOCK angular weights and warp over runs (``model_angular_weights`` column).

For every run (``*/results.csv`` under the given folders, or a ``compare`` grid's
own ``results.csv``) of a BOCK method, prints Markdown: the fitted weights
``c_0..c_P`` at a few evaluation counts, the share of BO steps whose fit collapsed
onto the constant (``c_0 > 0.9``, a radius-only model) or onto one vertex (largest
weight ``> 0.99``), and the median warp ``(alpha, beta)``.

Usage::

    python benchmarks/bock/weights_summary.py \
        benchmarks/bock/results/continuous-rule/r100-400 \
        --at 50,100,200,400
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path


def runs_in(folder: Path) -> dict[tuple[str, str, int], list[dict]]:
    paths = sorted(folder.rglob("results.csv"))
    runs: dict[tuple[str, str, int], list[dict]] = defaultdict(list)
    for path in paths:
        with open(path) as fh:
            for row in csv.DictReader(fh):
                if row.get("model_angular_weights"):
                    key = (
                        f"{row['problem']}-{row['dim']}",
                        row["method"],
                        int(row["seed"]),
                    )
                    runs[key].append(row)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--at", default="50,100,200")
    args = parser.parse_args()
    at = [int(v) for v in args.at.split(",")]
    print(
        "| problem | method | seed | "
        + " | ".join(f"c at {a}" for a in at)
        + " | steps c_0 > 0.9 | steps at a vertex | warp (median) |"
    )
    print("|---|---|---|" + "---|" * len(at) + "---|---|---|")
    for folder in args.folders:
        for (problem, method, seed), rows in sorted(runs_in(folder).items()):
            by_n = {int(r["n_evals"]): r for r in rows}
            weights = [
                [float(v) for v in r["model_angular_weights"].split(";")] for r in rows
            ]
            cells = []
            for a in at:
                r = by_n.get(a)
                cells.append(
                    "("
                    + ", ".join(
                        f"{float(v):.2f}" for v in r["model_angular_weights"].split(";")
                    )
                    + ")"
                    if r
                    else ""
                )
            const = sum(w[0] > 0.9 for w in weights) / len(weights)
            vertex = sum(max(w) > 0.99 for w in weights) / len(weights)
            warps = [[float(v) for v in r["model_warp"].split(";")] for r in rows]
            alpha = statistics.median(w[0] for w in warps)
            beta = statistics.median(w[1] for w in warps)
            print(
                f"| {problem} | {method} | {seed} | "
                + " | ".join(cells)
                + f" | {const:.0%} | {vertex:.0%} | {alpha:.2f}, {beta:.2f} |"
            )


if __name__ == "__main__":
    main()
