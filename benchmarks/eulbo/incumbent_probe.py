r"""Why a stored ``elbo-svgp`` run proposes near-replicates late in the run.

For each stored run (a folder with the runner's ``results.csv`` of an
``elbo-svgp*`` run; the method's ``EULBOOptions`` and model arguments are
used) the script replays the run's SVGP state
exactly as the runner's loop built it (the first model on the initial design,
then ``carry_over`` and ``fit_elbo`` with the loop's per-iteration seed on each
prefix of the stored points), and checks at ``--checkpoints`` that the replayed
fit reproduces the logged noise. At each checkpoint it records:

* the incumbent ``max y`` and the SVGP's posterior mean at the observed points
  (its maximum, and its value at the incumbent): a mean above ``max y`` that the
  data cannot pull down is what makes EI's incumbent ``max y`` propose
  near-replicates;
* the posterior standard deviation (latent, original units) at the incumbent
  and at each proposal: a replicate that does not shrink it keeps EI there;
* the next point of the run's acquisition (``qLogExpectedImprovement`` with
  ``best_f = max y``, the runner's ``elbo-svgp``) and of
  ``qLogNoisyExpectedImprovement`` on the same model (the exact-GP ``qlogei``
  baseline's acquisition, whose incumbent is the model's own value at the
  observed points), both with the run's optimizer settings (10 restarts, 256 raw
  samples): the true value of each proposal and its distance to the nearest
  observed point.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/incumbent_probe.py \
        benchmarks/eulbo/results/converged-fit/hartmann6-300/elbo-svgp-lbfgs-s{0,2,4} \
        --checkpoints 200,250,290 \
        --output benchmarks/eulbo/results/converged-fit/incumbent_probe.csv
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import sys
import warnings

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.optim import optimize_acqf

from botorch_ext.eulbo import EULBO, EULBOModel, EULBOOptions, fit_elbo
from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import iteration_seed
from botorch_ext.runner.problems import get_problem
from botorch_ext.runner.turbo import maximize_qlogei

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
from common import append_csv_row, environment  # noqa: E402
from noise_check import load_run  # noqa: E402


class _Options:
    num_restarts = 10
    raw_samples = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--checkpoints", default="200,250,290")
    parser.add_argument("--n-init", type=int, default=100)
    parser.add_argument("--inducing", type=int, default=100)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(environment())
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    for folder in args.runs:
        X, Y, rows = load_run(folder)
        problem = get_problem(rows[0]["problem"], int(rows[0]["dim"]))
        bounds = problem.bounds.to(X)
        seed = int(rows[0]["seed"])
        model = None
        for n in range(args.n_init, checkpoints[-1] + 1):
            Xn, Yn = X[:n], Y[:n]
            seed_i = iteration_seed(seed, Xn)
            torch.manual_seed(seed_i)
            if model is None:
                # The run's own method: its options, objective and model arguments.
                method = get_method(rows[0]["method"])
                base = method.options or EULBOOptions()
                options = base.replace(
                    warm_start=dataclasses.replace(
                        base.warm_start, num_restarts=10, raw_samples=256
                    )
                )
                objective = method.objective or EULBO()
                model = EULBOModel(
                    Xn,
                    Yn,
                    num_inducing_points=args.inducing,
                    **copy.deepcopy(method.model_kwargs),
                )
            else:
                model = model.carry_over(Xn, Yn)
            fit_elbo(model, options, objective, seed=seed_i)
            if n not in checkpoints:
                continue
            logged = float(rows[n]["model_noise"])  # the row proposed from n points
            noise = model.likelihood.noise.item()
            with torch.no_grad():
                mean = model.posterior(Xn).mean.squeeze(-1)
            incumbent = int(Yn.argmax())
            torch.manual_seed(seed_i)
            x_ei = maximize_qlogei(model, Yn, bounds, 1, _Options)
            torch.manual_seed(seed_i)
            acqf = qLogNoisyExpectedImprovement(model, X_baseline=Xn)
            x_nei, _ = optimize_acqf(
                acqf, bounds=bounds, q=1, num_restarts=10, raw_samples=256
            )
            row = {
                "run": os.path.basename(folder.rstrip("/")),
                "n": n,
                "noise": noise,
                "logged_noise": logged,
                "max_y": Yn.max().item(),
                "mean_at_incumbent": mean[incumbent].item(),
                "max_mean": mean.max().item(),
                "lengthscales": ";".join(
                    f"{v:.3g}" for v in model.diagnostics()["lengthscales"]
                ),
            }
            with torch.no_grad():
                latent = model.posterior(Xn[incumbent : incumbent + 1])
                row["sd_at_incumbent"] = latent.variance.sqrt().item()
            for name, x in (("ei", x_ei), ("nei", x_nei)):
                x = x.detach().to(X)
                with torch.no_grad():
                    post = model.posterior(x)
                row[f"mean_{name}"] = post.mean.item()
                row[f"sd_{name}"] = post.variance.sqrt().item()
                row[f"f_{name}"] = problem(x).item()
                row[f"dist_{name}"] = (Xn - x).norm(dim=-1).min().item()
            row["f_run_next"] = float(rows[n]["value"])
            print(row, flush=True)
            if args.output:
                append_csv_row(args.output, row)


if __name__ == "__main__":
    main()
