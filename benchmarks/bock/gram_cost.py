r"""Gram-matrix cost of ``BOCKKernel`` against an ARD Matern-5/2 kernel.

One "call" is ``k(X).to_dense()`` on ``n`` points followed by ``K.sum().backward()``;
``X`` holds the cube's center, as BOCK's training sets do, plus uniform points.
Two cases: gradients for the kernel's hyperparameters only (``x_grad=False``,
what a marginal-likelihood step asks of the kernel) and for ``X`` as well
(``x_grad=True``; an acquisition step asks this of a few test points only). The two
kernels are timed in the same process, interleaved in every repeat (alternating
which goes first) after a warm-up; rows report the median time of each and the
median of the per-repeat ratios ``cylindrical / Matern``. Target: <= 1.5x.
Also reports GPyTorch's ``CylindricalKernel`` (inputs scaled into its unit ball)
for reference.

``--profile`` then profiles a few more calls of each kernel (cProfile, the
first case of ``--dims`` without input gradients) and prints the top functions
by cumulative time.

Usage::

    python benchmarks/bock/gram_cost.py                 # n = 1000, d = 100 and 500
    python benchmarks/bock/gram_cost.py --quick         # smoke run
    python benchmarks/bock/gram_cost.py --dims 100 --profile --output /tmp/g.csv
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import math
import os
import pstats
import statistics
import sys
import time

import torch
from gpytorch.kernels import CylindricalKernel as GPyTorchCylindricalKernel
from gpytorch.kernels import MaternKernel

from botorch_ext.kernels import BOCKKernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import OtherCPU, environment, write_csv


def _call(kernel, X: torch.Tensor, x_grad: bool) -> float:
    X = X.detach().requires_grad_(x_grad)
    kernel.zero_grad()
    start = time.process_time()
    K = kernel(X).to_dense()
    K.sum().backward()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--dims", default="100,500")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile each kernel's calls (top functions by cumulative time)",
    )
    parser.add_argument("--top", type=int, default=20, help="rows per profile")
    parser.add_argument(
        "--output",
        default="benchmarks/bock/results/bock_gram_cost.csv",
        help="CSV path",
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.dims, args.repeats = 200, "20", 3
    torch.set_num_threads(args.threads)
    print(environment())
    rows = []
    for d, x_grad in itertools.product(
        (int(v) for v in args.dims.split(",")), (False, True)
    ):
        gen = torch.Generator().manual_seed(d)
        X = torch.rand(args.n, d, generator=gen, dtype=torch.double)
        # BOCK's runs start at the cube's center, so training sets contain it.
        X[0] = 0.5
        kernels = {
            "cylindrical": BOCKKernel().double(),
            "matern_ard": MaternKernel(nu=2.5, ard_num_dims=d).double(),
        }
        gp_cyl = GPyTorchCylindricalKernel(
            num_angular_weights=4, radial_base_kernel=MaternKernel(nu=2.5)
        ).double()
        # GPyTorch's kernel jitters exact zeros itself.
        X_ball = (X - 0.5) / (math.sqrt(d) / 2 * (1 + 1e-6))
        times = {name: [] for name in (*kernels, "gpytorch_cylindrical")}
        ratios = []
        for _ in range(2):  # warm-up
            for k in kernels.values():
                _call(k, X, x_grad)
            _call(gp_cyl, X_ball, x_grad)
        with OtherCPU() as other:
            for rep in range(args.repeats):
                order = list(kernels) if rep % 2 == 0 else list(kernels)[::-1]
                t = {name: _call(kernels[name], X, x_grad) for name in order}
                for name, v in t.items():
                    times[name].append(v)
                ratios.append(t["cylindrical"] / t["matern_ard"])
                times["gpytorch_cylindrical"].append(_call(gp_cyl, X_ball, x_grad))
        row = {
            "n": args.n,
            "d": d,
            "x_grad": x_grad,
            "cylindrical_s": statistics.median(times["cylindrical"]),
            "matern_ard_s": statistics.median(times["matern_ard"]),
            "gpytorch_cylindrical_s": statistics.median(times["gpytorch_cylindrical"]),
            "ratio_cyl_over_matern": statistics.median(ratios),
            "threads": args.threads,
            "other_cpu": str(other),
        }
        rows.append(row)
        print(
            ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in row.items()
            ),
            flush=True,
        )
    if not args.quick:
        write_csv(args.output, rows)
    if args.profile:
        _profile(args)


def _profile(args: argparse.Namespace) -> None:
    d = int(args.dims.split(",")[0])
    gen = torch.Generator().manual_seed(d)
    X = torch.rand(args.n, d, generator=gen, dtype=torch.double)
    X[0] = 0.5
    kernels = {
        "cylindrical": BOCKKernel().double(),
        "matern_ard": MaternKernel(nu=2.5, ard_num_dims=d).double(),
    }
    for name, kernel in kernels.items():
        _call(kernel, X, False)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(5):
            _call(kernel, X, False)
        profiler.disable()
        print(f"\n=== profile of {name}, 5 calls, n={args.n}, d={d}, x_grad=False ===")
        pstats.Stats(profiler).strip_dirs().sort_stats("cumulative").print_stats(
            args.top
        )


if __name__ == "__main__":
    main()
