r"""Screen ``qES`` settings on the runner's pipeline, one change at a time.

Each variant is the runner's ``qes`` method (``botorch-ext run --method qes``:
SingleTaskGP with BoTorch's defaults refitted each iteration, Standardize,
``optimize_acqf`` with 10 restarts and 512 raw samples, 10 Sobol points) with
some of ``construct_inputs_qES``'s arguments changed. Rows go to
``OUT/PROBLEM-qQ/VARIANT/seedS.csv`` (the runner's schema, flushed per
evaluation); finished runs are skipped and cut ones continue from their stored
rows (the runner's resume), so a cut screen is resumed by running the same
command again.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/reparam_acq/qes_variants.py \
        --variants base,thompson \
        --seeds 0-9 --problem hartmann6 --budget 40 --q 1 --out DIR
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import torch

from botorch_ext.acquisition import qES
from botorch_ext.runner.acquisition import acquisition_method
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.methods import register_method
from botorch_ext.runner.protocol import Proposal
from botorch_ext.runner.schema import parse_row

#: Each variant's ``construct_inputs_qES`` arguments, all explicit so that a
#: variant does not change when the constructor's defaults do (``base`` was the
#: constructor's old default; ``thompson-f32j128`` its defaults until the
#: representer count and pool became 48 from 512 Sobol + 256 around-best points).
#: ``_OLD`` and ``_POOL`` hold the representer count and pool these variants ran
#: with (the defaults then: 64 points, ``max(1024, 16 m)`` Sobol candidates).
_OLD = {
    "num_fantasies": 16,
    "num_inner_samples": 64,
    "num_representer_points": 64,
    "num_candidates": 1024,
}
_THOMPSON = {"representer_scheme": "thompson", "num_around_best": 512}
_POOL = {"num_representer_points": 64, "num_candidates": 1024}
VARIANTS: dict[str, dict] = {
    "base": {"representer_scheme": "ei", "num_around_best": 0, **_OLD},
    "around": {"representer_scheme": "ei", "num_around_best": 512, **_OLD},
    "thompson": {**_THOMPSON, **_OLD},
    "thompson-nb": {"representer_scheme": "thompson", "num_around_best": 0, **_OLD},
    "thompson-128": {
        **_THOMPSON,
        **_OLD,
        "num_representer_points": 128,
        "num_candidates": 2048,
    },
    "thompson-tau0.1": {**_THOMPSON, **_OLD, "tau_scale": 0.1},
    "thompson-tau0.001": {**_THOMPSON, **_OLD, "tau_scale": 0.001},
    "thompson-f8j32": {
        **_THOMPSON,
        **_POOL,
        "num_fantasies": 8,
        "num_inner_samples": 32,
    },
    "thompson-f32j128": {
        **_THOMPSON,
        **_POOL,
        "num_fantasies": 32,
        "num_inner_samples": 128,
    },
}


def _seeds(spec: str) -> list[int]:
    if "-" in spec:
        lo, hi = spec.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in spec.split(",")]


class ScaledTau:
    r"""qES with ``tau`` relative to the training outcomes' std (a runner method).

    As the constructor scales its 0.01; the acquisition is built per proposal,
    since the std changes every iteration. Stateless: its runs are itself.
    """

    model_based = True
    sequential = False
    gaussian_posterior = False
    standardizes_outcomes = False
    carries_state = False

    def __init__(self, kwargs: dict, tau_scale: float) -> None:
        self.kwargs, self.tau_scale = kwargs, tau_scale

    def new_run(self) -> ScaledTau:
        return self

    def propose(self, train_X, train_Y, bounds, q, seed, options) -> Proposal:
        tau = self.tau_scale * train_Y.std().item()
        inner = acquisition_method(qES, **self.kwargs, tau=tau)
        return inner.new_run().propose(train_X, train_Y, bounds, q, seed, options)


def _method(kwargs: dict):
    kwargs = dict(kwargs)
    tau_scale = kwargs.pop("tau_scale", None)
    if tau_scale is None:
        return acquisition_method(qES, **kwargs)
    return ScaledTau(kwargs, tau_scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="base")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--problem", default="hartmann6")
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--q", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/reparam_acq/results/qes/variants")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for variant in args.variants.split(","):
        name = f"qes-{variant}"
        register_method(name, _method(VARIANTS[variant]), replace=True)
        folder = os.path.join(args.out, f"{args.problem}-q{args.q}", variant)
        os.makedirs(folder, exist_ok=True)
        for seed in _seeds(args.seeds):
            path = os.path.join(folder, f"seed{seed}.csv")
            stored = []
            if os.path.exists(path):
                with open(path) as f:
                    stored = [parse_row(r) for r in csv.DictReader(f)]
            if len(stored) >= args.budget:
                continue
            config = RunConfig(
                args.problem, name, budget=args.budget, q=args.q, seed=seed
            )
            tic = time.time()
            with open(path, "a", newline="") as f:
                writer = None

                def on_row(row, f=f, header=not stored):
                    nonlocal writer
                    if writer is None:
                        writer = csv.DictWriter(f, fieldnames=list(row))
                        if header:
                            writer.writeheader()
                    writer.writerow(row)
                    f.flush()

                rows = run_bo(config, on_row=on_row, stored_rows=stored or None)
            best = min(float(r["best_value"]) for r in rows)
            print(f"{variant} seed {seed}: best {best:.4f} ({time.time() - tic:.0f} s)")


if __name__ == "__main__":
    main()
