r"""Summarize the BOCK Table-1 runs (``benchmarks/bock/table1.sh``) as Markdown.

For every ``results.csv`` under the given directory and every method: the mean and
standard deviation over seeds of the best value after the full budget (minimization
sign, as in the paper's Table 1), the number of seeds, and the mean wall-clock
seconds per BO iteration (a run's last ``seconds`` entry divided by its number of
proposals). Unfinished runs are listed separately and left out of the statistics.

Usage::

    python benchmarks/bock/summary.py [benchmarks/bock/results/direction-rule]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path


def summarize(path: Path) -> list[str]:
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return [f"| {path.parent.name} | (no finished run yet) | | | |"]
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        runs[(row["method"], row["seed"])].append(row)
    budget = max(int(r["n_evals"]) for r in rows)
    best: dict[str, list[float]] = defaultdict(list)
    per_iter: dict[str, list[float]] = defaultdict(list)
    unfinished = []
    for (method, seed), run in sorted(runs.items()):
        last = max(run, key=lambda r: int(r["n_evals"]))
        if int(last["n_evals"]) < budget:
            unfinished.append(f"{method}/{seed} at {last['n_evals']}")
            continue
        best[method].append(float(last["best_value"]))
        first = min(int(r["n_evals"]) for r in run)
        per_iter[method].append(float(last["seconds"]) / max(budget - first, 1))
    lines = []
    for method in best:
        vals = best[method]
        std = statistics.stdev(vals) if len(vals) > 1 else float("nan")
        lines.append(
            f"| {path.parent.name} | {method} | {statistics.mean(vals):.4g} ± "
            f"{std:.3g} | {len(vals)} | {statistics.mean(per_iter[method]):.2f} |"
        )
    if unfinished:
        lines.append(f"| {path.parent.name} | unfinished: {', '.join(unfinished)} |||")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "root",
        nargs="?",
        default="benchmarks/bock/results/direction-rule",
        help="a folder of settings, each with its results.csv (default: %(default)s)",
    )
    root = Path(parser.parse_args().root)
    print("| setting | method | best value (mean ± std) | seeds | s / iteration |")
    print("|---|---|---|---|---|")
    for path in sorted(root.glob("*/results.csv")):
        for line in summarize(path):
            print(line)


if __name__ == "__main__":
    main()
