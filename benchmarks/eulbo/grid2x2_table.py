r"""The 2 x 2 tables of ``benchmarks/eulbo/README.md`` section 5, from stored runs.

Reads the runner's runs (``compare`` folders with ``results.csv``,
``results.csv.gz`` or the compacted ``results.checkpoints.csv.gz`` of
``benchmarks/compact_results.py``; ``FOLDER::method=alias`` as in
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
import csv
import glob
import gzip
import math
import statistics
from pathlib import Path

#: The files a run folder may hold its rows in, in the order they are preferred.
ROW_FILES = ("results.csv", "results.csv.gz", "results.checkpoints.csv.gz")


def load(specs: list[str]) -> dict[tuple[str, int], dict[int, dict]]:
    r"""Rows by ``(method or alias, seed)``, each as ``{n_evals: row}``.

    ``spec`` is ``FOLDER`` or ``FOLDER::m1,m2=alias`` (only those methods, the
    second renamed); a folder holds one ``compare`` grid or runs in subfolders. A
    run already read from an earlier spec is kept.
    """
    runs: dict[tuple[str, int], dict[int, dict]] = {}
    for spec in specs:
        folder, _, only = spec.partition("::")
        alias = dict(
            (item.split("=") + [item])[:2] for item in filter(None, only.split(","))
        )
        for run_dir in [Path(folder), *sorted(Path(folder).glob("*/"))]:
            path = next(
                (run_dir / n for n in ROW_FILES if (run_dir / n).exists()), None
            )
            if path is None:
                continue
            opener = gzip.open if path.suffix == ".gz" else open
            found: dict[tuple[str, int], dict[int, dict]] = {}
            with opener(path, "rt") as fh:
                for row in csv.DictReader(fh):
                    key = (row["method"], int(row["seed"]))
                    found.setdefault(key, {})[int(row["n_evals"])] = row
            for (method, seed), rows in found.items():
                if alias and method not in alias:
                    continue
                key = (alias.get(method, method), seed)
                runs.setdefault(key, rows)
    return runs


def best_at(rows: dict[int, dict], n: int) -> float:
    r"""The best value after ``n`` evaluations."""
    return float(rows[n]["best_value"])


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
                float(rows[n]["model_noise"])
                for (m, _), rows in sorted(runs.items())
                if m == arm and n in rows and rows[n].get("model_noise")
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
                if m == arm and n in rows
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
                if m == a and (b, s) in runs and n in runs[a, s] and n in runs[b, s]
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
    runs = load(folders)
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
