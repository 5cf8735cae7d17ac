r"""Which SVGP kernels fit a stored run's data sanely, step by step.

For a stored runner run (a folder with ``results.csv`` holding the evaluated
points), the script replays the first BO steps of an ``elbo-svgp`` method (its
``SVGPMethod`` with the runner's settings: the first ``EULBOModel`` on the first
``n_1`` points, then ``carry_over`` and ``fit_elbo`` on each longer prefix) once
per kernel, and records the fitted noise variance, lengthscales and per-datum
ELBO after each step. It tells a degenerate fit (a constant plus noise: a long
lengthscale and a noise variance near 1 on standardized noise-free outcomes)
from a usable one on identical data, so the kernel is the only difference.

Kernels: ``ard`` (``EULBOModel``'s default, BoTorch's ARD RBF with its
dimension-scaled prior), ``iso`` (the authors' ``ScaleKernel(RBFKernel())``,
no priors), ``iso-prior`` (an isotropic RBF with BoTorch's dimension-scaled
prior, the runner's ``*-iso-prior`` methods), ``iso-prior-scaled`` (the same in
a ``ScaleKernel`` with a Gamma(2, 0.15) outputscale prior).

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/kernel_probe.py \
        benchmarks/eulbo/results/converged-fit/rover-iso/turbo-elbo-svgp-iso-s0 \
        --turbo --q 20 --ns 100,120,140,200 --kernels iso,iso-prior,ard \
        --output benchmarks/eulbo/results/converged-fit/kernel_probe.csv
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.priors import GammaPrior

from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.svgp import SVGPMethod

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
from ablations import iso_prior_kernel  # noqa: E402
from common import append_csv_row, environment  # noqa: E402
from noise_check import load_run  # noqa: E402

KERNELS = {
    "ard": None,
    "iso": lambda d: ScaleKernel(RBFKernel()),
    "iso-prior": iso_prior_kernel,
    "iso-prior-scaled": lambda d: ScaleKernel(
        iso_prior_kernel(d), outputscale_prior=GammaPrior(2.0, 0.15)
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--ns", default="100,120,140")
    parser.add_argument("--kernels", default="ard,iso,iso-prior")
    parser.add_argument("--turbo", action="store_true")
    parser.add_argument("--q", type=int, default=1)
    parser.add_argument("--num-inducing-points", type=int, default=100)
    parser.add_argument(
        "--output", default=os.path.join(HERE, "results/converged-fit/kernel_probe.csv")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = environment()
    ns = [int(v) for v in args.ns.split(",")]
    options = MethodOptions(
        num_restarts=10, raw_samples=256, num_inducing_points=args.num_inducing_points
    )
    for folder in args.runs:
        X, Y, _ = load_run(folder)
        d = X.shape[-1]
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).to(X)
        for name in args.kernels.split(","):
            run = SVGPMethod(None, turbo=args.turbo, kernel=KERNELS[name]).new_run()
            for n in ns:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    proposal = run.propose(X[:n], Y[:n], bounds, args.q, 0, options)
                diag = proposal.diagnostics
                ls = diag["lengthscales"]
                row = {
                    "run": folder,
                    "kernel": name,
                    "n": n,
                    "noise": diag["noise"],
                    "elbo": diag["elbo"],
                    "lengthscale_min": min(ls),
                    "lengthscale_median": sorted(ls)[len(ls) // 2],
                    "lengthscale_max": max(ls),
                    "environment": env,
                }
                append_csv_row(args.output, row)
                print(
                    f"{os.path.basename(folder)} {name} n={n} "
                    f"noise={diag['noise']:.4f} "
                    f"lengthscales {min(ls):.3g}-{max(ls):.3g}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
