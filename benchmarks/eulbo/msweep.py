r"""EULBO against ELBO under identical pipelines: the m-sweep and the rover runs.

Runs the runner's SVGP methods (``elbo-svgp``, ``eulbo-ei``, ``eulbo-kg`` and
their ``turbo-*`` versions, or any registered method) in a plain BO loop and
writes one row per BO step as it goes: the best value so far (minimization
sign), the seconds of the step, and the model's diagnostics after the step
(fitted noise, how far the joint phase moved the candidates and ``w``, the
utility's share of the EULBO gradient, the EULBO at the warm start and at the
returned state). Pairs share the seed, so the initial design (``--n-init``
uniform points) and every step's seed are the same for both methods.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/msweep.py --problem hartmann6 \
        --methods elbo-svgp,eulbo-ei --m 25 --seeds 0,1,2 --budget 200 \
        --output runs/msweep/hartmann6.csv
    python benchmarks/eulbo/msweep.py --summary runs/msweep/hartmann6.csv --at 200

The summary reports, for the runs that reached ``--at`` evaluations, the best
value (mean, standard error, the paired difference to the ELBO method and its
per-seed values), and the evidence of the joint phase from the steps with
``--after`` < n <= ``--at`` evaluations (medians per step; the number of joint
phases and how many raised the EULBO; hours per run).

A (method, m, seed) whose rows already reach ``--budget`` in ``--output`` is
skipped. With ``--checkpoint DIR`` every step also saves the run's data and its
method state (the carried SVGP, the trust region) to ``DIR``, and an unfinished
run continues from its last checkpoint, exactly as the uncut run would have
gone on (every step seeds itself from the seed and ``n``); a run with a larger
``--budget`` extends a finished one the same way. Without a checkpoint an
unfinished run starts again. Rows already in ``--output`` are never written twice.

``NAME@authors`` runs ``NAME`` with the authors' per-datum ELBO scaling,
``NAME@vi`` with a joint phase that refines only ``q(u)`` and the inducing
points.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import os
import statistics
import time
from collections import defaultdict
from typing import TextIO

FIELDS = [
    "problem", "method", "m", "seed", "n_evals", "best_value", "step_seconds",
    "noise", "moved", "w_moved", "utility_gradient_share", "warm_start_eulbo",
    "eulbo", "eulbo_steps", "utility", "warm_start_utility",
]  # fmt: skip


def run(args, method: str, m: int, seed: int, writer, handle, written=()) -> None:
    import torch

    from botorch_ext.runner.options import MethodOptions
    from botorch_ext.runner.problems import get_problem

    torch.set_num_threads(1)
    problem = get_problem(args.problem)
    checkpoint = None
    if args.checkpoint:
        name = f"{args.problem}-{method}-m{m}-s{seed}-init{args.n_init}-q{args.q}.pt"
        checkpoint = os.path.join(args.checkpoint, name)
    if checkpoint and os.path.exists(checkpoint):
        state = torch.load(checkpoint, weights_only=False)
        X, Y, step = state["X"], state["Y"], state["step"]
    else:
        gen = torch.Generator().manual_seed(seed)
        X = torch.rand(args.n_init, problem.dim, generator=gen, dtype=torch.double)
        lower, upper = problem.bounds
        X = lower + (upper - lower) * X
        Y = -problem(X).unsqueeze(-1)
        step = _method(method).new_run()
    options = MethodOptions(num_restarts=10, raw_samples=256, num_inducing_points=m)
    while X.shape[0] < args.budget:
        q = min(args.q, args.budget - X.shape[0])
        tic = time.perf_counter()
        proposal = step.propose(X, Y, problem.bounds, q, seed, options)
        seconds = time.perf_counter() - tic
        cand = proposal.candidates
        X = torch.cat([X, cand])
        Y = torch.cat([Y, -problem(cand).unsqueeze(-1)])
        diag = proposal.diagnostics or {}
        row = {
            "problem": args.problem, "method": method, "m": m, "seed": seed,
            "n_evals": X.shape[0], "best_value": -Y.max().item(),
            "step_seconds": round(seconds, 3),
        }  # fmt: skip
        for key in FIELDS[7:]:
            row[key] = diag.get(key)
        if (method, m, seed, X.shape[0]) not in written:
            writer.writerow(row)
            handle.flush()
        if checkpoint:
            # Written after the row: a cut between the two repeats this step
            # on resume, with the same row (not written again).
            tmp = checkpoint + ".tmp"
            torch.save({"X": X, "Y": Y, "step": step}, tmp)
            os.replace(tmp, checkpoint)


def _method(name: str):
    r"""A registered method, or ``NAME@authors``: the same with the per-datum
    ELBO of the authors' code (``EULBO(elbo_scale="mean")``)."""
    import copy
    import dataclasses

    from botorch_ext.eulbo import EULBO, EULBOOptions
    from botorch_ext.runner.methods import get_method

    if name.endswith("@authors"):
        method = copy.copy(get_method(name.removesuffix("@authors")))
        method.objective = EULBO(elbo_scale="mean")
        return method
    if name.endswith("@vi"):
        # The joint phase refines q(u) and Z only; the hyperparameters keep
        # the ELBO fit's values (Figure 3 of the paper).
        method = copy.copy(get_method(name.removesuffix("@vi")))
        options = method.options or EULBOOptions()
        joint = dataclasses.replace(
            options.joint, parameters=("variational", "inducing_points")
        )
        method.options = options.replace(joint=joint)
        return method
    return get_method(name)


