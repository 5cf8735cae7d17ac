r"""The 2 x 2 tables of ``benchmarks/eulbo/README.md`` section 5, from stored runs.

Reads the runner's runs (``compare`` folders, ``FOLDER::method=alias`` as in
``benchmarks/grid_summary.py``) and prints Markdown: per arm, the best value
(minimization sign) at each of ``--at`` evaluations as mean +/- standard error over
the seeds that reached it; per pair ``A:B``, the paired difference ``A - B`` over the
seeds both reached, its standard error, and in how many seeds ``A`` is better
(negative differences: ``A`` better). With ``--noise``, a third table: the fitted
noise variance (the rows' ``model_noise``, in standardized units) at each budget.

Example::

    python benchmarks/eulbo/grid2x2_table.py \
        'runs/seed-*-authors' 'runs/seed-*-default-elbo::M=converged' \
        --at 200,300 --pairs eulbo-ei-authors:elbo-svgp-authors
"""

from __future__ import annotations

import argparse
import glob
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.grid_summary import best_at, load


def mean_se(values: list[float]) -> str:
    r"""``mean +/- s.e. (n)`` of ``values``."""
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:+.3f} +/- {se:.3f} ({len(values)})"


def noise_table(runs: dict, at: list[int]) -> str:
    r"""Mean +/- s.e. over seeds of the fitted noise at each budget, per arm."""
    out = ["| fitted noise | " + " | ".join(f"{n}" for n in at) + " |"]
    out.append("|---|" + "---|" * len(at))
    for arm in sorted({method for method, _ in runs}):
        cells = []
        for n in at:
            values = [
                float(rows[n - 1]["model_noise"])
                for (m, _), rows in sorted(runs.items())
                if m == arm and len(rows) >= n and rows[n - 1].get("model_noise")
            ]
            cells.append(mean_se(values) if values else "")
        out.append(f"| `{arm}` | " + " | ".join(cells) + " |")
    return "\n".join(out)


def tables(runs: dict, at: list[int], pairs: list[tuple[str, str]]) -> str:
    r"""The arm table and the paired-difference table as Markdown."""
    arms = sorted({method for method, _ in runs})
    out = ["| arm | " + " | ".join(f"{n} evaluations" for n in at) + " |"]
    out.append("|---|" + "---|" * len(at))
    for arm in arms:
        cells = []
        for n in at:
            values = [
                best_at(rows, n)
                for (m, _), rows in sorted(runs.items())
                if m == arm and len(rows) >= n
            ]
            cells.append(mean_se(values) if values else "")
        out.append(f"| `{arm}` | " + " | ".join(cells) + " |")
    out += ["", "| paired difference | " + " | ".join(f"{n}" for n in at) + " |"]
    out.append("|---|" + "---|" * len(at))
    for a, b in pairs:
        cells = []
        for n in at:
            diffs = [
                best_at(runs[a, s], n) - best_at(runs[b, s], n)
                for (m, s) in sorted(runs)
                if m == a
                and (b, s) in runs
                and len(runs[a, s]) >= n
                and len(runs[b, s]) >= n
            ]
            wins = sum(d < 0 for d in diffs)
            cells.append(f"{mean_se(diffs)}, {wins} better" if diffs else "")
        out.append(f"| `{a}` - `{b}` | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    r"""Print the tables; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="FOLDER or glob, ::methods")
    parser.add_argument("--at", default="100,200,300")
    parser.add_argument("--pairs", default="", help="A:B,C:D")
    parser.add_argument("--noise", action="store_true", help="the fitted noise too")
    args = parser.parse_args(argv)
    folders = []
    for spec in args.folders:
        pattern, sep, only = spec.partition("::")
        folders += [f"{f}{sep}{only}" for f in sorted(glob.glob(pattern))]
    runs = load(folders, None)
    at = [int(n) for n in args.at.split(",")]
    pairs = [
        (p.split(":")[0], p.split(":")[1]) for p in filter(None, args.pairs.split(","))
    ]
    print(tables(runs, at, pairs))
    if args.noise:
        print("\n" + noise_table(runs, at))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
