r"""Marginal-likelihood evaluations of one MAP fit, per kernel and L-BFGS-B ``ftol``.

The cost of the runner's BOCK step is mostly its MAP fit, and the fit's cost is
mostly how many times L-BFGS-B evaluates the marginal likelihood. For each data
set (Rosenbrock-``d``, the cube's center plus scrambled Sobol points, as
``iteration_time.py`` builds them; ``n`` points, Sobol seed ``s``) this fits each
configuration with the runner's ``fit_model`` (``SingleTaskGP``, Bilog +
Standardize, ``fit_gpytorch_mll``) and records the evaluations (calls of the
model's ``forward`` during the fit), the CPU seconds and the fitted log marginal
likelihood per point (higher is better; the same objective for every
parameterization of a kernel).

A configuration is ``KERNEL@FTOL``: a name in the runner's ``KERNELS`` (e.g.
``bock``, ``matern-scaled``) or ``bock-square`` (``bock`` with ``"square"``
angular weights, ``benchmarks/bock/kernels.py``), and L-BFGS-B's ``ftol``
(``scipy`` for SciPy's default), e.g. ``bock@1e-6``.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bock/fit_evaluations.py \
        --configs bock@1e-6,bock-square@1e-6,bock-square@1e-5,matern-scaled@scipy
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.mlls import ExactMarginalLogLikelihood

from benchmarks.bock.kernels import bock_square_kernel
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.kernels import KERNELS
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment, write_csv


def rosenbrock_data(d: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Rosenbrock-``d`` at the cube's center plus ``n - 1`` scrambled Sobol points.

    The data sets of ``iteration_time.py``; ``Y`` in the runner's maximization sign.
    """
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=seed).squeeze(-2)
    X[0] = 0.5
    return X, -get_problem("rosenbrock", d)(X).reshape(n, 1)


def parse_config(config: str) -> tuple[str, dict | None]:
    r"""``"KERNEL@FTOL"`` -> ``(kernel, fit_options)``; ``FTOL`` ``scipy``: None."""
    kernel, sep, ftol = config.partition("@")
    if not sep or not kernel:
        raise ValueError(
            f"--configs entries are KERNEL@FTOL (e.g. bock@1e-6), got {config!r}."
        )
    if kernel not in KERNELS and kernel != "bock-square":
        raise ValueError(
            f"--configs: unknown kernel {kernel!r} in {config!r}; choose from "
            f"{', '.join([*KERNELS, 'bock-square'])}."
        )
    if ftol == "scipy":
        return kernel, None
    try:
        return kernel, {"ftol": float(ftol)}
    except ValueError:
        raise ValueError(
            f"--configs: FTOL must be a number or 'scipy', got {ftol!r} in {config!r}."
        ) from None


def fit_once(X, Y, kernel: str, fit_options: dict | None) -> dict:
    r"""Fit one model; its evaluations, CPU seconds and per-point log likelihood."""
    count = [0]
    real_forward = ExactMarginalLogLikelihood.forward

    def counted(self, *args, **kwargs):
        count[0] += 1
        return real_forward(self, *args, **kwargs)

    ExactMarginalLogLikelihood.forward = counted
    try:
        start = time.process_time()
        model = fit_model(
            X,
            Y,
            MethodOptions(outcome_transform="bilog"),
            kernel=bock_square_kernel if kernel == "bock-square" else kernel,
            fit_options=fit_options,
        )
        seconds = time.process_time() - start
    finally:
        ExactMarginalLogLikelihood.forward = real_forward
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        value = mll(model(*model.train_inputs), model.train_targets).item()
    return {"evaluations": count[0], "cpu_s": seconds, "mll_per_point": value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--ns", default="20,50,100,150")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--configs", default="bock@1e-6,bock-square@1e-6,bock-square@1e-5"
    )
    parser.add_argument("--output", default=None, help="CSV of the rows")
    args = parser.parse_args()
    configs = [(c, *parse_config(c)) for c in args.configs.split(",")]
    torch.set_num_threads(1)
    print(environment(), flush=True)
    d = args.dim
    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        for seed in (int(v) for v in args.seeds.split(",")):
            X, Y = rosenbrock_data(d, n, seed)
            for name, kernel, fit_options in configs:
                row = {"d": d, "n": n, "seed": seed, "config": name}
                row |= fit_once(X, Y, kernel, fit_options)
                rows.append(row)
                print(row, flush=True)
    print("\nTotals over the data sets:")
    reference = [r for r in rows if r["config"] == configs[0][0]]
    for name, *_ in configs:
        mine = [r for r in rows if r["config"] == name]
        gains = [
            a["mll_per_point"] - b["mll_per_point"]
            for a, b in zip(mine, reference, strict=True)
        ]
        print(
            f"  {name}: {sum(r['evaluations'] for r in mine)} evaluations, "
            f"{sum(r['cpu_s'] for r in mine):.2f} CPU s; log likelihood per point "
            f"{sum(gains) / len(gains):+.5f} on average against {configs[0][0]} "
            f"(higher by over 1e-4 on {sum(g > 1e-4 for g in gains)}, lower on "
            f"{sum(g < -1e-4 for g in gains)} of {len(gains)})",
            flush=True,
        )
    if args.output:
        write_csv(args.output, rows)


if __name__ == "__main__":
    main()
