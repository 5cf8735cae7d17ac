r"""``fit_elbo`` against an exact GP's fit at ``n <= m``, side by side in one process.

For each data set, ``EULBOModel`` (its defaults: ``m = 100``, so one inducing point
per input) fitted by ``fit_elbo`` and BoTorch's ``SingleTaskGP`` fitted by
``fit_gpytorch_mll`` alternate ``--repeats`` times on the same data, one torch
thread; each side is run once first, so that one-time imports (``torch.optim``
imports ``torch._dynamo`` at its first use, about 4 s) are not in the medians.
Prints one row per data set: median seconds of each side, their ratio, the
iterations of the EULBO fit and its per-datum ELBO. ``--profile`` prints the top
functions of one ``fit_elbo`` on the getting-started data by cumulative time.

Data sets: the getting-started page's noise-free 2-D quadratic (n = 20) and
noise-free Hartmann6 (n = 20 and 60), uniform points from seed 0.

Example::

    OMP_NUM_THREADS=1 python benchmarks/eulbo/fit_speed.py --repeats 5
    OMP_NUM_THREADS=1 python benchmarks/eulbo/fit_speed.py --profile
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
import warnings

import torch
from botorch import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.eulbo import EULBOModel, fit_elbo


def data(name: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``n`` uniform points (seed 0) of one of the benchmark's functions."""
    gen = torch.Generator().manual_seed(0)
    if name == "quadratic-2d":
        X = torch.rand(n, 2, generator=gen, dtype=torch.double)
        return X, -((X - 0.3) ** 2).sum(-1, keepdim=True)
    X = torch.rand(n, 6, generator=gen, dtype=torch.double)
    return X, Hartmann(negate=True)(X).unsqueeze(-1)


def exact_fit(X: torch.Tensor, Y: torch.Tensor) -> float:
    r"""Seconds of ``SingleTaskGP`` + ``fit_gpytorch_mll``."""
    start = time.perf_counter()
    gp = SingleTaskGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    return time.perf_counter() - start


def eulbo_fit(X: torch.Tensor, Y: torch.Tensor) -> tuple[float, EULBOModel]:
    r"""Seconds of ``EULBOModel`` + ``fit_elbo``, and the model."""
    start = time.perf_counter()
    model = EULBOModel(X, Y)
    fit_elbo(model)
    return time.perf_counter() - start, model


DATA_SETS = (("quadratic-2d", 20), ("hartmann6", 20), ("hartmann6", 60))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    first = eulbo_fit(*data("quadratic-2d", 20))[0], exact_fit(*data("hartmann6", 20))
    print(f"first calls (imports included): fit_elbo {first[0]:.2f} s, "
          f"exact {first[1]:.2f} s")  # fmt: skip
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        eulbo_fit(*data("quadratic-2d", 20))
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(15)
        return 0
    print("data | n | fit_elbo s | exact GP s | ratio | iterations | ELBO/n")
    for name, n in DATA_SETS:
        X, Y = data(name, n)
        ours, theirs = [], []
        for _ in range(args.repeats):
            seconds, model = eulbo_fit(X, Y)
            ours.append(seconds)
            theirs.append(exact_fit(X, Y))
        a, b = statistics.median(ours), statistics.median(theirs)
        fit = model.last_fit
        print(f"{name} | {n} | {a:.3f} | {b:.3f} | {a / b:.2f} | "
              f"{fit['steps']} | {fit['elbo']:.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
