r"""Command-line front end: parse, validate, run, print.

Only the ``quickstart`` subcommand exists so far: a short BO loop on Branin that
exercises every acquisition function of the package. The benchmark runner
(``problems``, ``run``, ``compare``, ``demo``) plugs in here.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from botorch_ext import __version__

QUICKSTART_METHODS = ("qucb", "qsoftpi", "qlogsoftpi", "qes")


def build_parser() -> argparse.ArgumentParser:
    r"""Build the ``botorch-ext`` argument parser.

    Returns:
        The configured ``argparse.ArgumentParser``.
    """
    parser = argparse.ArgumentParser(
        prog="botorch-ext",
        description=(
            "Bayesian optimization with botorch_ext components: reparameterized "
            "qUCB, soft PI and entropy search."
        ),
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    quick = sub.add_parser(
        "quickstart",
        help="run a short BO loop on Branin with each acquisition function",
    )
    quick.add_argument("--iterations", type=int, default=5, help="BO iterations")
    quick.add_argument("--q", type=int, default=2, help="batch size per iteration")
    quick.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    r"""Entry point of ``botorch-ext`` and ``python -m botorch_ext``.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        The process exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "quickstart":
        for name, value in (("--iterations", args.iterations), ("--q", args.q)):
            if value < 1:
                parser.error(f"{name} must be >= 1, got {value}")
        return _quickstart(args.iterations, args.q, args.seed)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2  # pragma: no cover


def _quickstart(iterations: int, q: int, seed: int) -> int:
    import torch
    from botorch.acquisition.input_constructors import get_acqf_input_constructor
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.optim import optimize_acqf
    from botorch.test_functions import Branin
    from botorch.utils.datasets import SupervisedDataset
    from botorch.utils.sampling import draw_sobol_samples
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from botorch_ext.acquisition import qES, qLogSoftPI, qSoftPI, qUCB

    classes = {"qucb": qUCB, "qsoftpi": qSoftPI, "qlogsoftpi": qLogSoftPI, "qes": qES}
    problem = Branin(negate=True).to(torch.double)
    unit = torch.stack([torch.zeros(2), torch.ones(2)]).to(torch.double)
    print(f"Branin (maximizing -f; optimum {-problem.optimal_value:.4f})")
    print(f"{'method':<12}{'best -f':>10}{'seconds':>10}")
    for name in QUICKSTART_METHODS:
        start = time.monotonic()
        X = draw_sobol_samples(unit, n=5, q=1, seed=seed).squeeze(-2)
        Y = problem(problem.bounds[0] + X * (problem.bounds[1] - problem.bounds[0]))
        Y = Y.unsqueeze(-1)
        for _ in range(iterations):
            model = SingleTaskGP(X, Y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            data = SupervisedDataset(
                X, Y, feature_names=["x1", "x2"], outcome_names=["y"]
            )
            kwargs = get_acqf_input_constructor(classes[name])(
                model=model, training_data=data, bounds=[(0.0, 1.0)] * 2
            )
            acqf = classes[name](**kwargs)
            cand, _ = optimize_acqf(acqf, unit, q=q, num_restarts=4, raw_samples=64)
            y = problem(
                problem.bounds[0] + cand * (problem.bounds[1] - problem.bounds[0])
            )
            X, Y = torch.cat([X, cand]), torch.cat([Y, y.unsqueeze(-1)])
        print(f"{name:<12}{Y.max().item():>10.4f}{time.monotonic() - start:>10.1f}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
