r"""Do transform-enforced boxes change a MAP fit? BOCK and Matern on Rosenbrock-20.

``BOCKKernel``'s warp exponents ``alpha``, ``beta`` and
its radial lengthscale, and the runner's Matern lengthscale floor, were bounded by
constraints without a transform (``transform=None``): only ``fit_gpytorch_mll``'s
L-BFGS-B bounds kept them in their box, and Adam or SGLD stepped through. This
script fits the runner's models (``fit_model``: ``SingleTaskGP``, MAP by
``fit_gpytorch_mll``) on the BOCK Table-1 problem's data, Rosenbrock-20 with the
runner's ``center`` initial design (the cube's centre, then scrambled Sobol
points; ``--n`` points, seeds ``--seeds``), under both outcome transforms of the
Table-1 runs, with the constraints

* ``untransformed``: as they were (``Interval``/``GreaterThan`` with
  ``transform=None``, the same boxes, started at the same values: ``alpha = beta
  = 1`` and radial lengthscale 1 for BOCK, the prior's mode for Matern);
* ``sigmoid`` (BOCK only): GPyTorch's default ``Interval`` (sigmoid transform) on
  the three boxes; ``alpha = beta = 1`` is a corner of the box, an infinite
  logit, so they start ``WARP_START_INSET`` (1e-3) of the box's width inside it;
* ``package``: the kernels as the package builds them now: BOCK's boxes are
  ``ReflectedInterval``s (identity inside the box, reflected outside; the same
  L-BFGS-B bounds and starting values as ``untransformed``), the Matern floor is
  GPyTorch's default ``GreaterThan`` (softplus transform, same starting value).

and prints the fitted hyperparameters and the MAP objective (the marginal log
likelihood plus the log priors, per datum, as ``fit_gpytorch_mll`` maximizes it)
side by side, with the largest absolute difference from ``untransformed``.
``benchmarks/runner/results/constraint_transform_fit/`` holds the output of a run on the
code before the change (where every variant was ``untransformed``) and after it.

Usage::

    python benchmarks/runner/constraint_transform_fit.py
    python benchmarks/runner/constraint_transform_fit.py --n 64 --seeds 0,1 \
        --output F.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.mlls import ExactMarginalLogLikelihood

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment

from botorch_ext.kernels import BOCKKernel
from botorch_ext.kernels.cylindrical import (
    ALPHA_BOUNDS,
    BETA_BOUNDS,
    RADIAL_LENGTHSCALE_BOUNDS,
    WARP_START_INSET,
)
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.kernels import KERNELS
from botorch_ext.runner.loop import initial_design
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem


def untransformed(kernel):
    r"""The kernel with its boxes and floors without a transform (the old behaviour).

    Args:
        kernel: A ``BOCKKernel`` or the runner's Matern kernel.

    Returns:
        The same kernel, its constraints re-registered with ``transform=None``
        and its hyperparameters at the old initial values.
    """
    if isinstance(kernel, BOCKKernel):
        for name, bounds in (("alpha", ALPHA_BOUNDS), ("beta", BETA_BOUNDS)):
            box = Interval(*bounds, transform=None)
            kernel.register_constraint(f"raw_{name}", box, replace=True)
            setattr(kernel, name, 1.0)
        radial = kernel.radial_base_kernel
        box = Interval(*RADIAL_LENGTHSCALE_BOUNDS, transform=None)
        radial.register_constraint("raw_lengthscale", box, replace=True)
        radial.lengthscale = 1.0
        return kernel
    mode = kernel.lengthscale_prior.mode
    floor = GreaterThan(2.5e-2, transform=None)
    kernel.register_constraint("raw_lengthscale", floor, replace=True)
    kernel.lengthscale = mode
    return kernel


def sigmoid(kernel):
    r"""BOCK's boxes under GPyTorch's default ``Interval`` (sigmoid transform).

    Args:
        kernel: A ``BOCKKernel``.

    Returns:
        The same kernel, its boxes re-registered with the sigmoid transform, the
        warp exponents ``WARP_START_INSET`` of their box inside 1 and the radial
        lengthscale at 1.
    """
    for name, bounds in (("alpha", ALPHA_BOUNDS), ("beta", BETA_BOUNDS)):
        box = Interval(*bounds)
        kernel.register_constraint(f"raw_{name}", box, replace=True)
        inset = WARP_START_INSET * (bounds[1] - bounds[0])
        setattr(kernel, name, min(max(1.0, bounds[0] + inset), bounds[1] - inset))
    radial = kernel.radial_base_kernel
    box = Interval(*RADIAL_LENGTHSCALE_BOUNDS, initial_value=1.0)
    radial.register_constraint("raw_lengthscale", box, replace=True)
    return kernel


#: The constraint variants, by name: kernel -> kernel (None: as built).
VARIANTS = {"untransformed": untransformed, "sigmoid": sigmoid, "package": None}


def hyperparameters(model) -> dict[str, float]:
    r"""The fitted hyperparameters (constrained values) and the MAP objective."""
    k = model.covar_module
    out = {}
    if isinstance(k, BOCKKernel):
        out["alpha"] = k.alpha.item()
        out["beta"] = k.beta.item()
        out["radial_lengthscale"] = k.radial_base_kernel.lengthscale.item()
        for p, c in enumerate(k.angular_weights.tolist()):
            out[f"c{p}"] = c
    else:
        out["lengthscale"] = k.lengthscale.item()
    out["noise"] = model.likelihood.noise.item()
    out["mean_constant"] = model.mean_module.constant.item()
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        out["map_objective"] = mll(model(*model.train_inputs), model.train_targets)
        out["map_objective"] = out["map_objective"].item()
    model.eval()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--transforms", default="bilog,standardize")
    parser.add_argument("--kernels", default="bock,matern")
    parser.add_argument("--output", default=None, help="JSON file for the rows")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(environment())
    problem = get_problem("rosenbrock", 20)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        X = initial_design(problem.dim, args.n, seed, "center")
        Y = -problem(X).reshape(-1, 1)
        for transform in args.transforms.split(","):
            options = MethodOptions(outcome_transform=transform)
            for kernel_name in args.kernels.split(","):
                fits = {}
                for variant, change in VARIANTS.items():
                    if variant == "sigmoid" and kernel_name != "bock":
                        continue
                    kernel, _ = KERNELS[kernel_name](problem.dim)
                    if change is not None:
                        kernel = change(kernel)
                    torch.manual_seed(seed)
                    fits[variant] = hyperparameters(
                        fit_model(X, Y, options, kernel=kernel)
                    )
                names = list(fits)
                print(f"\nseed {seed}, {transform}, {kernel_name}:")
                print(
                    f"  {'':>20}  "
                    + " ".join(f"{v:>14}" for v in names)
                    + "  max |diff| from untransformed"
                )
                for key in fits["package"]:
                    ref = fits["untransformed"][key]
                    values = [fits[v][key] for v in names]
                    diffs = [abs(v - ref) for v in values[1:]]
                    print(
                        f"  {key:>20}: "
                        + " ".join(f"{v:14.6g}" for v in values)
                        + "  "
                        + " ".join(f"{d:9.2e}" for d in diffs)
                    )
                rows.append(
                    {
                        "seed": seed,
                        "outcome_transform": transform,
                        "kernel": kernel_name,
                        **fits,
                    }
                )
    if args.output:
        with open(args.output, "w") as fh:
            json.dump({"environment": environment(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
