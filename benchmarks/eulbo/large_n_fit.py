r"""How well does ``fit_elbo`` fit above ``lbfgs_max_n``? Adam against L-BFGS.

Above ``EULBOOptions.lbfgs_max_n`` (2,000 points) L-BFGS on the collapsed bound
over all the data costs ``O(n m^2)`` per iteration. This fits one fresh
``EULBOModel`` (every default but the ELBO fit's optimizer, m = 100) on ``n``
i.i.d. uniform points of the 60-D rover problem with each
``ELBOFitOptions.optimizer``:

* ``adam``: minibatch Adam with its stopping rule (the paper's optimizer, and
  ``fit_elbo``'s default above ``lbfgs_max_n`` before 0.2);
* ``auto``: the default, L-BFGS on ``lbfgs_max_n`` points drawn at random, then
  the closed-form ``q(u)`` of all the data;
* ``lbfgs``: L-BFGS on all the data (the reference).

Per variant: the fit's seconds, the full-data ELBO per datum at the model's own
``q(u)`` (GPyTorch's ``VariationalELBO``), the collapsed bound (the ELBO at the
optimal ``q(u)`` for the model's inducing points and hyperparameters), and the
RMSE and mean negative log predictive density of 2,000 held-out points (original
units). One thread; rows are appended to the output CSV as each fit finishes.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/large_n_fit.py --ns 5000,10000 \
        --output benchmarks/eulbo/results/converged-fit/large_n_fit.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time

FIELDS = ["n", "variant", "seconds", "elbo", "collapsed_elbo", "test_rmse", "test_nlpd",
          "fit_steps", "fit_rows"]  # fmt: skip


def fit(variant: str, X, Y, seed: int):
    import torch

    from botorch_ext.eulbo import ELBOFitOptions, EULBOModel, EULBOOptions, fit_elbo

    torch.manual_seed(seed)
    options = EULBOOptions(elbo=ELBOFitOptions(optimizer=variant))
    model = EULBOModel(X, Y, num_inducing_points=100)
    tic = time.perf_counter()
    fit_elbo(model, options, seed=seed)
    model.eval()
    return model, time.perf_counter() - tic


def measure(model, X_test, Y_test) -> dict:
    import torch

    from botorch_ext.eulbo import EULBO
    from botorch_ext.eulbo.collapsed import collapsed_elbo

    objective = EULBO()
    with torch.no_grad():
        value = objective.elbo(model, model.train_X_full, model.train_Y_std).item()
        elbo = objective.per_datum(model, value)
        post = model.posterior(X_test, observation_noise=True)
        mean, var = post.mean.squeeze(-1), post.variance.squeeze(-1)
        y = Y_test.squeeze(-1)
        rmse = (mean - y).pow(2).mean().sqrt().item()
        nlpd = (0.5 * (torch.log(2 * math.pi * var) + (y - mean) ** 2 / var)).mean()
        model.train()
        collapsed = collapsed_elbo(model).item()
        model.eval()
    return {"elbo": elbo, "collapsed_elbo": collapsed, "test_rmse": rmse,
            "test_nlpd": nlpd.item()}  # fmt: skip


def main() -> None:
    import torch

    from botorch_ext.runner.problems import get_problem

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", default="5000,10000")
    p.add_argument("--variants", default="adam,auto,lbfgs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    problem = get_problem("rover")
    new = not os.path.exists(args.output)
    with open(args.output, "a", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        if new:
            writer.writeheader()
        for n in (int(v) for v in args.ns.split(",")):
            gen = torch.Generator().manual_seed(args.seed)
            X = torch.rand(n + 2000, problem.dim, generator=gen, dtype=torch.double)
            X = problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * X
            Y = -problem(X).unsqueeze(-1)
            for variant in args.variants.split(","):
                model, seconds = fit(variant, X[:n], Y[:n], args.seed)
                row = {"n": n, "variant": variant, "seconds": round(seconds, 2)}
                row |= measure(model, X[n:], Y[n:])
                row |= {"fit_steps": model.last_fit.get("steps"),
                        "fit_rows": model.last_fit.get("rows", n)}  # fmt: skip
                writer.writerow(row)
                handle.flush()
                print(row, flush=True)


if __name__ == "__main__":
    main()
