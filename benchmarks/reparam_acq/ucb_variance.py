r"""Estimator variance and bias of ``qUCB`` versus BoTorch's ``qUpperConfidenceBound``.

Both acquisition functions are Monte Carlo estimators of parallel UCB. BoTorch's
``qUpperConfidenceBound`` centres the samples at their sample mean, ``botorch_ext``'s
``qUCB`` centres them at the exact posterior mean. This script fits a
``SingleTaskGP`` (float64) to a few Sobol points of the 6-D Hartmann function on
``[0, 1]^6``, fixes a handful of candidate q-batches ``X`` and evaluates both
estimators with the same small number of base samples (16 by default) for many
sampler seeds, with ``IIDNormalSampler`` and with ``SobolQMCNormalSampler``. For
every ``(sampler, q, X)`` it reports the mean and variance over seeds, the variance
ratio ``Var[BoTorch] / Var[ours]`` and, at ``q = 1``, the bias against the closed
form ``mu + sqrt(beta) * sigma`` (as a fraction of the exploration bonus
``sqrt(beta) * sigma``). At ``q > 1`` the reference is ``qUCB`` evaluated with a large
Sobol sample (``--ref-samples``); ``qUCB`` is unbiased for its target at any sample
size because every per-sample term has the right expectation.

Usage::

    python benchmarks/reparam_acq/ucb_variance.py            # full run (1000 seeds)
    python benchmarks/reparam_acq/ucb_variance.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch
from botorch.acquisition import qUpperConfidenceBound
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import IIDNormalSampler, SobolQMCNormalSampler
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch.quasirandom import SobolEngine

from botorch_ext.acquisition import qUCB

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment

DTYPE = torch.float64
DIM = 6


def build_model(n_train: int, seed: int) -> SingleTaskGP:
    """Fit a SingleTaskGP to ``n_train`` scrambled Sobol points of Hartmann6."""
    torch.manual_seed(seed)
    train_X = SobolEngine(DIM, scramble=True, seed=seed).draw(n_train).to(DTYPE)
    train_Y = Hartmann(dim=DIM, negate=True)(train_X).unsqueeze(-1)
    model = SingleTaskGP(train_X, train_Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def fixed_candidates(num_x: int, q: int, seed: int) -> torch.Tensor:
    """``num_x x q x d`` fixed candidate batches (scrambled Sobol, own seed)."""
    pts = SobolEngine(DIM, scramble=True, seed=seed).draw(num_x * q).to(DTYPE)
    return pts.view(num_x, q, DIM)


def make_sampler(kind: str, num_samples: int, seed: int):
    shape = torch.Size([num_samples])
    if kind == "iid":
        return IIDNormalSampler(sample_shape=shape, seed=seed)
    return SobolQMCNormalSampler(sample_shape=shape, seed=seed)


@torch.no_grad()
def estimates(model, X, beta, kind, num_samples, num_seeds):
    """``num_seeds x num_x`` values of ours and BoTorch's estimator."""
    ours, theirs = [], []
    for s in range(num_seeds):
        a = qUCB(model, beta=beta, sampler=make_sampler(kind, num_samples, s))
        b = qUpperConfidenceBound(
            model, beta=beta, sampler=make_sampler(kind, num_samples, s)
        )
        ours.append(a(X))
        theirs.append(b(X))
    return torch.stack(ours), torch.stack(theirs)


@torch.no_grad()
def reference(model, X, beta, q, ref_samples):
    """Closed form at q = 1; a large-sample ``qUCB`` estimate otherwise."""
    if q == 1:
        post = model.posterior(X)
        mu = post.mean.squeeze(-1).squeeze(-1)
        sigma = post.variance.sqrt().squeeze(-1).squeeze(-1)
        return mu + math.sqrt(beta) * sigma, math.sqrt(beta) * sigma
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([ref_samples]), seed=12345)
    return qUCB(model, beta=beta, sampler=sampler)(X), None


def fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run")
    parser.add_argument("--num-seeds", type=int, default=1000)
    parser.add_argument("--num-samples", type=int, default=16)
    parser.add_argument("--num-x", type=int, default=3, help="fixed X per q")
    parser.add_argument("--n-train", type=int, default=20)
    parser.add_argument("--beta", type=float, default=2.0)
    parser.add_argument("--qs", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--ref-samples", type=int, default=2**16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="data / X seed")
    args = parser.parse_args()
    if args.quick:
        args.num_seeds = 50
        args.num_x = 2
    torch.set_num_threads(args.threads)
    load_start = os.getloadavg()

    t0 = time.perf_counter()
    model = build_model(args.n_train, args.seed)
    n = args.num_seeds
    print(environment())
    print(
        f"{args.n_train} Hartmann6 training points, beta = {args.beta}, "
        f"N = {args.num_samples} base samples, {n} seeds\n"
    )
    header = (
        "| sampler | q | X | reference | mean ours | mean BoTorch | var ours "
        "| var BoTorch | var ratio (BoTorch/ours) | rel. bonus bias ours "
        "| rel. bonus bias BoTorch |"
    )
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    expected = math.sqrt((args.num_samples - 1) / args.num_samples) - 1.0
    for kind in ("iid", "sobol"):
        for q in args.qs:
            X = fixed_candidates(args.num_x, q, seed=args.seed + 100 + q)
            ours, theirs = estimates(
                model, X, args.beta, kind, args.num_samples, args.num_seeds
            )
            ref, bonus = reference(model, X, args.beta, q, args.ref_samples)
            for i in range(args.num_x):
                o, t = ours[:, i], theirs[:, i]
                vo, vt = o.var().item(), t.var().item()
                row = [
                    kind,
                    str(q),
                    str(i),
                    fmt(ref[i].item()),
                    f"{fmt(o.mean().item())} ± {fmt(math.sqrt(vo / n))}",
                    f"{fmt(t.mean().item())} ± {fmt(math.sqrt(vt / n))}",
                    f"{vo:.3e}",
                    f"{vt:.3e}",
                    f"{vt / vo:.2f}",
                ]
                if bonus is None:
                    row += ["n/a", "n/a"]
                else:
                    bi = bonus[i].item()
                    for v, var in ((o, vo), (t, vt)):
                        rel = (v.mean().item() - ref[i].item()) / bi
                        row.append(f"{rel:+.4f} ± {math.sqrt(var / n) / bi:.4f}")
                print("| " + " | ".join(row) + " |")
    print(
        "\n'±' is one standard error over seeds. Relative bonus bias = (mean - "
        "(mu + sqrt(beta) sigma)) / (sqrt(beta) sigma); an IID sample-mean-centred "
        f"estimator is expected at sqrt((N-1)/N) - 1 = {expected:+.4f}. "
        f"Reference at q > 1: qUCB with {args.ref_samples} Sobol samples."
    )
    print(
        f"\nwall time: {time.perf_counter() - t0:.1f} s"
        + (
            f"; load average (1, 5, 15 min) at start {load_start}, "
            f"at end {os.getloadavg()}"
        )
    )


if __name__ == "__main__":
    main()
