r"""Summarize the BOCK Table-1 runs (``benchmarks/bock/table1.sh``) as Markdown.

For every setting (a folder holding a ``results.csv`` or the compacted
``results.checkpoints.csv.gz``) under the given directory and every method: the mean
and standard deviation over seeds of the best value after the full budget
(minimization sign, as in the paper's Table 1), the number of seeds, and the mean
seconds per BO step from the runner's ``seconds`` stamps (``n/a`` for summaries
compacted before they kept them). Unfinished runs are listed separately and left out
of the statistics.

Usage::

    PYTHONPATH=. python benchmarks/bock/summary.py [DIR]  # results/direction-rule
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.grid_summary import best_at, evaluations, load, step_seconds


def summarize(folder: Path) -> list[str]:
    r"""The Markdown rows of one setting: its ``results.csv`` or checkpoint summary."""
    runs = load([str(folder)], None)
    if not runs:
        return [f"| {folder.name} | (no finished run yet) | | | |"]
    budget = max(evaluations(rows) for rows in runs.values())
    best: dict[str, list[float]] = {}
    per_step: dict[str, list[float]] = {}
    unfinished = []
    for (method, seed), rows in sorted(runs.items()):
        if evaluations(rows) < budget:
            unfinished.append(f"{method}/{seed} at {evaluations(rows)}")
            continue
        best.setdefault(method, []).append(best_at(rows, budget))
        per_step.setdefault(method, []).extend(step_seconds(rows, budget))
    lines = []
    for method, vals in best.items():
        std = statistics.stdev(vals) if len(vals) > 1 else float("nan")
        steps = per_step[method]
        seconds = f"{statistics.mean(steps):.2f}" if steps else "n/a"
        lines.append(
            f"| {folder.name} | {method} | {statistics.mean(vals):.4g} ± "
            f"{std:.3g} | {len(vals)} | {seconds} |"
        )
    if unfinished:
        lines.append(f"| {folder.name} | unfinished: {', '.join(unfinished)} |||")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "root",
        nargs="?",
        default="benchmarks/bock/results/direction-rule",
        help="a folder of settings, each with its results.csv or its checkpoint "
        "summary (default: %(default)s)",
    )
    root = Path(parser.parse_args().root)
    print("| setting | method | best value (mean ± std) | seeds | s / iteration |")
    print("|---|---|---|---|---|")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for line in summarize(folder):
            print(line)


if __name__ == "__main__":
    main()
