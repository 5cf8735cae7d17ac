r"""Per-call latency (forward + backward) of the acquisition functions, and qES memory.

Set-up: a ``SingleTaskGP`` (float64) fitted to 200 scrambled Sobol points of the
6-D Hartmann function, and ``512 x q x 6`` t-batches of candidates for
``q in {1, 4, 8}``. One "call" is ``acqf(X).sum().backward()`` with ``X`` requiring
gradients, i.e. what ``optimize_acqf`` does per L-BFGS-B step on 512 restarts.

1. Pairs, each measured in the same process with the two members interleaved
   (back to back in every repeat, alternating which goes first) after a warm-up,
   reporting the median time of each member and the median of the per-repeat
   ratios ``ours / BoTorch`` (robust to slow changes in background load):

   * ``botorch_ext`` ``qUCB`` vs BoTorch ``qUpperConfidenceBound`` (same ``beta``),
   * ``botorch_ext`` ``qSoftPI`` vs BoTorch ``qProbabilityOfImprovement`` (same
     ``best_f`` and ``tau``).

   Both members of a pair get a ``SobolQMCNormalSampler`` with the same sample
   shape and seed (so identical base samples). Target: ours <= 1.1x BoTorch.

2. ``qES`` with 64 representer points (``draw_representer_points``) and the
   default ``num_fantasies`` / ``num_inner_samples``: median latency of the same
   forward + backward call, and its peak memory. Memory is measured on CPU in a
   fresh subprocess per ``q``: the child loads the already fitted model (state
   dict, so no fitting happens in it), builds ``qES``, runs ``gc.collect()``,
   records ``ru_maxrss`` (peak resident set size of the process so far), runs one
   forward + backward call and reports the increase of ``ru_maxrss``. This is the
   extra peak RSS caused by the call; memory freed earlier in the child and
   reused by the allocator would make it an underestimate, which is why the child
   does as little as possible before the call.

Every timing row also reports the share of the machine's CPU time that *other*
processes used meanwhile (from ``/proc/stat``): on a small shared machine,
background load slows multi-threaded kernels far more than proportionally, so
rows with a large share are not representative; ``--threads 1`` is less
sensitive to it.

Usage::

    python benchmarks/reparam_acq/latency.py            # full run
    python benchmarks/reparam_acq/latency.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from botorch.acquisition import qProbabilityOfImprovement, qUpperConfidenceBound
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch.quasirandom import SobolEngine

from botorch_ext.acquisition import draw_representer_points, qES, qSoftPI, qUCB

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import OtherCPU, environment

DTYPE = torch.float64
DIM = 6
BOUNDS = torch.stack([torch.zeros(DIM, dtype=DTYPE), torch.ones(DIM, dtype=DTYPE)])


def training_data(n_train: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    train_X = SobolEngine(DIM, scramble=True, seed=seed).draw(n_train).to(DTYPE)
    train_Y = Hartmann(dim=DIM, negate=True)(train_X).unsqueeze(-1)
    return train_X, train_Y


def fit_model(train_X: torch.Tensor, train_Y: torch.Tensor) -> SingleTaskGP:
    model = SingleTaskGP(train_X, train_Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def candidates(batch: int, q: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(batch, q, DIM, dtype=DTYPE, generator=gen)


def call(acqf, X: torch.Tensor) -> float:
    """One forward + backward pass; returns seconds."""
    X = X.detach().clone().requires_grad_(True)
    t0 = time.perf_counter()
    acqf(X).sum().backward()
    elapsed = time.perf_counter() - t0
    assert X.grad is not None and torch.isfinite(X.grad).all()
    return elapsed


def interleaved(acqf_a, acqf_b, X, warmup: int, repeats: int):
    """Median seconds of ``a`` and ``b`` and the median of the paired ratios.

    The two run back to back in every repeat, alternating which goes first; the
    ratio of each adjacent pair is robust to slow drifts in background load.
    """
    for _ in range(warmup):
        call(acqf_a, X)
        call(acqf_b, X)
    ta, tb = [], []
    for r in range(repeats):
        if r % 2 == 0:
            ta.append(call(acqf_a, X))
            tb.append(call(acqf_b, X))
        else:
            tb.append(call(acqf_b, X))
            ta.append(call(acqf_a, X))
    ratio = statistics.median(a / b for a, b in zip(ta, tb, strict=True))
    return statistics.median(ta), statistics.median(tb), ratio


def sampler(num_samples: int, seed: int) -> SobolQMCNormalSampler:
    return SobolQMCNormalSampler(sample_shape=torch.Size([num_samples]), seed=seed)


def child_memory(path: str, q: int, threads: int) -> None:
    """Subprocess entry: one qES forward + backward, print the ru_maxrss increase."""
    torch.set_num_threads(threads)
    saved = torch.load(path)
    model = SingleTaskGP(saved["train_X"], saved["train_Y"])
    model.load_state_dict(saved["state_dict"])
    model.eval()
    acqf = qES(
        model, representer_points=saved["R"], num_fantasies=16, num_inner_samples=64
    )
    X = candidates(saved["batch"], q, seed=saved["x_seed"] + q)
    X.requires_grad_(True)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    t0 = time.perf_counter()
    acqf(X).sum().backward()
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"before_kib": before, "after_kib": after, "cold_call_s": elapsed, "q": q}
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run")
    parser.add_argument("--qs", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--batch", type=int, default=512, help="t-batch size")
    parser.add_argument("--n-train", type=int, default=200)
    parser.add_argument("--num-samples", type=int, default=128)
    parser.add_argument("--num-representers", type=int, default=64)
    parser.add_argument("--beta", type=float, default=2.0)
    parser.add_argument("--tau", type=float, default=0.01)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--qes-repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument(
        "--profile-qes",
        action="store_true",
        help="print a torch.profiler table of qES at the largest q",
    )
    parser.add_argument(
        "--mem-repeats", type=int, default=3, help="fresh subprocesses per q"
    )
    parser.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_child-q", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child is not None:
        child_memory(args._child, args._child_q, args.threads)
        return
    if args.quick:
        args.batch, args.n_train = 64, 50
        args.warmup, args.repeats, args.qes_repeats = 1, 3, 2
        args.mem_repeats = 1
    torch.set_num_threads(args.threads)
    load_start = os.getloadavg()

    t_start = time.perf_counter()
    train_X, train_Y = training_data(args.n_train, args.seed)
    model = fit_model(train_X, train_Y)
    best_f = train_Y.max()
    # The settings measured (the defaults at the time): EI-weighted representers.
    R = draw_representer_points(
        model,
        BOUNDS,
        num_points=args.num_representers,
        seed=args.seed,
        scheme="ei",
        num_around_best=0,
    )
    x_seed = args.seed + 1000
    print(environment())
    print(
        f"{args.n_train} training points, t-batch {args.batch} x q x {DIM}, "
        f"{args.num_samples} Sobol samples, warm-up {args.warmup}, "
        f"median of {args.repeats} (qES: {args.qes_repeats})\n"
    )

    print(
        "| pair | q | ours (ms) | BoTorch (ms) | ratio ours/BoTorch (median of "
        "paired ratios) | <= 1.1x "
        "| other processes' CPU |"
    )
    print("|---|---|---|---|---|---|---|")
    for q in args.qs:
        X = candidates(args.batch, q, seed=x_seed + q)
        pairs = {
            "qUCB vs qUpperConfidenceBound": (
                qUCB(model, beta=args.beta, sampler=sampler(args.num_samples, 0)),
                qUpperConfidenceBound(
                    model, beta=args.beta, sampler=sampler(args.num_samples, 0)
                ),
            ),
            "qSoftPI vs qProbabilityOfImprovement": (
                qSoftPI(
                    model,
                    best_f=best_f,
                    tau=args.tau,
                    sampler=sampler(args.num_samples, 0),
                ),
                qProbabilityOfImprovement(
                    model,
                    best_f=best_f,
                    tau=args.tau,
                    sampler=sampler(args.num_samples, 0),
                ),
            ),
        }
        for name, (ours, theirs) in pairs.items():
            with OtherCPU() as other:
                ta, tb, ratio = interleaved(ours, theirs, X, args.warmup, args.repeats)
            ok = "yes" if ratio <= 1.1 else "no"
            print(
                f"| {name} | {q} | {1e3 * ta:.2f} | {1e3 * tb:.2f} | "
                f"{ratio:.3f} | {ok} | {other} |"
            )

    print(
        f"\nqES ({args.num_representers} representer points, default "
        "num_fantasies / num_inner_samples)"
        + (
            ""
            if args.skip_memory
            else "; memory columns: median (min-max) over "
            f"{args.mem_repeats} fresh subprocess(es)"
        )
        + "\n"
    )
    mem = {}
    if not args.skip_memory:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.pt")
            torch.save(
                {
                    "train_X": train_X,
                    "train_Y": train_Y,
                    "state_dict": model.state_dict(),
                    "R": R,
                    "batch": args.batch,
                    "x_seed": x_seed,
                },
                path,
            )
            for q in args.qs:
                cmd = [sys.executable, os.path.abspath(__file__), "--_child", path]
                cmd += ["--_child-q", str(q), "--threads", str(args.threads)]
                mem[q] = []
                for _ in range(args.mem_repeats):
                    out = subprocess.run(
                        cmd, capture_output=True, text=True, check=True
                    )
                    mem[q].append(json.loads(out.stdout.strip().splitlines()[-1]))

    print(
        "| q | median fwd+bwd (ms) | peak RSS increase (MiB) | child peak RSS "
        "before the call (MiB) | child cold call (ms) | other processes' CPU |"
    )
    print("|---|---|---|---|---|---|")
    acqf = qES(model, representer_points=R, num_fantasies=16, num_inner_samples=64)
    for q in args.qs:
        X = candidates(args.batch, q, seed=x_seed + q)
        with OtherCPU() as other:
            for _ in range(args.warmup):
                call(acqf, X)
            t = statistics.median(call(acqf, X) for _ in range(args.qes_repeats))
        if q in mem:
            inc = [(m["after_kib"] - m["before_kib"]) / 1024 for m in mem[q]]
            before = [m["before_kib"] / 1024 for m in mem[q]]
            cold = [1e3 * m["cold_call_s"] for m in mem[q]]
            extra = " | ".join(
                f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})"
                for v in (inc, before, cold)
            )
        else:
            extra = "n/a | n/a | n/a"
        print(f"| {q} | {1e3 * t:.1f} | {extra} | {other} |")
    if args.profile_qes:
        q = max(args.qs)
        X = candidates(args.batch, q, seed=x_seed + q)
        with torch.profiler.profile() as prof:
            for _ in range(3):
                call(acqf, X)
        print(f"\ntorch.profiler, 3 qES forward + backward calls at q = {q}:\n")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    print(
        f"\nwall time: {time.perf_counter() - t_start:.1f} s"
        + (
            f"; load average (1, 5, 15 min) at start {load_start}, "
            f"at end {os.getloadavg()}"
        )
    )


if __name__ == "__main__":
    main()
