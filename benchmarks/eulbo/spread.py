r"""Where a run's late evaluations go: their distance to the run's best point.

For each checkpoint of ``msweep.py --checkpoint`` (a ``.pt`` file holding the run's
points and values) it prints the median Euclidean distance, in the problem's
coordinates, from the evaluations after ``--after`` to the best point of the run,
and the median of those per method. A loop that exploits keeps it small; one
that keeps exploring the whole domain keeps it near the typical distance between
two random points (about 1.0 in the 6-D unit cube).

Usage:
    python benchmarks/eulbo/spread.py checkpoints/hartmann6-*-m50-s*-init100-q1.pt \
        --after 200
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict

import torch


def late_spread(X: torch.Tensor, Y: torch.Tensor, after: int) -> float:
    r"""Median distance from ``X[after:]`` to the point of the largest ``Y``."""
    if not 0 <= after < X.shape[0]:
        raise ValueError(f"`after` must be in [0, {X.shape[0]}), got {after}")
    best = X[Y.squeeze(-1).argmax()]
    return (X[after:] - best).norm(dim=-1).median().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--after", type=int, default=200)
    args = parser.parse_args()
    groups: dict[str, list[float]] = defaultdict(list)
    for path in args.checkpoints:
        state = torch.load(path, weights_only=False)
        value = late_spread(state["X"], state["Y"], args.after)
        name = os.path.basename(path).split("-init")[0]  # PROBLEM-METHOD-mM-sSEED
        method = name.split("-", 1)[1].rsplit("-s", 1)[0]
        groups[method].append(value)
        print(f"{name}: {value:.3f}")
    print(f"| method | runs | median distance of evaluations after {args.after} "
          "to the best point |")  # fmt: skip
    print("|---|---|---|")
    for method, values in sorted(groups.items()):
        print(f"| {method} | {len(values)} | {statistics.median(values):.3f} |")


if __name__ == "__main__":
    main()
