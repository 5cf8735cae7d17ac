r"""Why ``eulbo-kg`` proposes uninformative (corner) points: a Jensen check.

Fits an ``EULBOModel`` on 100 uniform Hartmann6 points (the benchmark's start),
runs ``optimize_eulbo(utility="kg")``, then holds the optimized free points
``x'_i`` fixed and scores the expected log one-shot soft-KG,
``1/S sum_i log softplus(E[f(x'_i) | y_i] - y+)``, at: the returned candidate,
the first free point ``x'_0`` (an informative candidate), the cube's center and
300 uniform random candidates. ``log softplus`` is concave, so the fantasy noise
``Sigma(x'_i, x) / s(x) * eps_i`` lowers the average of the log: candidates
uncorrelated with the ``x'_i`` score best whenever the ``x'_i`` already sit where
the mean is high.

Usage::

    python benchmarks/eulbo/kg_jensen.py [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
from botorch.test_functions import Hartmann

from botorch_ext.eulbo import EULBOModel, optimize_eulbo

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(environment())
    torch.manual_seed(args.seed)
    f = Hartmann(dim=6, negate=True)
    X = torch.rand(100, 6, dtype=torch.float64)
    Y = f(X).unsqueeze(-1)
    model = EULBOModel(X, Y)
    bounds = torch.stack([torch.zeros(6), torch.ones(6)]).double()
    cand, _ = optimize_eulbo(model, bounds, utility="kg", seed=args.seed)
    fp = model.last_optimization["fantasy_points"]
    eps = torch.randn(
        fp.shape[0], 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )

    def score(x: torch.Tensor) -> float:
        with torch.no_grad():
            X_ = torch.cat([x.reshape(1, 6), fp]).unsqueeze(0)
            return model.soft_kg_log_utility(X_, eps).item()

    rand = [score(torch.rand(6, dtype=torch.float64)) for _ in range(300)]
    n_face = int(((cand <= 1e-6) | (cand >= 1 - 1e-6)).sum())
    point = cand.squeeze(0).numpy().round(3)
    print(f"returned candidate: {point} ({n_face} of 6 coordinates on a face)")
    print(f"f(candidate) = {f(cand).item():.3f}; best training f = {Y.max():.3f}")
    print(f"f(x'_i) mean = {f(fp).mean().item():.3f}")
    print("| candidate | expected log soft-KG (fixed x'_i) |")
    print("|---|---|")
    print(f"| returned | {score(cand):.4f} |")
    print(f"| x'_0 | {score(fp[0]):.4f} |")
    print(f"| center | {score(torch.full((6,), 0.5, dtype=torch.float64)):.4f} |")
    print(f"| 300 uniform: max | {max(rand):.4f} |")
    print(f"| 300 uniform: median | {statistics.median(rand):.4f} |")


if __name__ == "__main__":
    main()
