r"""Whether two versions of ``qES`` propose the same points on the states of a BO run.

For each seed and each ``--n`` of a runner results.csv, fits the runner's model to
the seed's first ``n`` evaluations, builds the acquisition's arguments once with
this checkout's input constructor, and maximizes ``qES`` of this checkout and of
``--old-src`` (another checkout or an export of an older commit, whose
``botorch_ext/acquisition/entropy_search.py`` is loaded from its path) with the
same ``optimize_acqf`` call and torch seed. Prints the largest coordinate
difference of the two candidates and each function's value at both candidates.

Usage:
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/reparam_acq/qes_same_steps.py \
        RESULTS_CSV --old-src /tmp/export-969ea90 --seeds 5 --n 10,15,20,25,30
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import warnings

import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset

from botorch_ext.acquisition import qES
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.protocol import MethodOptions


def _old_qes(src: str) -> type:
    path = os.path.join(src, "botorch_ext", "acquisition", "entropy_search.py")
    spec = importlib.util.spec_from_file_location("old_entropy_search", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.qES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results")
    parser.add_argument("--old-src", required=True)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n", default="10,15,20,25,30")
    args = parser.parse_args()
    torch.set_num_threads(1)
    old_cls = _old_qes(args.old_src)
    with open(args.results) as f:
        rows = list(csv.DictReader(f))
    d = int(rows[0]["dim"])
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
    names = [f"x{i}" for i in range(d)]
    for seed in range(args.seeds):
        run = [r for r in rows if int(r["seed"]) == seed]
        run = sorted(run, key=lambda r: int(r["n_evals"]))
        for n in (int(k) for k in args.n.split(",")):
            X = torch.tensor(
                [[float(r[k]) for k in names] for r in run[:n]], dtype=torch.double
            )
            Y = torch.tensor(
                [[-float(r["value"])] for r in run[:n]], dtype=torch.double
            )
            torch.manual_seed(seed)
            model = fit_model(X, Y, MethodOptions())
            data = SupervisedDataset(X, Y, feature_names=names, outcome_names=["y"])
            kwargs = get_acqf_input_constructor(qES)(
                model=model, training_data=data, bounds=pairs, seed=seed
            )
            acqfs = {"old": old_cls(**kwargs), "new": qES(**kwargs)}
            cands = {}
            for name, acqf in acqfs.items():
                torch.manual_seed(123)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cands[name], _ = optimize_acqf(
                        acqf, bounds=bounds, q=1, num_restarts=10, raw_samples=512
                    )
            with torch.no_grad():
                vals = {
                    f: [acqfs[f](cands[c]).item() for c in ("old", "new")]
                    for f in acqfs
                }
            dx = (cands["old"] - cands["new"]).abs().max().item()
            print(
                f"seed {seed} n {n}: |dx| {dx:.2e}  old qES at (old, new) "
                f"{vals['old'][0]:.6f} {vals['old'][1]:.6f}  new qES at (old, new) "
                f"{vals['new'][0]:.6f} {vals['new'][1]:.6f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
