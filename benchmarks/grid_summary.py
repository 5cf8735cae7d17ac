r"""Summarize runner grids: means ± standard errors, paired differences, curves.

Reads every ``*/results.csv`` (or ``results.csv.gz``, or the per-run checkpoint
summaries ``results.checkpoints.csv.gz`` of ``compact_results.py``) under the given
folders, and a folder's own such file (a ``compare`` grid) (runs are keyed by method and
seed; a later folder does not override an earlier one; ``FOLDER::m1,m2`` takes
only those methods from that folder, ``FOLDER::m1=alias`` renames one), keeps the
runs that reached
``--at`` evaluations and prints Markdown:

* per method: seeds, best value at ``--at`` (mean ± standard error, minimization
  sign), the per-seed values, seconds per BO step (mean of per-step wall-clock
  differences) and the median fitted noise variance of the last step (model
  columns of ``results.csv``; empty for runs without them);
* paired differences ``A - B`` over the seeds both methods share (mean ± standard
  error, and how many seeds ``A`` is better), for the pairs given by ``--pairs``;

a per-seed table of the best value at ``--checkpoints``; and writes
``best_value.png`` (best value against evaluations, mean ± standard error bands)
and ``noise.png`` (median fitted noise per evaluation) into ``--plots``.

Usage::

    python benchmarks/grid_summary.py benchmarks/eulbo/results/adam-fit/hartmann6 \
        benchmarks/eulbo/results/reallocated-inducing/hartmann6::qlogei \
        --methods elbo-svgp,eulbo-ei,qlogei \
        --at 200 --pairs eulbo-ei:elbo-svgp,elbo-svgp:qlogei,eulbo-ei:qlogei \
        --plots benchmarks/eulbo/results/adam-fit/hartmann6
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

from botorch_ext.runner.results import stored_results_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt

#: ``compact_results.py``'s per-run checkpoint summary of a ``results.csv``.
CHECKPOINTS = "results.checkpoints.csv.gz"


def load(folders: list[str], methods: set[str] | None) -> dict:
    runs: dict[tuple[str, int], list[dict]] = {}
    for spec in folders:
        folder, _, only = spec.partition("::")
        # "m" keeps method m, "m=alias" keeps it under another name (e.g. a run
        # of an older version of a method).
        alias = dict(
            (item.split("=") + [item])[:2] for item in filter(None, only.split(","))
        )
        paths = sorted(
            p for pattern in ("*/results.csv", "*/results.csv.gz", f"*/{CHECKPOINTS}")
            for p in Path(folder).glob(pattern)
        )  # fmt: skip
        own = stored_results_path(Path(folder))  # a `compare` grid's one file
        if own is None and (Path(folder) / CHECKPOINTS).is_file():
            own = Path(folder) / CHECKPOINTS
        if own is not None:
            paths.insert(0, own)
        for path in paths:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt") as fh:
                grouped: dict[tuple[str, int], list[dict]] = defaultdict(list)
                for row in csv.DictReader(fh):
                    grouped[(row["method"], int(row["seed"]))].append(row)
            for (method, seed), rows in grouped.items():
                if alias and method not in alias:
                    continue
                key = (alias.get(method, method), seed)
                if (methods and key[0] not in methods) or key in runs:
                    continue
                runs[key] = rows
    return runs


def mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def evaluations(rows: list[dict]) -> int:
    r"""How many evaluations a run reached (its rows' largest ``n_evals``)."""
    return max(int(float(r["n_evals"])) for r in rows)


def row_at(rows: list[dict], at: int) -> dict | None:
    r"""The run's row after ``at`` evaluations; None if it has none (a summary)."""
    if len(rows) >= at and int(float(rows[at - 1]["n_evals"])) == at:
        return rows[at - 1]  # every row kept: the at-th
    return next((r for r in rows if int(float(r["n_evals"])) == at), None)


def best_at(rows: list[dict], at: int) -> float:
    row = row_at(rows, at)
    if row is None:
        raise ValueError(f"the run has no row at {at} evaluations (a checkpoint?)")
    return float(row["best_value"])


def step_seconds(rows: list[dict], at: int) -> list[float]:
    r"""Seconds per BO step from the runner's cumulative ``seconds`` stamps.

    From every row: each step's duration (the first step, which follows the
    initial design, left out). From a checkpoint summary: the mean step between
    its first row and the row at ``at``. Summaries without the ``seconds``
    column (compacted before it was kept) give none.
    """
    if "seconds" not in rows[0]:
        return []
    kept = [r for r in rows if int(float(r["n_evals"])) <= at]
    counts = [int(float(r["n_evals"])) for r in kept]
    if counts != list(range(counts[0], counts[0] + len(counts))):  # a summary
        steps = counts[-1] - counts[0]
        spent = float(kept[-1]["seconds"]) - float(kept[0]["seconds"])
        return [spent / steps] if steps > 0 else []
    stamps = sorted({float(r["seconds"]) for r in kept})
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)][1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--methods", default=None)
    parser.add_argument("--at", type=int, required=True)
    parser.add_argument("--pairs", default="")
    parser.add_argument(
        "--checkpoints",
        default="",
        help="comma-separated evaluation counts for a per-seed table of best values",
    )
    parser.add_argument("--plots", type=Path, default=None)
    args = parser.parse_args()
    methods = set(args.methods.split(",")) if args.methods else None
    runs = load(args.folders, methods)
    done = {k: v for k, v in runs.items() if evaluations(v) >= args.at}
    short = sorted(
        f"{m}/s{s} ({evaluations(v)})"
        for (m, s), v in runs.items()
        if evaluations(v) < args.at
    )
    by_method: dict[str, dict[int, list[dict]]] = defaultdict(dict)
    for (method, seed), rows in done.items():
        by_method[method][seed] = rows
    order = [m for m in (args.methods or "").split(",") if m in by_method] or sorted(
        by_method
    )
    print(f"Best value after {args.at} evaluations (minimization sign)\n")
    print(
        "| method | seeds | mean ± s.e. | per seed | s / step | last noise (median) |"
    )
    print("|---|---|---|---|---|---|")
    for method in order:
        seeds = sorted(by_method[method])
        values = [best_at(by_method[method][s], args.at) for s in seeds]
        mean, se = mean_se(values)
        steps = [t for s in seeds for t in step_seconds(by_method[method][s], args.at)]
        noises = [
            float(row_at(by_method[method][s], args.at).get("model_noise") or "nan")
            for s in seeds
        ]
        noises = [v for v in noises if not math.isnan(v)]
        noise = f"{statistics.median(noises):.2g}" if noises else ""
        per_seed = ", ".join(
            f"{s}: {v:.3f}" for s, v in zip(seeds, values, strict=True)
        )
        step = f"{statistics.fmean(steps):.2f}" if steps else ""
        print(
            f"| {method} | {len(seeds)} | {mean:.3f} ± {se:.3f} | {per_seed} | "
            f"{step} | {noise} |"
        )
    print()
    for pair in filter(None, args.pairs.split(",")):
        a, b = pair.split(":")
        if a not in by_method or b not in by_method:
            continue
        shared = sorted(set(by_method[a]) & set(by_method[b]))
        if not shared:
            continue
        diffs = [
            best_at(by_method[a][s], args.at) - best_at(by_method[b][s], args.at)
            for s in shared
        ]
        mean, se = mean_se(diffs)
        wins = sum(d < 0 for d in diffs)
        print(
            f"- paired {a} - {b} over {len(shared)} seeds: {mean:+.3f} ± {se:.3f} "
            f"(negative: {a} better; {a} better in {wins}, ties "
            f"{sum(d == 0 for d in diffs)})"
        )
    if short:
        print(f"- Runs short of {args.at} evaluations (left out): {', '.join(short)}")
    checkpoints = [int(c) for c in filter(None, args.checkpoints.split(","))]
    if checkpoints:
        print("\n| method | seed | " + " | ".join(map(str, checkpoints)) + " |")
        print("|---|---|" + "---|" * len(checkpoints))
        for method in order:
            for seed in sorted(by_method[method]):
                rows = by_method[method][seed]
                cells = [
                    f"{best_at(rows, c):.4g}" if row_at(rows, c) is not None else ""
                    for c in checkpoints
                ]
                print(f"| {method} | {seed} | " + " | ".join(cells) + " |")
    if args.plots is None:
        return
    args.plots.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, method in enumerate(order):
        curves = [
            [float(r["best_value"]) for r in rows[: args.at]]
            for rows in by_method[method].values()
            if len(rows) >= args.at  # every row (not a checkpoint summary)
        ]
        n = len(curves)
        if not n:
            continue
        mean = [statistics.fmean(c[j] for c in curves) for j in range(args.at)]
        se = [
            statistics.stdev(c[j] for c in curves) / math.sqrt(n) if n > 1 else 0.0
            for j in range(args.at)
        ]
        x = range(1, args.at + 1)
        ax.plot(x, mean, color=f"C{i}", label=f"{method} ({n} seeds)")
        ax.fill_between(
            x,
            [m - s for m, s in zip(mean, se, strict=True)],
            [m + s for m, s in zip(mean, se, strict=True)],
            color=f"C{i}",
            alpha=0.2,
        )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best value (mean ± s.e.)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.plots / "best_value.png", dpi=120)
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, method in enumerate(order):
        series = defaultdict(list)
        for rows in by_method[method].values():
            for r in rows[: args.at]:
                if r.get("model_noise") and int(float(r["n_evals"])) <= args.at:
                    series[int(r["n_evals"])].append(float(r["model_noise"]))
        if series:
            xs = sorted(series)
            ax.semilogy(
                xs, [statistics.median(series[x]) for x in xs], f"C{i}", label=method
            )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("fitted noise variance (median over seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.plots / "noise.png", dpi=120)


if __name__ == "__main__":
    main()