def open_rows(path: str) -> TextIO:
    r"""``path`` for reading, or ``path + ".gz"`` where only that exists.

    The stored results of ``benchmarks/eulbo/results/msweep/`` are gzipped; the
    commands that name them keep naming the ``.csv`` files.
    """
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt", newline="")
    return open(path, newline="")


def _written(path: str) -> set:
    r"""``(method, m, seed, n_evals)`` of the rows in ``path``."""
    if not os.path.exists(path) and not os.path.exists(path + ".gz"):
        return set()
    with open_rows(path) as handle:
        return {
            (r["method"], int(r["m"]), int(r["seed"]), int(r["n_evals"]))
            for r in csv.DictReader(handle)
        }


def _done(path: str, budget: int) -> set:
    return {(method, m, seed) for method, m, seed, n in _written(path) if n >= budget}


def summary(path: str, at: int, markdown: bool = False, after: int = 0) -> None:
    rows = []
    for p in path.split(","):
        with open_rows(p) as handle:
            rows += list(csv.DictReader(handle))
    if after >= at:
        raise ValueError(f"`after` ({after}) must be below `at` ({at}).")
    final = {}
    seconds: dict = defaultdict(float)
    for r in rows:
        key = (r["problem"], int(r["m"]), r["method"], int(r["seed"]))
        if int(r["n_evals"]) == at:  # runs that reached the checkpoint
            final[key] = float(r["best_value"])
        if int(r["n_evals"]) <= at:
            seconds[key] += float(r["step_seconds"])
    groups: dict = defaultdict(dict)
    for (prob, m, method, seed), v in final.items():
        groups[(prob, m)].setdefault(method, {})[seed] = v

    def mse(xs):
        mu = sum(xs) / len(xs)
        if len(xs) < 2:
            return mu, float("nan")
        var = sum((x - mu) ** 2 for x in xs) / (len(xs) - 1)
        return mu, math.sqrt(var / len(xs))

    evidence: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if not after < int(r["n_evals"]) <= at:
            continue
        key = (r["problem"], int(r["m"]), r["method"])
        for col in ("moved", "w_moved", "utility_gradient_share", "noise"):
            if r[col] not in ("", "None"):
                evidence[key][col].append(float(r[col]))
        cols = ("utility", "warm_start_utility", "eulbo", "warm_start_eulbo")
        if all(r[c] not in ("", "None") for c in cols):
            d_util = float(r["utility"]) - float(r["warm_start_utility"])
            d_eulbo = float(r["eulbo"]) - float(r["warm_start_eulbo"])
            # utility_weight is 1 in every method run here.
            evidence[key]["d_utility"].append(d_util)
            evidence[key]["d_elbo"].append(d_eulbo - d_util)
            evidence[key]["gain"].append(d_eulbo)
        if int(r["n_evals"]) == at and r["noise"] not in ("", "None"):
            evidence[key]["final_noise"].append(float(r["noise"]))

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else float("nan")

    def cell(xs, spec):
        return format(med(xs), spec) if xs else ""

    if markdown:
        print(
            "| problem, m | method | seeds | best value at "
            f"{at}, mean +/- s.e. | per seed | paired - ELBO (better in) | "
            "x moved | w moved | d utility | d ELBO | final noise |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for (prob, m), by_method in sorted(groups.items()):
            base = by_method.get("elbo-svgp") or by_method.get("turbo-elbo-svgp")
            for method, seeds in sorted(by_method.items()):
                mu, se = mse(list(seeds.values()))
                per = " / ".join(f"{seeds[k]:.3f}" for k in sorted(seeds))
                paired = ""
                if base is not None and seeds is not base:
                    common = sorted(set(seeds) & set(base))
                    if common:
                        d = [seeds[k] - base[k] for k in common]
                        dmu, dse = mse(d)
                        wins = sum(x < 0 for x in d)
                        paired = f"{dmu:+.3f} +/- {dse:.3f} ({wins} of {len(d)})"
                ev = evidence[(prob, m, method)]
                print(
                    f"| {prob}, {m} | `{method}` | {len(seeds)} | {mu:.3f} +/- "
                    f"{se:.3f} | {per} | {paired} | {cell(ev['moved'], '.3g')} | "
                    f"{cell(ev['w_moved'], '.3g')} | {cell(ev['d_utility'], '+.3g')} | "
                    f"{cell(ev['d_elbo'], '+.3g')} | {cell(ev['final_noise'], '.3g')} |"
                )
        return

    for (prob, m), by_method in sorted(groups.items()):
        print(f"{prob} m={m} at {at}:")
        for method, seeds in sorted(by_method.items()):
            mu, se = mse(list(seeds.values()))
            ev = evidence[(prob, m, method)]
            print(
                f"  {method:22s} n={len(seeds):2d} {mu:.3f} ± {se:.3f}  "
                f"median per step: x moved {med(ev['moved']):.3g}, "
                f"|dw| {med(ev['w_moved']):.3g}, "
                f"utility share {med(ev['utility_gradient_share']):.3g}, "
                f"d utility {med(ev['d_utility']):+.3g}, "
                f"d ELBO {med(ev['d_elbo']):+.3g}; "
                f"final noise median {med(ev['final_noise']):.3g}"
            )
            hours = [seconds[(prob, m, method, s)] / 3600 for s in seeds]
            print(
                f"  {'':22s} hours per run {statistics.mean(hours):.2f}, "
                f"noise median per step {med(ev['noise']):.3g}"
            )
            if ev["gain"]:
                gain = ev["gain"]
                print(
                    f"  {'':22s} joint phases {len(gain)}, EULBO rose in "
                    f"{sum(g > 0 for g in gain)}, smallest gain {min(gain):.2g}, "
                    f"median gain {statistics.median(gain):.3g}"
                )
        base = by_method.get("elbo-svgp") or by_method.get("turbo-elbo-svgp")
        for method, seeds in sorted(by_method.items()):
            if base is None or seeds is base:
                continue
            common = sorted(set(seeds) & set(base))
            if len(common) >= 2:
                d = [seeds[s] - base[s] for s in common]
                mu, se = mse(d)
                wins = sum(x < 0 for x in d)
                print(
                    f"  paired {method} - ELBO: {mu:+.3f} ± {se:.3f} "
                    f"(n={len(d)}, {method} better in {wins}); per seed "
                    f"{', '.join(f'{x:+.3f}' for x in d)}, median "
                    f"{statistics.median(d):+.3f}"
                )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", default="hartmann6")
    p.add_argument("--methods", default="elbo-svgp,eulbo-ei")
    p.add_argument("--m", default="25")
    p.add_argument("--seeds", default="0")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--n-init", type=int, default=100)
    p.add_argument("--q", type=int, default=1)
    p.add_argument("--output")
    p.add_argument("--checkpoint", help="folder of per-run checkpoints (resume)")
    p.add_argument("--summary")
    p.add_argument("--at", type=int, default=300)
    p.add_argument(
        "--after", type=int, default=0, help="evidence from steps past this n only"
    )
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    if args.summary:
        summary(args.summary, args.at, args.markdown, args.after)
        return
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    new = not os.path.exists(args.output)
    done = _done(args.output, args.budget)
    written = _written(args.output)
    if args.checkpoint:
        os.makedirs(args.checkpoint, exist_ok=True)
    with open(args.output, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for m in [int(v) for v in args.m.split(",")]:
            for seed in [int(v) for v in args.seeds.split(",")]:
                for method in args.methods.split(","):
                    if (method, m, seed) not in done:
                        run(args, method, m, seed, writer, handle, written)


if __name__ == "__main__":
    main()
