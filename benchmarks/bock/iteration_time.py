r"""Seconds per BO iteration of the runner's ``bock`` against ``qlogei`` and ``matern``.

One iteration is what the runner does per proposal: fit the ``SingleTaskGP``
(``fit_gpytorch_mll``) on ``n`` Rosenbrock points, then ``optimize_acqf`` with
qLogNEI (``q = 1``, 5 restarts, 256 raw samples, the Table-1 grid's settings) and
a Bilog + Standardize outcome transform. The training points are the cube's
center plus scrambled Sobol points, as in a centre-initialized run. Times are the
process's CPU time with one torch thread (robust to time-slicing with other
processes on a busy machine), the median of ``--repeats`` calls per cell, with
the methods interleaved.

``--design near-center`` replays a run stalled at the center: half of
the ``n`` points are sprayed about the center at normalized radii 1e-4 to 1e-2
(the best of them is the incumbent), the rest Sobol; with ``--initial-conditions
bock`` the optimizer then starts from sprays about that incumbent, which is where
the ``"direction"`` rule's ``1 / ||x - c||`` gradients cost most.

A method that carries state between iterations (``new_run``: the warm-started
``bock``) is timed as a run's step: after its step on the first ``n - 1`` points.

``--ratio-to METHOD`` adds each method's median per-repeat ratio of CPU seconds
to METHOD's (same data, same repeat). ``--profile`` then profiles one more call of
each method (cProfile, on the last cell's data) and prints the top functions by
cumulative time.

Usage::

    python benchmarks/bock/iteration_time.py                # d = 20, 100; n = 50, 150
    python benchmarks/bock/iteration_time.py --dims 20 --ns 150 \
        --methods bock,matern-scaled --ratio-to matern-scaled --profile
    python benchmarks/bock/iteration_time.py --quick
    PYTHONPATH=. python benchmarks/bock/iteration_time.py --design near-center \
        --methods bock,benchmarks.bock.ablations:bock_direction,qlogei \
        --initial-conditions bock \
        --output benchmarks/bock/results/continuous-rule/iteration_time_near_center.csv
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import pstats
import statistics
import sys
import time

import torch
from botorch.utils.sampling import draw_sobol_samples

from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import OtherCPU, environment, write_csv


def _primed_runs(methods, X, Y, bounds, options) -> dict:
    # A method that carries state between iterations (``carries_state``, e.g.
    # the warm-started ``bock``) is timed as a run's step on the n points after
    # its step on the first n - 1 (untimed); each repeat starts from a copy of it.
    primed = {}
    for m in methods:
        method = get_method(m)
        if method.carries_state:
            run = method.new_run()
            run.propose(X[:-1], Y[:-1], bounds, 1, 0, options)
            primed[m] = run
    return primed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="20,100")
    parser.add_argument("--ns", default="50,150")
    parser.add_argument("--methods", default="bock,qlogei,matern")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--design", choices=("sobol", "near-center"), default="sobol")
    parser.add_argument(
        "--initial-conditions", choices=("botorch", "bock"), default="botorch"
    )
    parser.add_argument(
        "--output", default="benchmarks/bock/results/bock_iteration_time.csv"
    )
    parser.add_argument(
        "--ratio-to", default=None, help="report ratios of CPU seconds to this method"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile one more call of each method (top functions by cumulative time)",
    )
    parser.add_argument("--top", type=int, default=25, help="rows per profile")
    args = parser.parse_args()
    if args.quick:
        args.dims, args.ns, args.repeats = "5", "20", 1
    torch.set_num_threads(1)
    print(environment())
    options = MethodOptions(
        outcome_transform="bilog",
        num_restarts=5,
        raw_samples=256,
        initial_conditions=args.initial_conditions,
    )
    methods = args.methods.split(",")
    rows = []
    for d in (int(v) for v in args.dims.split(",")):
        problem = get_problem("rosenbrock", d)
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
        for n in (int(v) for v in args.ns.split(",")):
            X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=0).squeeze(-2)
            X[0] = 0.5
            if args.design == "near-center":
                gen = torch.Generator().manual_seed(0)
                m = n // 2
                dirs = torch.randn(m, d, generator=gen, dtype=X.dtype)
                dirs = dirs / dirs.norm(dim=-1, keepdim=True)
                radii = torch.logspace(-4, -2, m, dtype=X.dtype).unsqueeze(-1)
                X[1 : m + 1] = 0.5 + radii * (d**0.5 / 2) * dirs
            Y = -problem(X).reshape(n, 1)  # runner's maximization sign
            times = {m: [] for m in methods}
            primed = _primed_runs(methods, X, Y, bounds, options)
            with OtherCPU() as other:
                for rep in range(args.repeats):
                    order = methods if rep % 2 == 0 else methods[::-1]
                    for m in order:
                        call = copy.deepcopy(primed[m]) if m in primed else None
                        call = call or get_method(m).new_run()
                        start = time.process_time()
                        call.propose(X, Y, bounds, 1, rep, options)
                        times[m].append(time.process_time() - start)
            for m in methods:
                row = {
                    "d": d,
                    "n": n,
                    "method": m,
                    "design": args.design,
                    "initial_conditions": args.initial_conditions,
                    "cpu_s": statistics.median(times[m]),
                    "other_cpu": str(other),
                }
                if args.ratio_to is not None:
                    base = times[args.ratio_to]
                    row[f"ratio_to_{args.ratio_to}"] = statistics.median(
                        a / b for a, b in zip(times[m], base, strict=True)
                    )
                rows.append(row)
                print(row, flush=True)
    if not args.quick:
        write_csv(args.output, rows)
    if args.profile:
        for m in methods:
            call = copy.deepcopy(primed[m]) if m in primed else None
            call = call or get_method(m).new_run()
            profiler = cProfile.Profile()
            profiler.enable()
            call.propose(X, Y, bounds, 1, args.repeats, options)
            profiler.disable()
            print(f"\n=== profile of {m}, d={d}, n={n} (top {args.top}) ===")
            stats = pstats.Stats(profiler).strip_dirs().sort_stats("cumulative")
            stats.print_stats(args.top)


if __name__ == "__main__":
    main()
