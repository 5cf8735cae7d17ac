r"""Near-replicate proposals and switched-off input dimensions of stored runs.

For each stored run (a folder with the runner's ``results.csv``) and the
proposals with index in ``[--start, --stop)`` (0-based evaluation counts), the
script reports the median distance of a proposal to the nearest earlier point,
the share of proposals within ``--radius`` of an earlier point, the median
distance to the incumbent at the time, and, from the last row's
``model_lengthscales``, the largest and smallest fitted lengthscale and how
many exceed ``--long`` (an input dimension the model treats as irrelevant on the
unit cube). Per method: means over the runs.

Usage:
    python benchmarks/eulbo/replicates.py \
        benchmarks/eulbo/results/converged-fit/hartmann6-300/*-s[0-9] \
        --start 200 --stop 300
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
from collections import defaultdict

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--start", type=int, default=200)
    parser.add_argument("--stop", type=int, default=300)
    parser.add_argument("--radius", type=float, default=0.01)
    parser.add_argument("--long", type=float, default=2.0)
    args = parser.parse_args()
    per_method = defaultdict(list)
    print(
        "| run | median distance to nearest | share within radius | "
        "median distance to incumbent | lengthscales max / min | # > long |"
    )
    print("|---|---|---|---|---|---|")
    for folder in args.runs:
        with open(os.path.join(folder, "results.csv")) as fh:
            rows = list(csv.DictReader(fh))
        if len(rows) < args.stop or "x0" not in rows[0]:
            continue  # unfinished, or stored before the points were
        d = int(rows[0]["dim"])
        X = np.array([[float(r[f"x{i}"]) for i in range(d)] for r in rows])
        y = np.array([float(r["value"]) for r in rows])
        nearest, to_incumbent = [], []
        for t in range(args.start, args.stop):
            nearest.append(np.linalg.norm(X[:t] - X[t], axis=1).min())
            to_incumbent.append(np.linalg.norm(X[int(np.argmin(y[:t]))] - X[t]))
        nearest = np.array(nearest)
        ls = [float(v) for v in rows[args.stop - 1]["model_lengthscales"].split(";")]
        stats = (
            float(np.median(nearest)),
            float((nearest < args.radius).mean()),
            float(np.median(to_incumbent)),
            max(ls),
            min(ls),
            sum(v > args.long for v in ls),
        )
        name = os.path.basename(folder.rstrip("/"))
        per_method[re.sub(r"-s\d+$", "", name)].append(stats)
        print(
            f"| {name} | {stats[0]:.4f} | {stats[1]:.2f} | {stats[2]:.3f} | "
            f"{stats[3]:.3g} / {stats[4]:.3g} | {stats[5]} |"
        )
    print()
    print(
        "| method | runs | median distance to nearest | share within radius | "
        "runs with a lengthscale > long |"
    )
    print("|---|---|---|---|---|")
    for method, stats in per_method.items():
        print(
            f"| {method} | {len(stats)} | "
            f"{statistics.mean(s[0] for s in stats):.4f} | "
            f"{statistics.mean(s[1] for s in stats):.2f} | "
            f"{sum(s[5] > 0 for s in stats)} |"
        )


if __name__ == "__main__":
    main()
