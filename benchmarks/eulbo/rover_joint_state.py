r"""What the joint EULBO phase does on the 60-D rover from one state.

``n`` i.i.d. uniform points of the rover problem, an ``EULBOModel`` (m = 100) fitted
by the ELBO with either the converged fit (``elbo_optimizer="lbfgs"``, the default
at ``n <= 2,000``) or the Adam fit of the stored rover runs (``"adam"``), then, from
that same fitted state, the joint phase of ``optimize_eulbo`` for q = 20 over the
whole cube (the fit patched out, so every variant starts from the same ``w`` and the
same qLogEI warm start). Per variant it records the EULBO, its ELBO part and the
expected log utility before and after, the largest distance a candidate moved, the
number of steps and the seconds.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/rover_joint_state.py --n 1000 \
        --output benchmarks/eulbo/results/converged-fit/rover_joint_state.csv
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
import warnings

import torch

from botorch_ext.eulbo import (
    EULBO,
    ELBOFitOptions,
    EULBOModel,
    EULBOOptions,
    JointOptions,
    WarmStartOptions,
    fit_elbo,
    optimize_eulbo,
)
from botorch_ext.runner.problems import get_problem

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
from common import append_csv_row, environment  # noqa: E402

#: (ELBO fit, joint optimizer, joint parameters, utility weight)
VARIANTS = [
    ("lbfgs", "adam", "all", 1.0),
    ("lbfgs", "lbfgs", "variational", 1.0),
    ("lbfgs", "lbfgs", "all", 1.0),
    ("adam", "adam", "all", 1.0),
    ("adam", "adam", "all", 0.0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--q", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--output",
        default=os.path.join(HERE, "results/converged-fit/rover_joint_state.csv"),
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem("rover")
    gen = torch.Generator().manual_seed(args.seed)
    X = torch.rand(args.n, problem.dim, generator=gen, dtype=torch.double)
    Y = -problem(X).unsqueeze(-1)
    bounds = torch.stack([torch.zeros(problem.dim), torch.ones(problem.dim)]).double()
    env = environment()
    fitted = {}
    warm = WarmStartOptions(num_restarts=10, raw_samples=256)
    for fit, joint, blocks, weight in VARIANTS:
        fit_options = EULBOOptions(elbo=ELBOFitOptions(optimizer=fit), warm_start=warm)
        if fit not in fitted:
            model = EULBOModel(X, Y, 100)
            tic = time.monotonic()
            fit_elbo(model, fit_options, seed=args.seed)
            fitted[fit] = (model, time.monotonic() - tic)
        base, fit_seconds = fitted[fit]
        model = copy.deepcopy(base)
        options = fit_options.replace(
            joint=JointOptions(optimizer=joint, parameters=blocks)
        )
        tic = time.monotonic()
        candidates, value = optimize_eulbo(
            model,
            bounds,
            q=args.q,
            seed=args.seed + 1,
            refit=False,
            options=options,
            objective=EULBO(utility_weight=weight),
        )
        seconds = time.monotonic() - tic
        info = model.last_optimization
        row = {
            "n": args.n,
            "q": args.q,
            "seed": args.seed,
            "elbo_fit": fit,
            "joint_optimizer": joint,
            "joint_parameters": blocks,
            "utility_weight": weight,
            "fit_seconds": fit_seconds,
            "eulbo_before": info["warm_start_value"],
            "eulbo_after": value.item(),
            "utility_before": info["warm_start_utility"],
            "utility_after": info["utility"],
            "moved_max": info["moved"],
            "steps": info["steps"],
            "noise_before": base.likelihood.noise.item(),
            "noise_after": model.likelihood.noise.item(),
            "seconds": seconds,
            "environment": env,
        }
        append_csv_row(args.output, row)
        print(
            f"fit {fit:<5} joint {joint:<5} {blocks:<11} weight {weight}: EULBO "
            f"{row['eulbo_before']:.2f} -> {row['eulbo_after']:.2f}, utility "
            f"{row['utility_before']:.3f} -> {row['utility_after']:.3f}, moved "
            f"{row['moved_max']:.3f}, {row['steps']} steps, {seconds:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
