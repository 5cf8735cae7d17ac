r"""Where a stored SVGP run's fitted noise comes from: its data or its method.

For each stored run (a folder with the runner's ``results.csv``) and each ``n`` in
``--ns``, the script refits, from scratch and on the run's first ``n`` points
(Hartmann6 values in the loop's maximization sign), two models and records their
noise variance and median lengthscale on the standardized scale:

* an exact ``SingleTaskGP`` with BoTorch's defaults, fitted by
  ``fit_gpytorch_mll`` (MAP; the ``qlogei`` model), the oracle for "how much noise
  does a well-fitted GP want on these points";
* an ``EULBOModel`` with ``m`` inducing points fitted by ``fit_elbo`` (the default
  fit: L-BFGS on the collapsed bound), with no state carried over and no joint
  EULBO phase.

Beside them it prints the noise that the run itself logged at that step
(``model_noise``; for EULBO methods the state after the joint phase). If the refit
SVGP and the exact GP reproduce the run's noise, the joint phase did not cause it.

A run may also be a checkpoint of ``msweep.py --checkpoint`` (a ``.pt`` file): then
the models are refitted on the points its last step's model saw, the SVGP with that
run's kernel, settings and number of inducing points, and the logged noise is that
model's after its step (``--ns`` does not apply).

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/noise_check.py \
        benchmarks/eulbo/results/converged-fit/hartmann6/eulbo-kg-s{0,1,2} \
        --ns 150,200 \
        --output benchmarks/eulbo/results/converged-fit/noise_check.csv
    OMP_NUM_THREADS=1 python benchmarks/eulbo/noise_check.py \
        checkpoints/hartmann6-eulbo-kg-m50-s*-init100-q1.pt --output noise_kg.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import warnings

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.eulbo import EULBOModel, fit_elbo

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
from common import append_csv_row, environment  # noqa: E402


def load_run(folder: str) -> tuple[torch.Tensor, torch.Tensor, list[dict]]:
    with open(os.path.join(folder, "results.csv")) as fh:
        rows = list(csv.DictReader(fh))
    d = int(rows[0]["dim"])
    X = torch.tensor([[float(r[f"x{i}"]) for i in range(d)] for r in rows])
    # The runner stores values in the problem's minimization sign; the loop
    # maximizes their negative.
    Y = -torch.tensor([[float(r["value"])] for r in rows])
    return X.double(), Y.double(), rows


def fit_row(run: str, n: int, logged, gp, svgp, env: str) -> dict:
    r"""One output row: the logged noise beside the exact GP's and the SVGP's refit."""
    return {
        "run": run,
        "n": n,
        "logged_noise": logged,
        "exact_noise": gp.likelihood.noise.item(),
        "exact_lengthscale": gp.covar_module.lengthscale.median().item(),
        "svgp_noise": svgp.likelihood.noise.item(),
        "svgp_lengthscale": svgp.model.covar_module.lengthscale.median().item(),
        "svgp_elbo": svgp.last_fit.get("elbo"),
        "environment": env,
    }


def load_checkpoint(path: str) -> tuple[torch.Tensor, torch.Tensor, object]:
    r"""The points and values an ``msweep.py`` run's last step saw, and the step."""
    state = torch.load(path, weights_only=False)
    step = state["step"]
    n = step.n_seen
    return state["X"][:n], state["Y"][:n], step


def refit_checkpoint(path: str, env: str, output: str) -> None:
    X, Y, step = load_checkpoint(path)
    gp = SingleTaskGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    logged = step.previous
    m = logged.model.variational_strategy.inducing_points.shape[-2]
    kwargs = dict(step.model_kwargs)
    if step.kernel is not None:
        kwargs["covar_module"] = step.kernel(X.shape[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svgp = EULBOModel(X, Y, m, **kwargs)
        fit_elbo(svgp, step.options, step.objective)
    name = os.path.basename(path).split("-init")[0]
    run = name.split("-", 1)[1]  # METHOD-mM-sSEED
    row = fit_row(run, X.shape[0], logged.likelihood.noise.item(), gp, svgp, env)
    append_csv_row(output, row)
    print(
        f"{row['run']:<24} n {row['n']}: logged {row['logged_noise']:.4f}  "
        f"exact GP {row['exact_noise']:.4f}  SVGP refit {row['svgp_noise']:.4f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--ns", default="150,200")
    parser.add_argument("--num-inducing-points", type=int, default=100)
    parser.add_argument(
        "--output", default=os.path.join(HERE, "results/converged-fit/noise_check.csv")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = environment()
    for folder in args.runs:
        if folder.endswith(".pt"):
            refit_checkpoint(folder, env, args.output)
            continue
        X, Y, rows = load_run(folder)
        for n in [int(v) for v in args.ns.split(",")]:
            if n > len(rows):
                continue
            gp = SingleTaskGP(X[:n], Y[:n])
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                svgp = EULBOModel(X[:n], Y[:n], args.num_inducing_points)
                fit_elbo(svgp)
            # Row n - 1 is the evaluation chosen by the model fitted on n - 1
            # points; the model fitted on n points chose row n.
            logged = rows[n]["model_noise"] if n < len(rows) else ""
            run = os.path.basename(folder.rstrip("/"))
            row = fit_row(run, n, logged, gp, svgp, env)
            append_csv_row(args.output, row)
            print(
                f"{row['run']:<24} n {n}: logged {float(logged or 'nan'):.4f}  "
                f"exact GP {row['exact_noise']:.4f}  SVGP refit "
                f"{row['svgp_noise']:.4f}",
                flush=True,
            )
    summarize(args.output)


def summarize(path: str) -> None:
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        method = r["run"].rsplit("-s", 1)[0]
        groups.setdefault((method, r["n"]), []).append(r)
    print("| method | n | runs | logged noise | exact GP noise | SVGP refit noise |")
    print("|---|---|---|---|---|---|")

    def med(group, key):
        vals = [float(r[key]) for r in group if r[key] not in ("", None)]
        return f"{statistics.median(vals):.4f}" if vals else ""

    for (method, n), group in sorted(groups.items()):
        print(
            f"| {method} | {n} | {len(group)} | {med(group, 'logged_noise')} | "
            f"{med(group, 'exact_noise')} | {med(group, 'svgp_noise')} |"
        )


if __name__ == "__main__":
    main()
