r"""Cost of a fresh ``EULBOModel``: BoTorch's allocators against the row-wise ones.

A fresh model (no previous model to carry) allocates its inducing points with
greedy variance reduction. BoTorch's ``GreedyVarianceReduction`` evaluates the
``n x n`` training kernel; ``botorch_ext.eulbo.inducing`` computes the picked
points' rows only. Each configuration runs in a fresh process, one thread: it
builds the model on ``n`` uniform points of the 60-D rover's cube (rover values as
outcomes need the rover; a smooth function is used instead, the allocation does not
read ``Y``) and records the wall and CPU seconds of the constructor and the
process's peak-memory growth during it. Both must pick the same points (the
checksum column). ``+previous`` gives the model a previous model (built on the
first 1,000 points, with twice the ``m``, so that it is not carried): greedy
improvement reduction, whose quality scores are that model's posterior at all
``n`` inputs.

Example::

    OMP_NUM_THREADS=1 python benchmarks/eulbo/allocator_cost.py --ns 1000,5000,20000 \
        --output benchmarks/eulbo/results/allocator/allocator_cost.csv
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one(allocator: str, n: int, d: int, m: int) -> dict:
    import torch
    from botorch.models.utils.inducing_point_allocators import (
        GreedyImprovementReduction,
        GreedyVarianceReduction,
    )

    from botorch_ext.eulbo import EULBOModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    X = torch.rand(n, d, dtype=torch.double)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    kwargs: dict = {}
    rule, _, previous = allocator.partition("+")
    if previous:  # greedy improvement reduction: a previous model, not carried
        if previous != "previous":
            raise ValueError(f"--allocators: unknown {allocator!r}")
        kwargs["previous_model"] = EULBOModel(X[:1000], Y[:1000], num_inducing_points=m)
        m = m // 2  # a different m, so the previous model's points are not carried
    if rule == "botorch":
        kwargs["inducing_point_allocator"] = (
            GreedyImprovementReduction(kwargs["previous_model"], maximize=True)
            if previous
            else GreedyVarianceReduction()
        )
    elif rule != "rows":
        raise ValueError(f"--allocators: unknown {allocator!r}")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    model = EULBOModel(X, Y, num_inducing_points=m, **kwargs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Z = model.model.variational_strategy.inducing_points.detach()
    sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
    from common import environment

    return {
        "allocator": allocator,
        "n": n,
        "d": d,
        "m": m,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "peak_growth_mb": round((after - before) / 1024, 1),
        "z_checksum": float((Z * torch.arange(1, m + 1).to(Z).unsqueeze(-1)).sum()),
        "environment": environment(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="1000,5000,20000")
    parser.add_argument("--d", type=int, default=60)
    parser.add_argument("--m", type=int, default=100)
    parser.add_argument(
        "--allocators",
        default="botorch,rows,botorch+previous,rows+previous",
        help="botorch or rows; +previous: a previous model (improvement reduction)",
    )
    parser.add_argument(
        "--output",
        default=os.path.join(HERE, "results/allocator/allocator_cost.csv"),
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # worker: allocator:n
    args = parser.parse_args()
    if args.one:
        allocator, n = args.one.rsplit(":", 1)
        print(json.dumps(one(allocator, int(n), args.d, args.m)))
        return
    sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
    from common import append_csv_row

    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    for n in [int(v) for v in args.ns.split(",")]:
        for allocator in args.allocators.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--one", f"{allocator}:{n}"]
                + ["--d", str(args.d), "--m", str(args.m)],
                capture_output=True,
                text=True,
                env=os.environ | {"OMP_NUM_THREADS": "1"},
            )
            if out.returncode != 0:
                print(f"{allocator} n={n} failed:\n{out.stderr[-2000:]}", flush=True)
                continue
            row = json.loads(out.stdout.strip().splitlines()[-1])
            append_csv_row(args.output, row)
            print(
                f"{allocator:<8} n={n:>6}  wall {row['wall_s']:>7.2f} s  CPU "
                f"{row['cpu_s']:>7.2f} s  peak +{row['peak_growth_mb']} MB  "
                f"Z checksum {row['z_checksum']:.10g}",
                flush=True,
            )


if __name__ == "__main__":
    main()
