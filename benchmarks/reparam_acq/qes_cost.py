r"""Acquisition seconds per BO iteration of ``qES`` against BoTorch's max-value
entropy searches, on identical data.

For each seed, a ``SingleTaskGP`` (BoTorch's defaults, Standardize) is fitted to
``--n`` scrambled-Sobol points of the problem; then each configuration builds its
acquisition with its registered input constructor (as the runner does) and runs
``optimize_acqf(num_restarts=10, raw_samples=512)`` at the given q (MES and GIBBON
sequentially, as the runner's ``qmes``/``gibbon``). Configurations run back to
back in a rotating order in each repeat, so a busy machine slows all of them
alike; the script reports the median CPU seconds of this process (one torch
thread: robust to time-slicing with other processes) of each and the median of
the per-repeat ratios to GIBBON.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/reparam_acq/qes_cost.py \
        --problem hartmann6 --q 1 \
        --configs gibbon,qmes,qes,qes:t1664,qes:ei --repeats 5

``qes+ftol`` (with any ``:NAME``) stops ``optimize_acqf``'s L-BFGS-B at ``ftol``
1e-6 (``options={"ftol": 1e-6, "factr": None}``, the runner ablation
``benchmarks.reparam_acq.qes_speed:qes_ftol``).

``--states RESULTS_CSV`` takes each seed's data from a run of the runner (its
first ``--n`` evaluated points, e.g. the incumbent-heavy states of a BO run)
instead of Sobol points; ``--states-method NAME`` picks the runs of one method
where the file holds several (a ``compare`` output), and is required there.

``--profile`` additionally profiles one more call of each configuration (cProfile
with this process's CPU clock, so that other processes' load does not enter;
after the timed repeats, on the last seed's data) and prints its top functions by
cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import pstats
import statistics
import time
import warnings

import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.max_value_entropy_search import (
    qLowerBoundMaxValueEntropy,
    qMaxValueEntropy,
)
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_ext.acquisition import qES
from botorch_ext.runner.problems import get_problem

#: ``qes:NAME`` options (``construct_inputs_qES`` arguments, explicit so that an
#: option does not change with the constructor's defaults; ``qes`` alone is the
#: constructor's defaults, i.e. the runner's ``qes``: Thompson, 32 / 128).
#: The representer count and pool before the defaults changed to 48 from 512 +
#: 256 (64 from ``max(1024, 16 m)`` Sobol + 512 around the best): ``qes:f32j128``
#: is the old defaults.
_THOMPSON = {
    "representer_scheme": "thompson",
    "num_around_best": 512,
    "num_representer_points": 64,
    "num_candidates": 1024,
}
QES_OPTIONS = {
    "": {},
    "t1664": {**_THOMPSON, "num_fantasies": 16, "num_inner_samples": 64},
    "ei": {
        "representer_scheme": "ei",
        "num_around_best": 0,
        "num_representer_points": 64,
        "num_candidates": 1024,
        "num_fantasies": 16,
        "num_inner_samples": 64,
    },
    "f8j32": {**_THOMPSON, "num_fantasies": 8, "num_inner_samples": 32},
    "f32j128": {**_THOMPSON, "num_fantasies": 32, "num_inner_samples": 128},
    "f64j256": {**_THOMPSON, "num_fantasies": 64, "num_inner_samples": 256},
    "m32": {**_THOMPSON, "num_representer_points": 32},
    "pool1536": {**_THOMPSON, "num_candidates": 1024},
    "pool768": {"representer_scheme": "thompson", "num_around_best": 256,
                "num_candidates": 512, "num_representer_points": 64},
    "pool768m32": {"representer_scheme": "thompson", "num_around_best": 256,
                   "num_candidates": 512, "num_representer_points": 32},
    "pool768m48": {"representer_scheme": "thompson", "num_around_best": 256,
                   "num_candidates": 512, "num_representer_points": 48},
}  # fmt: skip


def _time_config(config: str, model, data, bounds, q: int) -> float:
    name, _, option = config.partition(":")
    name, ftol, _ = name.partition("+ftol")
    # "+ftol": L-BFGS-B stopped at ftol 1e-6 (qes_speed.qes_ftol's options).
    options = {"ftol": 1e-6, "factr": None} if ftol else None
    pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
    tic = time.process_time()
    if name == "qes":
        kwargs = get_acqf_input_constructor(qES)(
            model=model, training_data=data, bounds=pairs, **QES_OPTIONS[option]
        )
        acqf, sequential = qES(**kwargs), False
    else:
        kwargs = get_acqf_input_constructor(qMaxValueEntropy)(
            model=model, training_data=data, bounds=pairs
        )
        cls = qLowerBoundMaxValueEntropy if name == "gibbon" else qMaxValueEntropy
        acqf, sequential = cls(**kwargs), True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        optimize_acqf(
            acqf,
            bounds=bounds,
            q=q,
            num_restarts=10,
            raw_samples=512,
            sequential=sequential,
            options=options,
        )
    return time.process_time() - tic


def _run_state(
    path: str, seed: int, n: int, dim: int, method: str | None = None
) -> tuple[Tensor, Tensor]:
    r"""The first ``n`` points of seed ``seed`` of one run in a runner results.csv.

    ``method`` names the run where the file holds several methods' runs (a
    ``compare`` output): their rows share seeds and evaluation counts, so taking
    rows by seed alone would mix the runs (and repeat their common initial
    points). Values are negated (BoTorch maximizes).
    """
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if int(r["seed"]) == seed]
    methods = sorted({r["method"] for r in rows})
    if method is None and len(methods) > 1:
        raise ValueError(
            f"{path} holds the runs of several methods {methods}: name one with "
            "--states-method."
        )
    if method is not None:
        if method not in methods:
            raise ValueError(
                f"--states-method {method!r} has no run of seed {seed} in {path} "
                f"(its methods: {methods})."
            )
        rows = [r for r in rows if r["method"] == method]
    rows = sorted(rows, key=lambda r: int(r["n_evals"]))[:n]
    if len(rows) < n:
        raise ValueError(f"{path} has {len(rows)} rows of seed {seed}, not {n}")
    X = [[float(r[f"x{i}"]) for i in range(dim)] for r in rows]
    Y = [[-float(r["value"])] for r in rows]
    return torch.tensor(X, dtype=torch.double), torch.tensor(Y, dtype=torch.double)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", default="hartmann6")
    parser.add_argument("--dim", type=int, default=None, help="scalable problems")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--q", type=int, default=1)
    parser.add_argument("--configs", default="gibbon,qmes,qes")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile one more call of each configuration (top functions by "
        "cumulative time)",
    )
    parser.add_argument("--top", type=int, default=25, help="rows per profile")
    parser.add_argument(
        "--states",
        default=None,
        help="a runner results.csv: each seed's data are its first --n evaluated "
        "points there (states of a BO run) instead of --n Sobol points",
    )
    parser.add_argument(
        "--states-method",
        default=None,
        help="the method whose runs give the states, where --states holds several",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = get_problem(args.problem, args.dim)
    bounds = torch.stack([torch.zeros(problem.dim), torch.ones(problem.dim)]).double()
    configs = args.configs.split(",")
    seconds = {c: [] for c in configs}
    ratios = {c: [] for c in configs}
    for seed in range(args.seeds):
        if args.states is None:
            X = draw_sobol_samples(bounds, n=args.n, q=1, seed=seed).squeeze(-2)
            Y = -problem(X).unsqueeze(-1)  # maximize
        else:
            X, Y = _run_state(
                args.states, seed, args.n, problem.dim, args.states_method
            )
        model = SingleTaskGP(X, Y, outcome_transform=Standardize(1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        data = SupervisedDataset(
            X,
            Y,
            feature_names=[f"x{i}" for i in range(problem.dim)],
            outcome_names=["y"],
        )
        for repeat in range(args.repeats):
            shift = (seed * args.repeats + repeat) % len(configs)
            order = configs[shift:] + configs[:shift]
            torch.manual_seed(repeat)
            got = {c: _time_config(c, model, data, bounds, args.q) for c in order}
            for c in configs:
                seconds[c].append(got[c])
                if "gibbon" in got:
                    ratios[c].append(got[c] / got["gibbon"])
    print(f"{args.problem} q={args.q} n={args.n}: median s (median ratio to gibbon)")
    for c in configs:
        ratio = statistics.median(ratios[c]) if ratios[c] else float("nan")
        print(f"  {c:14s} {statistics.median(seconds[c]):7.3f}  ({ratio:.2f}x)")
    if args.profile:
        for c in configs:
            profiler = cProfile.Profile(time.process_time)
            torch.manual_seed(0)
            profiler.enable()
            _time_config(c, model, data, bounds, args.q)
            profiler.disable()
            print(f"\n=== profile of {c} (top {args.top} by cumulative time) ===")
            stats = pstats.Stats(profiler).strip_dirs().sort_stats("cumulative")
            stats.print_stats(args.top)


if __name__ == "__main__":
    main()
