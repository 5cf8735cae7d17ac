r"""The default-kernel decision on the rover: best values and paired differences.

Reads the stored runs of ``turbo-elbo-svgp`` (BoTorch's ARD kernel) and of the
ablation ``turbo-elbo-svgp-iso-prior-scaled`` (the isotropic RBF kernel with
BoTorch's dimension-scaled lengthscale prior and a Gamma(2, 0.15) outputscale,
now ``EULBOModel``'s default), raw (``results.csv``) or compacted
(``results.checkpoints.csv.gz``), and prints, at each checkpoint, the best value
of every seed (minimization), mean +/- standard error per kernel, and the
paired difference isotropic - ARD over the seeds both reached.

Example::

    python benchmarks/eulbo/kernel_decision.py --at 300,600,1000,2000 \
        benchmarks/eulbo/results/converged-fit/rover-ablation \
        benchmarks/eulbo/results/converged-fit/rover-iso-1000 \
        benchmarks/eulbo/results/converged-fit/rover-kernel
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import statistics
from pathlib import Path

KERNELS = {
    "turbo-elbo-svgp": "ARD",
    "turbo-elbo-svgp-iso-prior-scaled": "isotropic",
}


def best_values(directories: list[str]) -> dict[tuple[str, int], dict[int, float]]:
    r"""``(kernel, seed) -> {n_evals: best value so far}`` from the run folders."""
    runs: dict[tuple[str, int], dict[int, float]] = {}
    for directory in directories:
        paths = [*Path(directory).glob("*/results*.csv")]
        paths += Path(directory).glob("*/results*.csv.gz")
        for path in sorted(paths):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", newline="") as f:
                rows = list(csv.DictReader(f))
            if not rows or rows[0]["method"] not in KERNELS:
                continue
            key = (KERNELS[rows[0]["method"]], int(rows[0]["seed"]))
            curve = runs.setdefault(key, {})
            best = math.inf
            for row in sorted(rows, key=lambda r: int(r["n_evals"])):
                if "status" in row and row["status"] not in ("", "ok"):
                    continue
                value = float(row["best_value"]) if "best_value" in row else math.inf
                best = min(best, value)
                curve[int(row["n_evals"])] = best
    return runs


def _mean_se(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.3f}" if values else ""
    se = statistics.stdev(values) / math.sqrt(len(values))
    return f"{statistics.mean(values):.3f} +/- {se:.3f}"


def table(runs: dict[tuple[str, int], dict[int, float]], at: list[int]) -> str:
    r"""A markdown table: per checkpoint, per-seed values, means and the paired gap."""
    seeds = sorted({seed for _, seed in runs})
    lines = [
        "| evaluations | kernel | seeds | per seed | mean +/- s.e. | paired iso - ARD "
        "(iso better in) |",
        "|---|---|---|---|---|---|",
    ]
    for n in at:
        have = {
            kernel: {
                s: runs[(kernel, s)][n] for s in seeds if n in runs.get((kernel, s), {})
            }
            for kernel in ("ARD", "isotropic")
        }
        common = sorted(set(have["ARD"]) & set(have["isotropic"]))
        diffs = [have["isotropic"][s] - have["ARD"][s] for s in common]
        paired = (
            f"{_mean_se(diffs)} ({sum(d < 0 for d in diffs)} of {len(diffs)})"
            if diffs
            else ""
        )
        for kernel in ("ARD", "isotropic"):
            values = have[kernel]
            per_seed = " / ".join(f"s{s} {v:.2f}" for s, v in values.items())
            lines.append(
                f"| {n:,} | {kernel} | {len(values)} | {per_seed} | "
                f"{_mean_se(list(values.values()))} | "
                f"{paired if kernel == 'isotropic' else ''} |"
            )
    return "\n".join(lines)


def main() -> None:
    r"""Command line: the run folders, ``--at`` the checkpoints."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+")
    parser.add_argument("--at", default="300,600,1000,2000")
    args = parser.parse_args()
    at = [int(n) for n in args.at.split(",")]
    print(table(best_values(args.directories), at))


if __name__ == "__main__":
    main()
