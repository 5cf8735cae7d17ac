r"""BOCK variants for keeping a directional term alive, one BO run each.

Each variant is a ``BOCKKernel`` configuration run through the runner's own
loop (``run_bo``) with exactly the pipeline of ``benchmarks/bock/grid.sh``: qLogNEI
on a ``SingleTaskGP`` fitted by MAP, centre + 9 Sobol initial points, q = 1,
Bilog outcomes, 5 restarts and 256 raw samples. Only the kernel differs. Rows
(with the fitted angular weights and warp per iteration) are appended to
``OUT/<problem><dim>/<variant>-s<seed>/results.csv`` as they are evaluated.

Variants:
    continuous: the continuous center rule, no floor.
    floor05: continuous, linear weight ``c_1 >= 0.05``.
    floor50: continuous, linear weight ``c_1 >= 0.5``.
    floor-both: continuous, ``c_0 >= 0.05`` and ``c_1 >= 0.05``: also keeps the fit
        off the ``c = e_1`` vertex, where the center is uncorrelated with every
        other point.
    logit-prior: continuous, ``raw_angular_weights ~ N(0, 2^2)`` independently,
        the prior on the log weights in the authors' code (``SphereRadialKernel``:
        ``smp.normal(log_amp, 0, 2)`` on the constant and the powers).
    direction: the old center rule.

Usage::

    python benchmarks/bock/variants.py --problem rosenbrock --dim 100 \
        --variants floor05,floor50 --seeds 0,1 --budget 60 [--out DIR]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from gpytorch.priors import NormalPrior

from botorch_ext.kernels import BOCKKernel
from botorch_ext.runner.acquisition import acquisition_method
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.methods import register_method
from botorch_ext.runner.options import MethodOptions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import append_csv_row


def _variant(name: str, d: int):
    if name == "continuous":
        return BOCKKernel(center_rule="continuous")
    if name == "floor05":
        return BOCKKernel(angular_weights_floor=[0.0, 0.05, 0.0, 0.0])
    if name == "floor50":
        return BOCKKernel(angular_weights_floor=[0.0, 0.5, 0.0, 0.0])
    if name == "floor-both":
        return BOCKKernel(angular_weights_floor=[0.05, 0.05, 0.0, 0.0])
    if name == "logit-prior":
        k = BOCKKernel(center_rule="continuous")
        k.register_prior(
            "raw_angular_weights_prior",
            NormalPrior(0.0, 2.0),
            "raw_angular_weights",
        )
        return k
    if name == "direction":
        return BOCKKernel(center_rule="direction")
    raise ValueError(f"unknown variant {name!r}")


def _variant_kernel(name: str, d: int):
    # The (covar_module, input_transform) of a variant, as fit_model takes it.
    return _variant(name, d), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="rosenbrock")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--variants", default="floor05,floor50")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--budget", type=int, default=60)
    parser.add_argument(
        "--out", default="benchmarks/bock/results/continuous-rule/variants"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    for variant in args.variants.split(","):
        name = f"bock-{variant}"
        kernel = functools.partial(_variant_kernel, variant)
        register_method(
            name,
            acquisition_method(qLogNoisyExpectedImprovement, kernel=kernel),
            replace=True,
        )
        for seed in map(int, args.seeds.split(",")):
            path = os.path.join(
                args.out,
                f"{args.problem}{args.dim}",
                f"{variant}-s{seed}",
                "results.csv",
            )
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if os.path.exists(path):
                print(f"exists, skipped: {path}")
                continue
            config = RunConfig(
                problem=args.problem,
                method=name,
                budget=args.budget,
                dim=args.dim,
                n_init=10,
                q=1,
                seed=seed,
                init="center",
                options=MethodOptions(
                    outcome_transform="bilog", num_restarts=5, raw_samples=256
                ),
            )
            rows = run_bo(config, on_row=lambda row, p=path: append_csv_row(p, row))
            print(variant, seed, rows[-1]["best_value"], flush=True)


if __name__ == "__main__":
    main()
