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

Example::

    python benchmarks/eulbo/rover20k_report.py OUT/turbo_elbo_svgp_bounded \
        --cpu OUT/turbo_elbo_svgp_bounded.cpu.jsonl --at 1000,5000,10000,20000
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path


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


def step_costs(results: Path, at: list[int], window: int) -> dict[str, dict]:
    r"""Per method: evaluations, proposal seconds in all, median step near each n."""
    steps: dict[str, dict[int, tuple[int, float]]] = defaultdict(dict)
    for row in csv.DictReader(results.open()):
        iteration = int(row["iteration"])
        if iteration == 0:
            continue
        n = int(row["n_evals"])
        cost = float(row["fit_seconds"]) + float(row["acq_seconds"])
        previous = steps[row["method"]].get(iteration)
        if previous is None or n > previous[0]:
            steps[row["method"]][iteration] = (n, cost)
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
    parser.add_argument("run", type=Path, help="a compare output folder")
    parser.add_argument("--cpu", type=Path, help="the run's JSON-lines CPU record")
    parser.add_argument("--at", default="1000,5000,10000,20000")
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args()
    at = [int(v) for v in args.at.split(",")]
    for method, summary in step_costs(
        args.run / "results.csv", at, args.window
    ).items():
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
