r"""Seconds per BO step of the SVGP methods as ``n`` grows.

For each method and ``n``, in a fresh process (so that the peak resident memory is
that of one configuration): ``n + q`` i.i.d. uniform points of the 60-D rover
problem, one BO step on the first ``n`` (the run's first step: fresh model,
closed-form ``q(u)``), then the timed step on all ``n + q`` with the state carried
over, exactly as the runner's ``turbo-*`` methods do (q = 20, m = 100, 10 restarts,
256 raw samples, one thread; ``--device cuda`` puts the data, and so the models,
on the GPU). The exact-GP TuRBO baseline (``turbo``) refits a
``SingleTaskGP`` every step and is run only up to ``--exact-max-n``.

Rows are appended to the output CSV as each configuration finishes (an existing
file is never truncated), with the environment line, the share of the machine's
CPU used by other processes during the step, and the peak RSS.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/step_cost.py \
        [--ns 1000,2000,5000,10000] [--methods turbo-elbo-svgp,turbo-eulbo-ei,turbo] \
        [--exact-max-n 2000] [--device cuda] [--profile] \
        [--output benchmarks/eulbo/results/adam-fit/step_cost.csv]

``--state PATH`` times instead one step of a real BO run: the runner's resume file
``OUT/state/METHOD-sSEED.pt`` of a ``botorch-ext run``/``compare`` on the rover holds
the method's carried run and its data; the step is that run's next proposal on the
stored data (``--state-n`` keeps only the first points), repeated ``--repeats`` times,
each in a fresh process. Its rows add the process's CPU seconds for the step
(``step_cpu_s``), the clock to compare on a loaded machine, and a checksum of the
batch (``candidates_sum``), so that two versions of the code can be checked to propose
the same batch. The package is imported from ``PYTHONPATH``: set it to a checkout of
another commit to time that commit's code on the same state. ``--eulbo-options turbo``
replaces the stored run's settings by ``EULBOOptions.turbo()`` (the package's arms
only), to time the bounded searches on the same state. ``--fit-max-iter K`` sets the
carried ELBO fit's L-BFGS budget of the step to ``K`` (``elbo.lbfgs_max_iter``, with
no separate ``subset_max_iter``); the row's ``fit_max_iter`` is the budget the
step's fit had, and its ``fit_elbo`` is the per-datum bound of all the data after
the fit, also when the fit used a random subset (``n > lbfgs_max_n``), so that the
budget's effect on the fit of all the data can be read beside its cost.

``--profile`` runs the timed step under ``cProfile`` and prints its top functions by
cumulative time (``--profile-top``, default 25) after each configuration's line; the
profiler's overhead inflates that step's seconds, so profile and time in separate
invocations.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one(method: str, n: int, q: int, device: str = "cpu", profile_top: int = 0) -> dict:
    import torch

    from botorch_ext.runner.methods import get_method
    from botorch_ext.runner.options import MethodOptions
    from botorch_ext.runner.problems import get_problem

    sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
    from common import OtherCPU, environment

    torch.set_num_threads(1)
    problem = get_problem("rover")
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(n + q, problem.dim, generator=gen, dtype=torch.double)
    X = X.to(device)
    Y = -problem(X).unsqueeze(-1)
    bounds = problem.bounds.to(X)
    options = MethodOptions(num_restarts=10, raw_samples=256, num_inducing_points=100)
    run = get_method(method).new_run()

    def sync() -> None:
        if X.is_cuda:
            torch.cuda.synchronize(X.device)

    t0 = time.perf_counter()
    run.propose(X[:n], Y[:n], bounds, q, 0, options)
    sync()
    first = time.perf_counter() - t0
    profiler = cProfile.Profile() if profile_top else None
    with OtherCPU() as other:
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        proposal = run.propose(X, Y, bounds, q, 0, options)
        cand = proposal.candidates
        sync()
        if profiler is not None:
            profiler.disable()
        step = time.perf_counter() - t0
    if profiler is not None:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).sort_stats("cumulative")
        stats.print_stats(profile_top)
        print(text.getvalue(), file=sys.stderr)
    if cand.device != X.device:
        raise RuntimeError(f"candidates on {cand.device}, data on {X.device}")
    diag = proposal.diagnostics
    return {
        "method": method,
        "n": n,
        "q": q,
        "first_step_s": round(first, 2),
        "step_s": round(step, 2),
        "fit_steps": diag.get("fit_steps"),
        "fit_elbo": diag.get("elbo"),
        "eulbo_steps": diag.get("eulbo_steps"),
        "w_moved": diag.get("w_moved"),
        "noise": diag.get("noise"),
        "device": torch.cuda.get_device_name(X.device) if X.is_cuda else "cpu",
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "other_cpu": str(other),
        "environment": environment(),
    }


def from_state(
    path: str,
    n: int | None,
    profile_top: int = 0,
    eulbo_options: str = "stored",
    device: str = "cpu",
    fit_max_iter: int | None = None,
) -> dict:
    import dataclasses

    import torch

    from botorch_ext.eulbo import EULBOOptions
    from botorch_ext.runner.options import MethodOptions
    from botorch_ext.runner.problems import get_problem

    sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
    from common import OtherCPU, environment

    torch.set_num_threads(1)
    # map_location moves every stored tensor, the carried model's included.
    state = torch.load(path, weights_only=False, map_location=device)
    X, Y, run = state["X"][:n], state["Y"][:n], state["method"]
    if eulbo_options == "turbo":
        if run.preset is not None:
            raise SystemExit("--eulbo-options turbo: not a run of the package's arms")
        run.base_options = EULBOOptions.turbo()
    if fit_max_iter is not None:
        if run.preset is not None:
            raise SystemExit("--fit-max-iter: not a run of the package's arms")
        # The budget of the fit at any n (all the data or the subset).
        elbo = dataclasses.replace(
            run.base_options.elbo, lbfgs_max_iter=fit_max_iter, subset_max_iter=None
        )
        run.base_options = run.base_options.replace(elbo=elbo)
    bounds = get_problem("rover").bounds.to(X)
    options = MethodOptions(num_restarts=10, raw_samples=256, num_inducing_points=100)
    profiler = cProfile.Profile() if profile_top else None
    with OtherCPU() as other:
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        proposal = run.propose(X, Y, bounds, 20, 0, options)
        if X.is_cuda:
            torch.cuda.synchronize(X.device)
        if profiler is not None:
            profiler.disable()
        step, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(
            profile_top
        )
        print(text.getvalue(), file=sys.stderr)
    import botorch_ext

    return {
        "state": os.path.basename(path),
        "n": X.shape[0],
        "code": os.path.dirname(os.path.dirname(botorch_ext.__file__)),
        "step_s": round(step, 3),
        "step_cpu_s": round(cpu, 3),
        "eulbo_options": eulbo_options,
        "fit_max_iter": _fit_budget(run.base_options, X.shape[0]),
        "device": torch.cuda.get_device_name(X.device) if X.is_cuda else "cpu",
        "fit_s": round(proposal.fit_seconds, 3),
        "fit_steps": proposal.diagnostics.get("fit_steps"),
        "fit_elbo": proposal.diagnostics.get("elbo"),
        "candidates_sum": proposal.candidates.sum().item(),
        "other_cpu": str(other),
        "environment": environment(),
    }


def _fit_budget(options, n: int) -> int:
    r"""The L-BFGS budget of the carried ELBO fit of a step on ``n`` points."""
    import torch

    from botorch_ext.eulbo.fit import lbfgs_budget

    subset = options.elbo.optimizer == "auto" and n > options.lbfgs_max_n
    return lbfgs_budget(options, torch.arange(1) if subset else None)


def _worker(argv: list[str], label: str) -> tuple[dict, str] | None:
    r"""Run this script with ``argv`` in a fresh one-thread process: its row, stderr."""
    out = subprocess.run(
        [sys.executable, __file__, *argv],
        capture_output=True,
        text=True,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
    )
    if out.returncode != 0:
        print(f"{label} failed:\n{out.stderr[-2000:]}", flush=True)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="1000,2000,5000,10000")
    parser.add_argument("--methods", default="turbo-elbo-svgp,turbo-eulbo-ei,turbo")
    parser.add_argument("--exact-max-n", type=int, default=2000)
    parser.add_argument("--q", type=int, default=20)
    parser.add_argument(
        "--output", default=os.path.join(HERE, "results/adam-fit/step_cost.csv")
    )
    parser.add_argument(
        "--device", default="cpu", help="torch device of the data and models (cuda)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # worker: method:n
    parser.add_argument(
        "--quick", action="store_true", help="smoke mode: n = 150, 300, q = 4"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the timed step"
    )
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument(
        "--state", help="a runner's resume file (OUT/state/*.pt): time its next step"
    )
    parser.add_argument("--state-n", type=int, help="keep the first N stored points")
    parser.add_argument("--repeats", type=int, default=3, help="with --state")
    parser.add_argument(
        "--eulbo-options",
        choices=("stored", "turbo"),
        default="stored",
        help="with --state: the run's own settings or EULBOOptions.turbo()",
    )
    parser.add_argument(
        "--fit-max-iter",
        type=int,
        help="with --state: the carried ELBO fit's L-BFGS budget for the step",
    )
    args = parser.parse_args()
    top = args.profile_top if args.profile else 0
    if args.state:
        if args.one:
            row = from_state(
                args.state,
                args.state_n,
                top,
                args.eulbo_options,
                args.device,
                args.fit_max_iter,
            )
            print(json.dumps(row))
            return
        sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
        from common import append_csv_row

        worker = ["--one", "state", "--state", args.state]
        worker += ["--state-n", str(args.state_n)] if args.state_n else []
        worker += ["--eulbo-options", args.eulbo_options, "--device", args.device]
        if args.fit_max_iter is not None:
            worker += ["--fit-max-iter", str(args.fit_max_iter)]
        worker += ["--profile", "--profile-top", str(top)] if top else []
        for _ in range(args.repeats):
            done = _worker(worker, f"step from {args.state}")
            if done is None:
                continue
            row, stderr = done
            append_csv_row(args.output, row)
            print(
                f"n={row['n']} step {row['step_s']} s, CPU {row['step_cpu_s']} s, "
                f"fit budget {row['fit_max_iter']}, fit {row['fit_s']} s "
                f"({row['fit_steps']} steps, ELBO "
                f"{row['fit_elbo']}), other CPU {row['other_cpu']}, "
                f"code {row['code']}",
                flush=True,
            )
            if top:
                print(stderr, flush=True)
        return
    if args.quick:
        args.ns, args.q, args.exact_max_n = "150,300", 4, 150
        # A smoke run never appends to the recorded results.
        args.output = os.path.join(tempfile.gettempdir(), "eulbo_step_cost_quick.csv")
    if args.one:
        method, n = args.one.rsplit(":", 1)  # the method may be module:attribute
        print(json.dumps(one(method, int(n), args.q, args.device, top)))
        return
    sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/
    from common import append_csv_row

    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    for n in [int(v) for v in args.ns.split(",")]:
        for method in args.methods.split(","):
            if method == "turbo" and n > args.exact_max_n:
                continue
            argv = ["--one", f"{method}:{n}", "--q", str(args.q)]
            argv += ["--device", args.device]
            if args.profile:
                argv += ["--profile", "--profile-top", str(args.profile_top)]
            done = _worker(argv, f"{method} n={n}")
            if done is None:
                continue
            row, stderr = done
            append_csv_row(args.output, row)
            print(
                f"{method:<16} n={n:>6}  step {row['step_s']:>7.1f} s  first "
                f"{row['first_step_s']:>7.1f} s  fit steps {row['fit_steps']}  "
                f"peak {row['peak_rss_mb']} MB  other CPU {row['other_cpu']}",
                flush=True,
            )
            if args.profile:
                print(stderr, flush=True)


if __name__ == "__main__":
    main()
