r"""Wall time and peak memory of one ``optimize_acqf`` call on ``qES``.

Set-up: a ``SingleTaskGP`` (float64) fitted to 30 scrambled Sobol points of the 6-D
Hartmann function (negated, so that it is maximised) on ``[0, 1]^6``; 64
representer points from ``draw_representer_points``; ``qES`` with its default
``num_fantasies`` / ``num_inner_samples``; then a single
``optimize_acqf(acqf, bounds=unit cube, q=4, num_restarts=10, raw_samples=512)``
with BoTorch's default optimizer options, on ``--threads`` (default 2) threads.

Reported: wall time of the ``optimize_acqf`` call alone, the number of ``qES``
forward calls it made and the time spent inside them (from a forward hook), the
process peak RSS (``ru_maxrss``) after the call and its increase over the value
just before the call. ``--profile`` additionally runs the call under ``cProfile``
(which slows it down) and prints the most expensive functions.

Targets: under 60 s and under 4 GB peak RSS.

Usage::

    python benchmarks/reparam_acq/qes_optimize.py            # full run
    python benchmarks/reparam_acq/qes_optimize.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import resource
import sys
import time
import warnings

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch.quasirandom import SobolEngine

from botorch_ext.acquisition import draw_representer_points, qES

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import OtherCPU, environment

DTYPE = torch.float64
DIM = 6


def rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux: KiB units)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run")
    parser.add_argument("--q", type=int, default=4)
    parser.add_argument("--num-restarts", type=int, default=10)
    parser.add_argument("--raw-samples", type=int, default=512)
    parser.add_argument("--n-train", type=int, default=30)
    parser.add_argument("--num-representers", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="run under cProfile")
    args = parser.parse_args()
    if args.quick:
        args.num_restarts, args.raw_samples = 2, 32
    torch.set_num_threads(args.threads)
    load_start = os.getloadavg()
    torch.manual_seed(args.seed)

    bounds = torch.stack([torch.zeros(DIM, dtype=DTYPE), torch.ones(DIM, dtype=DTYPE)])
    f = Hartmann(dim=DIM, negate=True)
    train_X = SobolEngine(DIM, scramble=True, seed=args.seed).draw(args.n_train)
    train_X = train_X.to(DTYPE)
    train_Y = f(train_X).unsqueeze(-1)
    t0 = time.perf_counter()
    model = SingleTaskGP(train_X, train_Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    # The settings measured (the defaults at the time): EI-weighted
    # representers, 16 fantasies, 64 inner samples.
    R = draw_representer_points(
        model,
        bounds,
        num_points=args.num_representers,
        seed=args.seed,
        scheme="ei",
        num_around_best=0,
    )
    acqf = qES(model, representer_points=R, num_fantasies=16, num_inner_samples=64)
    t_setup = time.perf_counter() - t0

    stats = {"calls": 0, "points": 0, "seconds": 0.0}
    batch_sizes: collections.Counter = collections.Counter()

    def pre_hook(module, inputs):
        stats["_t"] = time.perf_counter()

    def post_hook(module, inputs, output):
        stats["seconds"] += time.perf_counter() - stats["_t"]
        stats["calls"] += 1
        n = inputs[0].shape[:-2].numel()
        stats["points"] += n
        batch_sizes[n] += 1

    acqf.register_forward_pre_hook(pre_hook)
    acqf.register_forward_hook(post_hook)

    rss_before = rss_mib()
    profiler = cProfile.Profile() if args.profile else None
    with warnings.catch_warnings(record=True) as caught, OtherCPU() as other:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        X, value = optimize_acqf(
            acqf,
            bounds=bounds,
            q=args.q,
            num_restarts=args.num_restarts,
            raw_samples=args.raw_samples,
        )
        if profiler is not None:
            profiler.disable()
        wall = time.perf_counter() - t0
    rss_after = rss_mib()

    print(environment())
    print(
        f"{args.n_train} training points, {args.num_representers} representer "
        f"points, q = {args.q}, num_restarts = {args.num_restarts}, "
        f"raw_samples = {args.raw_samples}"
        + (" (under cProfile)" if args.profile else "")
        + "\n"
    )
    rows = [
        ("optimize_acqf wall time (s)", f"{wall:.1f}", "< 60", wall < 60),
        (
            "peak RSS of the process after the call (MiB)",
            f"{rss_after:.0f}",
            "< 4096",
            rss_after < 4096,
        ),
        (
            "peak RSS increase over pre-call value (MiB)",
            f"{rss_after - rss_before:.0f}",
        ),
        ("qES forward calls", str(stats["calls"])),
        ("t-batches evaluated (sum of batch sizes)", str(stats["points"])),
        ("time inside qES forward (s)", f"{stats['seconds']:.1f}"),
        ("other processes' CPU during the call (% of machine)", str(other)),
        ("set-up: fit + representer points (s)", f"{t_setup:.1f}"),
        ("qES value at the returned batch (nats)", f"{value.item():.4f}"),
    ]
    print("| quantity | value | target | met |")
    print("|---|---|---|---|")
    for row in rows:
        cells = [*row, "", ""][:4]
        if isinstance(cells[3], bool):
            cells[3] = "yes" if cells[3] else "no"
        print("| " + " | ".join(cells) + " |")
    print(
        "\nforward calls by t-batch size: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(batch_sizes.items()))
    )
    kinds = collections.Counter(
        f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught
    )
    print(
        "warnings during optimize_acqf: "
        + ("; ".join(f"{k} (x{v})" for k, v in kinds.items()) or "none")
    )
    print(
        "\ncandidates (Hartmann6 value):\n"
        + "\n".join(
            f"  {[round(v, 3) for v in x.tolist()]} ({f(x).item():.3f})" for x in X
        )
    )
    print(
        f"\nload average (1, 5, 15 min) at start {load_start}, at end {os.getloadavg()}"
    )
    if profiler is not None:
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(20)
        print("\ncProfile, top 20 by tottime:\n" + buf.getvalue())


if __name__ == "__main__":
    main()
