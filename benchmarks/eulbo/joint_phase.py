r"""What the EULBO's joint phase does, step by step, from identical states.

An ``elbo-svgp`` BO loop on noise-free Hartmann6 in the paper's setting (100 uniform
points, q = 1, m = 100, Table-1 step sizes and ``optimize_acqf`` budget, the
carried state and default stopping rule of ``EULBOModel``) drives the data. At every
step, a deep copy of the step's ELBO-fitted model (before acquisition) runs the
EULBO phase of ``optimize_eulbo`` for each variant, so every variant starts from the
same ``w`` and the same warm-start candidate (the qLogEI maximizer under the ELBO
fit). For each step and variant the script records:

* ``f_warm`` and ``f_eulbo``: Hartmann6 (minimization sign) at the warm-start and
  at the EULBO candidate, and ``moved``, the distance between the two;
* ``exact_logei_warm``/``exact_logei_eulbo``: the log EI of an exact
  ``SingleTaskGP`` (BoTorch defaults, fitted on the same data) at both points;
* ``noise_before/after`` and ``ls_change`` (largest relative lengthscale change),
  ``dm`` (norm of the change of the whitened variational mean): how far ``w``
  moved in the joint phase;
* ``u_warm``/``u_eulbo``: the expected log utility under the model before and
  after the joint phase, and ``eulbo_steps``.

Rows are appended to the CSV as they are computed. ``--summary`` prints, per
variant, the mean (± s.e.) paired differences ``f_eulbo - f_warm`` (negative: the
EULBO candidate is better) and ``exact_logei_eulbo - exact_logei_warm``, how often
the EULBO candidate is better, and the mean distance moved.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/joint_phase.py --seeds 0,1,2 \
        --steps 30 [--output benchmarks/eulbo/results/adam-fit/joint_phase.csv]
    python benchmarks/eulbo/joint_phase.py --summary [--output ...]
    # section 7.8: the Adam and L-BFGS joint phases from the converged ELBO fit
    OMP_NUM_THREADS=1 python benchmarks/eulbo/joint_phase.py --seeds 0,1 --steps 15 \
        --utility ei \
        --variants "default (steps rule),L-BFGS joint,L-BFGS joint on q(u)" \
        --output benchmarks/eulbo/results/converged-fit/joint_phase.csv
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import sys
import tempfile
import time
import warnings

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.eulbo import (
    EULBO,
    EULBOOptions,
    JointOptions,
    WarmStartOptions,
    optimize_eulbo,
)
from botorch_ext.optim import ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.loop import initial_design
from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
from common import append_csv_row, environment  # noqa: E402

_WARM = WarmStartOptions(num_restarts=10, raw_samples=256)
#: The options of the ELBO-SVGP step that the variants start from.
_BASE = EULBOOptions(warm_start=_WARM)
#: name -> the joint phase's (options, objective) on the copy of the fitted model.
VARIANTS = {
    "default (steps rule)": (_BASE, EULBO()),
    "Table-1 rule": (EULBOOptions.table1(warm_start=_WARM), EULBO()),
    "mean (authors' code)": (_BASE, EULBO(elbo_scale="mean")),
    "sum, w=10": (_BASE, EULBO(utility_weight=10.0)),
    # Section 7.8: the joint phase solved by full-batch L-BFGS-B, all of w or q(u).
    "L-BFGS joint": (_BASE.replace(joint=JointOptions(optimizer="lbfgs")), EULBO()),
    "L-BFGS joint on q(u)": (
        _BASE.replace(
            joint=JointOptions(optimizer="lbfgs", parameters=("variational",))
        ),
        EULBO(),
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--n-init", type=int, default=100)
    parser.add_argument(
        "--output", default=os.path.join(HERE, "results/adam-fit/joint_phase.csv")
    )
    parser.add_argument("--summary", action="store_true")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated subset of: " + ", ".join(VARIANTS),
    )
    parser.add_argument("--utility", default="ei", choices=("ei", "kg"))
    parser.add_argument(
        "--quick", action="store_true", help="smoke mode: seed 0, one step, 30 points"
    )
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.steps, args.n_init = "0", 1, 30
        # A smoke run never appends to the recorded results.
        args.output = os.path.join(tempfile.gettempdir(), "eulbo_joint_phase_quick.csv")
    if args.summary:
        summarize(args.output)
        return
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", OptimizationWarning)
    ignore_optimize_acqf_retry_warnings()
    problem = get_problem("hartmann6")
    options = MethodOptions(num_restarts=10, raw_samples=256, num_inducing_points=100)
    env = environment()
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    for seed in [int(s) for s in args.seeds.split(",")]:
        X = initial_design(6, args.n_init, seed, "uniform")
        Y = -problem(X).unsqueeze(-1)
        run = get_method("elbo-svgp").new_run()
        for step in range(args.steps):
            # The ELBO-SVGP step drives the data; its model is fitted first.
            cand = run.propose(X, Y, problem.bounds, 1, seed, options).candidates
            base = run.previous  # fitted by fit_elbo, queried by qLogEI
            gp = SingleTaskGP(X, Y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            exact = LogExpectedImprovement(gp, best_f=Y.max())
            for name in args.variants.split(","):
                variant_options, objective = VARIANTS[name]
                model = copy.deepcopy(base)
                # Skip the ELBO fit (already converged in `base`), so the joint
                # phase starts exactly from the ELBO-SVGP state.
                before = copy.deepcopy(model)
                torch.manual_seed(seed * 100_003 + len(X))
                tic = time.monotonic()
                x_eulbo, _ = optimize_eulbo(
                    model,
                    problem.bounds,
                    q=1,
                    utility=args.utility,
                    seed=seed * 100_003 + len(X),
                    refit=False,
                    options=variant_options,
                    objective=objective,
                )
                seconds = time.monotonic() - tic
                info = model.last_optimization
                x_warm = info["warm_start_candidates"]
                vd0 = before.model.variational_strategy._variational_distribution
                vd1 = model.model.variational_strategy._variational_distribution
                ls0 = before.model.covar_module.lengthscale
                ls1 = model.model.covar_module.lengthscale
                with torch.no_grad():
                    row = {
                        "seed": seed,
                        "step": step,
                        "n": len(X),
                        "variant": name,
                        "utility": args.utility,
                        "seconds": seconds,
                        "f_warm": problem(x_warm).item(),
                        "f_eulbo": problem(x_eulbo).item(),
                        "f_elbo_svgp": problem(cand).item(),
                        "moved": (x_eulbo - x_warm).norm().item(),
                        "exact_logei_warm": exact(x_warm.unsqueeze(0)).item(),
                        "exact_logei_eulbo": exact(x_eulbo.unsqueeze(0)).item(),
                        "noise_before": before.likelihood.noise.item(),
                        "noise_after": model.likelihood.noise.item(),
                        "ls_change": ((ls1 - ls0).abs() / ls0).max().item(),
                        "dm": (vd1.variational_mean - vd0.variational_mean)
                        .norm()
                        .item(),
                        "u_warm": info["warm_start_utility"],
                        "u_eulbo": info["utility"],
                        "eulbo_steps": info["steps"],
                        "environment": env,
                    }
                append_csv_row(args.output, row)
                print(
                    f"seed {seed} n {len(X)} {name:<24} f warm {row['f_warm']:.3f} "
                    f"eulbo {row['f_eulbo']:.3f} moved {row['moved']:.3f} "
                    f"logEI {row['exact_logei_warm']:.2f} -> "
                    f"{row['exact_logei_eulbo']:.2f}",
                    flush=True,
                )
            X = torch.cat([X, cand])
            Y = torch.cat([Y, -problem(cand).unsqueeze(-1)])


def summarize(path: str) -> None:
    import math
    import statistics
    from collections import defaultdict

    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    groups = defaultdict(list)
    for row in rows:
        groups[(row.get("utility") or "ei", row["variant"])].append(row)

    def mean_se(values):
        se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0
        return f"{statistics.fmean(values):+.3f} ± {se:.3f}"

    print(
        "| variant | steps | f_eulbo - f_warm | EULBO better / worse / same | "
        "exact log EI change | moved (mean) | noise after / before | s (median) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, group in groups.items():
        df = [float(r["f_eulbo"]) - float(r["f_warm"]) for r in group]
        dl = [
            float(r["exact_logei_eulbo"]) - float(r["exact_logei_warm"]) for r in group
        ]
        ratio = [float(r["noise_after"]) / float(r["noise_before"]) for r in group]
        better = sum(d < -1e-9 for d in df)
        worse = sum(d > 1e-9 for d in df)
        moved = statistics.fmean(float(r["moved"]) for r in group)
        secs = [float(r["seconds"]) for r in group if r.get("seconds")]
        sec = f"{statistics.median(secs):.1f}" if secs else ""
        print(
            f"| {name[1]} ({name[0]}) | {len(group)} | {mean_se(df)} | "
            f"{better} / {worse} / "
            f"{len(group) - better - worse} | {mean_se(dl)} | {moved:.3f} | "
            f"{statistics.median(ratio):.2f} | {sec} |"
        )


if __name__ == "__main__":
    main()
