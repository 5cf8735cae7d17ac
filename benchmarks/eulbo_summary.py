r"""Summarize the EULBO runs of ``benchmarks/eulbo_hartmann6.sh`` as Markdown + PNGs.

For every problem folder under the results directory (``hartmann6``,
``turbo-hartmann6x20``), reads each run's ``results.csv`` and prints:

* the per-method table of ``botorch_ext.runner.compare.summarize`` (final best
  value, mean ± std over seeds, in the runner's minimization sign; seconds per
  BO step), for finished runs only;
* per-seed final best values;
* seconds per BO step: mean and median of the per-step wall-clock differences,
  and the EULBO / ELBO-SVGP ratio of the means (the issue's "at most 3x" target);
* the two targets of issue 6 where they apply.

and writes ``best_value.png`` (log10 regret of the best value against
evaluations, mean ± std over seeds) into each problem folder.

Usage::

    python benchmarks/eulbo_summary.py [benchmarks/results/eulbo]
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from botorch_ext.runner.compare import format_summary, summarize
from botorch_ext.runner.plotting import plot_regret

NUMERIC = {"n_evals": int, "seed": int, "dim": int}


def load(folder: Path) -> dict[tuple[str, int], list[dict]]:
    runs: dict[tuple[str, int], list[dict]] = {}
    for path in sorted(folder.glob("*/results.csv")):
        with open(path) as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            for key, value in row.items():
                if key in NUMERIC:
                    row[key] = NUMERIC[key](value)
                elif key in ("value", "best_value", "regret", "seconds"):
                    row[key] = float(value)
        if rows:
            runs[(rows[0]["method"], rows[0]["seed"])] = rows
    return runs


def step_seconds(rows: list[dict]) -> list[float]:
    stamps = sorted({r["seconds"] for r in rows})
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def report(folder: Path, budget: int) -> list[str]:
    runs = load(folder)
    finished = {k: v for k, v in runs.items() if max(r["n_evals"] for r in v) >= budget}
    unfinished = sorted(
        f"{m}/s{s} at {max(r['n_evals'] for r in v)}"
        for (m, s), v in runs.items()
        if (m, s) not in finished
    )
    out = [f"### {folder.name}", ""]
    if not finished:
        return [*out, "(no finished run)", ""]
    rows = [r for v in finished.values() for r in v]
    summary = summarize(rows)
    out += [format_summary(summary), ""]
    per_seed: dict[str, list[str]] = defaultdict(list)
    steps: dict[str, list[float]] = defaultdict(list)
    for (method, seed), v in sorted(finished.items()):
        last = max(v, key=lambda r: r["n_evals"])
        per_seed[method].append(f"s{seed}: {last['best_value']:.4f}")
        steps[method] += step_seconds(v)
    out += ["| method | final best per seed | s / step mean | s / step median |"]
    out += ["|---|---|---|---|"]
    for method in sorted(per_seed):
        out.append(
            f"| {method} | {', '.join(per_seed[method])} | "
            f"{statistics.fmean(steps[method]):.2f} | "
            f"{statistics.median(steps[method]):.2f} |"
        )
    out.append("")
    best = {s["method"]: s["best_mean"] for s in summary}
    pairs = (("eulbo-ei", "elbo-svgp"), ("turbo-eulbo-ei", "turbo-elbo-svgp"))
    for eulbo, elbo in pairs:
        if eulbo in best and elbo in best:
            ratio = statistics.fmean(steps[eulbo]) / statistics.fmean(steps[elbo])
            # Minimization sign: lower is better.
            met = "met" if best[eulbo] <= best[elbo] else "not met"
            out.append(
                f"- {eulbo} mean best {best[eulbo]:.4f} vs {elbo} {best[elbo]:.4f}: "
                f"target (at least as good) {met}; step time ratio {ratio:.2f}x "
                f"(target <= 3x: {'met' if ratio <= 3 else 'not met'})."
            )
    if unfinished:
        out.append(f"- Unfinished (left out): {', '.join(unfinished)}.")
    plot_regret(rows, folder / "best_value.png", title=folder.name)
    out += ["", f"Plot: `{folder / 'best_value.png'}`", ""]
    return out


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/eulbo")
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        print("\n".join(report(folder, budget)))


if __name__ == "__main__":
    main()
