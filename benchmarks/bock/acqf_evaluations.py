r"""qLogNEI evaluations of one acquisition maximization, per kernel and search space.

At small ``n`` the runner's BOCK step is mostly ``optimize_acqf``: its batched
L-BFGS-B needs several times the evaluations on ``bock``'s model that it needs on
``matern-scaled``'s, because the maximizer sits a hair from the center, where
BOCK's warped radius ``w(rho) ~ rho^alpha`` makes the posterior mean a cusp. For
each data set (Rosenbrock-``d``, the cube's center plus scrambled Sobol points, as
``iteration_time.py`` builds them) this fits each kernel with the runner's
``fit_model`` (``bock`` with its fit tolerance), draws BoTorch's initial
conditions once (5 restarts, 256 raw samples, qLogNEI as the runner builds it) and
maximizes from them in each configuration, recording the evaluations (calls of
the acquisition's ``forward``, the raw samples' one excluded), the CPU seconds,
the maximized value and the maximizer's normalized radius ``||x - c|| / R``.

A configuration is ``FTOL`` or ``FTOL@POWER``: L-BFGS-B's ``ftol`` (``optimize_acqf``
options ``{"ftol": FTOL, "factr": None}``), and optionally a search in the
coordinates ``y`` with ``x_i = 1/2 + sign(t_i) |2 t_i|^POWER / 2``,
``t = y - 1/2``, a map of the cube onto itself that is finer near the center
(``POWER`` 1 is the identity; ``alpha`` for the fitted warp's ``1 / alpha``).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bock/acqf_evaluations.py \
        --configs 1e-6,1e-5,1e-4,1e-6@alpha,1e-6@2
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from botorch.optim.initializers import gen_batch_initial_conditions
from torch import Tensor

from benchmarks.bock.fit_evaluations import rosenbrock_data
from botorch_ext.runner.fitting import BOCK_FIT_FTOL, fit_model
from botorch_ext.runner.options import MethodOptions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment, write_csv


def parse_config(config: str) -> tuple[float, str | None]:
    r"""``"FTOL"`` or ``"FTOL@POWER"`` -> ``(ftol, power)``; power None, a number or
    ``"alpha"``."""
    ftol, sep, power = config.partition("@")
    try:
        value = float(ftol)
    except ValueError:
        raise ValueError(
            f"--configs entries are FTOL or FTOL@POWER, got {config!r}."
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"--configs: FTOL must be positive, got {config!r}.")
    if not sep:
        return value, None
    if power != "alpha":
        try:
            if not float(power) >= 1:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"--configs: POWER must be a number >= 1 or 'alpha', got {config!r}."
            ) from None
    return value, power


def to_cube(Y: Tensor, power: float) -> Tensor:
    r"""``x`` of the search coordinates ``y`` (the cube onto itself, odd about 1/2)."""
    t = Y - 0.5
    return 0.5 + 0.5 * torch.sign(t) * (2 * t.abs()).pow(power)


def from_cube(X: Tensor, power: float) -> Tensor:
    r"""The inverse of ``to_cube``."""
    t = X - 0.5
    return 0.5 + 0.5 * torch.sign(t) * (2 * t.abs()).pow(1 / power)


class Counted(AcquisitionFunction):
    r"""An acquisition function in the coordinates of ``to_cube``, counting calls."""

    def __init__(self, acqf: AcquisitionFunction, power: float) -> None:
        super().__init__(acqf.model)
        self.acqf, self.power, self.calls = acqf, power, 0

    def forward(self, X: Tensor) -> Tensor:
        r"""The acquisition at ``to_cube(X)``."""
        self.calls += 1
        return self.acqf(X if self.power == 1 else to_cube(X, self.power))


def maximize(acqf, ics: Tensor, bounds: Tensor, ftol: float, power: float) -> dict:
    r"""One ``optimize_acqf`` from the initial conditions ``ics``: its row."""
    counted = Counted(acqf, power)
    start = time.process_time()
    Y, _ = optimize_acqf(
        counted,
        bounds=bounds,
        q=1,
        num_restarts=ics.shape[0],
        batch_initial_conditions=from_cube(ics, power) if power != 1 else ics,
        options={"ftol": ftol, "factr": None},
    )
    seconds = time.process_time() - start
    X = Y if power == 1 else to_cube(Y, power)
    with torch.no_grad():
        value = acqf(X.unsqueeze(0)).item()
    d = X.shape[-1]
    radius = ((X - 0.5).norm() / (math.sqrt(d) / 2)).item()
    return {
        "evaluations": counted.calls,
        "cpu_s": seconds,
        "value": value,
        "rho": radius,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--ns", default="50,150")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--kernels", default="bock,matern-scaled")
    parser.add_argument("--configs", default="1e-6,1e-5,1e-4,1e-6@alpha,1e-6@2")
    parser.add_argument("--output", default="/tmp/acqf_evaluations.csv")
    args = parser.parse_args()
    configs = [parse_config(c) for c in args.configs.split(",")]
    torch.set_num_threads(1)
    print(environment())
    d = args.dim
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    options = MethodOptions(outcome_transform="bilog")
    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        for seed in (int(v) for v in args.seeds.split(",")):
            X, Y = rosenbrock_data(d, n, seed)
            for kernel in args.kernels.split(","):
                fit = {"ftol": BOCK_FIT_FTOL} if kernel == "bock" else None
                model = fit_model(X, Y, options, kernel=kernel, fit_options=fit)
                acqf = qLogNoisyExpectedImprovement(model, X_baseline=X)
                torch.manual_seed(seed)
                ics = gen_batch_initial_conditions(
                    acqf, bounds, q=1, num_restarts=5, raw_samples=256
                )
                alpha = getattr(model.covar_module, "alpha", None)
                for ftol, power in configs:
                    if power == "alpha" and alpha is None:
                        continue
                    p = 1.0 if power is None else None
                    p = p or (1 / alpha.item() if power == "alpha" else float(power))
                    row = {"n": n, "seed": seed, "kernel": kernel, "ftol": ftol}
                    row |= {"power": p, **maximize(acqf, ics, bounds, ftol, p)}
                    rows.append(row)
                    print(row, flush=True)
    write_csv(args.output, rows)


if __name__ == "__main__":
    main()
