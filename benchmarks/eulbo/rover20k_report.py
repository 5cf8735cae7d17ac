r"""A long rover run in figures: evaluations, CPU-hours, peak memory, step cost.

Reads a ``botorch-ext compare`` output folder (its ``results.csv``) and, if given, the
JSON-lines CPU record that the run's wrapper wrote (one row per sample, each with the
``segment`` of one invocation, its cumulative ``cpu`` seconds and ``peak_rss_mb`` of
the process tree; an interrupted and resumed run has several segments, and its CPU
time is the sum of each segment's last sample). Rows of the older record format
(``user``, ``sys``, ``maxrss_kb``, one row per finished invocation) are read too.

The step cost from the rows is the wall time of a proposal (``fit_seconds +
acq_seconds``), the median over the ``--window`` steps that end at each ``--at``
evaluation count; on a machine shared with other jobs it overstates the CPU cost,
which ``step_cost.py --state`` measures on copies of the run's resume file.

A run's 20,000 rows (with the evaluated points) are too large for git:
``--write-steps FILE.csv.gz`` keeps one gzipped row per step (method, iteration,
evaluations, fit and acquisition seconds, best value, fitted noise), and ``--cpu-last
FILE.jsonl`` each segment's last CPU sample; the script reads both back in place of
the run's folder and full record, with the same figures.

Example::

    python benchmarks/eulbo/rover20k_report.py OUT/turbo_elbo_svgp_bounded \
        --cpu OUT/turbo_elbo_svgp_bounded.cpu.jsonl --at 1000,5000,10000,20000
    python benchmarks/eulbo/rover20k_report.py \
        benchmarks/eulbo/results/rover20k/turbo_elbo_svgp_bounded.steps.csv.gz \
        --cpu benchmarks/eulbo/results/rover20k/turbo_elbo_svgp_bounded.cpu.jsonl
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import statistics
from collections import defaultdict
from pathlib import Path

STEP_COLUMNS = (
    "method",
    "iteration",
    "n_evals",
    "fit_seconds",
    "acq_seconds",
    "best_value",
    "model_noise",
)


def segment_lasts(path: Path) -> list[dict]:
    r"""Each segment's last sample of a JSON-lines CPU record (in file order)."""
    last: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if "segment" in row:
            last[row["segment"]] = row
    return list(last.values())


def cpu_record(path: Path) -> dict[str, float]:
    r"""CPU seconds, wall seconds and peak RSS (MB) summed/maxed over segments."""
    last: dict[str, dict] = {}
    old_cpu = old_wall = old_peak = 0.0
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if "segment" in row:
            last[row["segment"]] = row
        elif row.get("rc") == 0 or row.get("user", 0) > 60:  # skip failed starts
            old_cpu += row["user"] + row["sys"]
            old_wall += row["wall"]
            old_peak = max(old_peak, row["maxrss_kb"] / 1024)
    return {
        "cpu_s": old_cpu + sum(r["cpu"] for r in last.values()),
        "wall_s": old_wall + sum(r["wall"] for r in last.values()),
        "peak_rss_mb": max([old_peak] + [r["peak_rss_mb"] for r in last.values()]),
        "segments": len(last) + (old_cpu > 0),
    }


def _read_rows(results: Path) -> list[dict]:
    if results.name.endswith(".gz"):
        with gzip.open(results, "rt", newline="") as handle:
            return list(csv.DictReader(handle))
    with results.open(newline="") as handle:
        return list(csv.DictReader(handle))


def step_rows(results: Path) -> list[dict]:
    r"""One row per proposal step (its last evaluation's row), ``STEP_COLUMNS``.

    ``results`` is a runner ``results.csv`` or a file this function's rows were
    written to (``--write-steps``), which it returns as read.
    """
    last: dict[tuple[str, int], dict] = {}
    for row in _read_rows(results):
        iteration = int(row["iteration"])
        if iteration == 0:
            continue
        key = (row["method"], iteration)
        previous = last.get(key)
        if previous is None or int(row["n_evals"]) > int(previous["n_evals"]):
            last[key] = {name: row.get(name, "") for name in STEP_COLUMNS}
    return [last[key] for key in sorted(last)]


def write_steps(rows: list[dict], path: Path) -> None:
    r"""Writes ``step_rows``' rows to a gzipped CSV (``mtime`` 0: reproducible)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=STEP_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with (
        path.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle,
    ):
        handle.write(text.getvalue().encode())


def step_costs(results: Path, at: list[int], window: int) -> dict[str, dict]:
    r"""Per method: evaluations, proposal seconds in all, median step near each n."""
    steps: dict[str, dict[int, tuple[int, float]]] = defaultdict(dict)
    for row in step_rows(results):
        cost = float(row["fit_seconds"]) + float(row["acq_seconds"])
        steps[row["method"]][int(row["iteration"])] = (int(row["n_evals"]), cost)
    out = {}
    for method, by_iteration in steps.items():
        ordered = [by_iteration[i] for i in sorted(by_iteration)]
        summary: dict = {
            "evaluations": max(n for n, _ in ordered),
            "steps": len(ordered),
            "proposal_hours": sum(c for _, c in ordered) / 3600,
        }
        for target in at:
            before = [c for n, c in ordered if n <= target][-window:]
            summary[f"step_s_at_{target}"] = (
                statistics.median(before)
                if len(before) == window and ordered[-1][0] >= target
                else None
            )
        out[method] = summary
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run", type=Path, help="a compare output folder, or a --write-steps file"
    )
    parser.add_argument("--cpu", type=Path, help="the run's JSON-lines CPU record")
    parser.add_argument("--at", default="1000,5000,10000,20000")
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument(
        "--write-steps", type=Path, help="write one gzipped row per step here"
    )
    parser.add_argument(
        "--cpu-last", type=Path, help="write each segment's last CPU sample here"
    )
    args = parser.parse_args()
    at = [int(v) for v in args.at.split(",")]
    results = args.run / "results.csv" if args.run.is_dir() else args.run
    if args.write_steps is not None:
        write_steps(step_rows(results), args.write_steps)
    if args.cpu_last is not None:
        if args.cpu is None:
            parser.error("--cpu-last needs --cpu")
        lasts = segment_lasts(args.cpu)
        args.cpu_last.write_text("".join(json.dumps(r) + "\n" for r in lasts))
    for method, summary in step_costs(results, at, args.window).items():
        print(method)
        for key, value in summary.items():
            shown = "-" if value is None else f"{value:.3f}"
            print(f"  {key:<22} {shown}")
    if args.cpu is not None:
        record = cpu_record(args.cpu)
        print(
            f"CPU {record['cpu_s'] / 3600:.3f} h, "
            f"wall {record['wall_s'] / 3600:.3f} h, "
            f"peak RSS {record['peak_rss_mb']:.0f} MB, "
            f"{record['segments']} segment(s)"
        )


if __name__ == "__main__":
    main()
