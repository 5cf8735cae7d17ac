r"""How well does ``fit_elbo`` fit? Against an exact GP and a converged ELBO.

Noise-free Hartmann6 (maximized, as the runner models it), ``n`` i.i.d. uniform
points (seed 0), an ``EULBOModel`` with m = 100 fitted four ways:

* ``prior q(u), Table 1``: the old default (``q(u)`` at the prior,
  the paper's 30-epoch / patience-3 rule);
* ``closed-form q(u), Table 1``: the closed-form start with the Table-1 rule;
* ``closed-form q(u), default``: the package's default (bounded-step rule);
* ``L-BFGS (converged)``: the same ELBO maximized on all data by scipy's L-BFGS-B
  (3000 iterations from the default start), the reference optimum;

next to an exact ``SingleTaskGP`` (BoTorch defaults). Printed per fit: the per-datum
ELBO, the noise variance (standardized scale), the median lengthscale, the RMSE of
the posterior mean on 2000 held-out uniform points, Adam steps and seconds.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/fit_check.py [--ns 100,200] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from scipy.optimize import minimize

from botorch_ext.eulbo import EULBOModel, EULBOOptions, fit_elbo

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment


def full_elbo(model: EULBOModel) -> float:
    model.train()
    n = model.train_X_full.shape[-2]
    mll = VariationalELBO(model.likelihood, model.model, num_data=n)
    with torch.no_grad():
        value = mll(model.model(model.train_X_full), model.train_Y_std.squeeze(-1))
    model.eval()
    return value.item()


def lbfgs(model: EULBOModel, maxiter: int) -> int:
    model.train()
    n = model.train_X_full.shape[-2]
    mll = VariationalELBO(model.likelihood, model.model, num_data=n)
    params = [p for p in model.parameters() if p.requires_grad]

    def value_and_grad(v: np.ndarray):
        i = 0
        for p in params:
            k = p.numel()
            p.data.copy_(torch.as_tensor(v[i : i + k]).view_as(p))
            i += k
            p.grad = None
        loss = -mll(model.model(model.train_X_full), model.train_Y_std.squeeze(-1))
        loss.backward()
        grad = np.concatenate([p.grad.reshape(-1).numpy() for p in params])
        return loss.item(), grad

    v0 = np.concatenate([p.detach().reshape(-1).numpy() for p in params])
    res = minimize(
        value_and_grad, v0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter}
    )
    value_and_grad(res.x)
    model.eval()
    return res.nit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="100,200")
    parser.add_argument("--quick", action="store_true", help="n = 40, 50 iterations")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ns = [40] if args.quick else [int(v) for v in args.ns.split(",")]
    maxiter = 50 if args.quick else 3000
    f = Hartmann(dim=6)
    print(environment())
    print(
        "| n | fit | ELBO / datum | noise | median lengthscale | test RMSE | "
        "Adam steps | s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in ns:
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(n, 6, generator=gen, dtype=torch.double)
        Y = -f(X).unsqueeze(-1)
        X_test = torch.rand(2000, 6, generator=gen, dtype=torch.double)
        Y_test = -f(X_test).unsqueeze(-1)

        def rmse(model, X_test=X_test, Y_test=Y_test) -> float:
            with torch.no_grad():
                return (
                    (model.posterior(X_test).mean - Y_test).pow(2).mean().sqrt().item()
                )

        t0 = time.perf_counter()
        gp = SingleTaskGP(X, Y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        print(
            f"| {n} | exact GP (MAP) | | {gp.likelihood.noise.item():.2g} | "
            f"{gp.covar_module.lengthscale.median().item():.2f} | {rmse(gp):.3f} | | "
            f"{time.perf_counter() - t0:.1f} |"
        )
        for name in (
            "prior q(u), Table 1",
            "closed-form q(u), Table 1",
            "closed-form q(u), default",
            "L-BFGS (converged)",
        ):
            t0 = time.perf_counter()
            options = EULBOOptions() if "default" in name else EULBOOptions.table1()
            model = EULBOModel(X, Y, num_inducing_points=100)
            steps = ""
            if name.startswith("prior"):
                dist = model.model.variational_strategy._variational_distribution
                with torch.no_grad():
                    dist.variational_mean.zero_()
                    dist.chol_variational_covar.copy_(
                        torch.eye(dist.variational_mean.shape[-1], dtype=X.dtype)
                    )
            if name.startswith("L-BFGS"):
                steps = f"({lbfgs(model, maxiter)} L-BFGS iterations)"
            else:
                fit_elbo(model, options, seed=0)
                steps = model.last_fit["steps"]
            print(
                f"| {n} | {name} | {full_elbo(model):.3f} | "
                f"{model.likelihood.noise.item():.2g} | "
                f"{model.model.covar_module.lengthscale.median().item():.2f} | "
                f"{rmse(model):.3f} | {steps} | {time.perf_counter() - t0:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
