r"""Where ``qES`` and ``qMaxValueEntropy`` send the next point, from
identical states.

Takes the first ``--n`` rows of a stored runner run (by default the ``qmes`` runs
of ``benchmarks/reparam_acq/qes_grid.sh`` on Hartmann6), fits BoTorch's default
``SingleTaskGP`` (Standardize) once, and for each acquisition prints the point
``optimize_acqf(num_restarts=10, raw_samples=512)`` proposes: its distance to the
incumbent and its objective value (minimization sign). ``qES`` settings vary the
representer scheme, tau (as a multiple of the training outcomes' std) and the
numbers of fantasies ``F`` and inner samples ``J``; ``Rd`` is the representers'
median distance to the incumbent.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/reparam_acq/qes_probe.py --seed 0 --n 30 \
        --configs ei:0.01:16:64,thompson:0.01:16:64,thompson:0.0001:16:64
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd
import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.max_value_entropy_search import qMaxValueEntropy
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.acquisition import qES
from botorch_ext.runner.problems import get_problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--results",
        default="benchmarks/reparam_acq/results/qes/hartmann6-q1/qmes/results.csv",
    )
    parser.add_argument("--problem", default="hartmann6")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument(
        "--configs",
        default="ei:0.01:16:64,thompson:0.01:16:64,thompson:0.0001:16:64,"
        "thompson:0.01:64:256",
        help="SCHEME:TAU_SCALE:F:J, comma-separated",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    problem = get_problem(args.problem)
    d = problem.dim
    rows = pd.read_csv(args.results)
    rows = rows[rows.seed == args.seed].iloc[: args.n]
    X = torch.tensor(rows[[f"x{i}" for i in range(d)]].values)
    Y = -torch.tensor(rows.value.values).unsqueeze(-1)  # maximize
    torch.manual_seed(0)
    model = SingleTaskGP(X, Y, outcome_transform=Standardize(1))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    data = SupervisedDataset(
        X, Y, feature_names=[f"x{i}" for i in range(d)], outcome_names=["y"]
    )
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    pairs = [(0.0, 1.0)] * d
    incumbent = X[Y.argmax()]
    print(f"seed {args.seed}, n {args.n}: incumbent {-Y.max().item():.3f}")

    def propose(name: str, acqf) -> None:
        torch.manual_seed(1)
        x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=10, raw_samples=512)
        dist = float((x[0] - incumbent).norm())
        print(f"  {name:40s} dist {dist:.3f}  f {problem(x).item():.3f}")

    kwargs = get_acqf_input_constructor(qMaxValueEntropy)(
        model=model, training_data=data, bounds=pairs
    )
    propose("qmes", qMaxValueEntropy(**kwargs))
    for config in args.configs.split(","):
        scheme, tau_scale, F, J = config.split(":")
        kwargs = get_acqf_input_constructor(qES)(
            model=model,
            training_data=data,
            bounds=pairs,
            representer_scheme=scheme,
            num_around_best=512 if scheme == "thompson" else 0,
            tau=float(tau_scale) * Y.std().item(),
            num_fantasies=int(F),
            num_inner_samples=int(J),
            seed=0,
        )
        R = kwargs["representer_points"]
        spread = float((R - incumbent).norm(dim=-1).median())
        propose(f"qes {config} (Rd {spread:.2f})", qES(**kwargs))


if __name__ == "__main__":
    main()
