r"""Where does a warm-started BOCK fit end, against a cold fit on the same data?

Replays a warm-started run of the runner (``results.csv`` of a ``compare`` or
``run`` with a warm-started ablation, e.g. ``bock_warm_fresh_noise``): for each
of its states (the first ``n`` evaluated points) it fits the run's kernel twice
with the runner's ``fit_model`` (MAP, Bilog + Standardize, the given L-BFGS-B
``ftol``),

- *warm*: started at the previous state's warm fit, except the noise (the chain
  the run's method follows; its fits are recomputed here, so the chain is the
  run's own up to the run's CPU's rounding);
- *cold*: from the kernel's initial values (what the runner's ``bock`` does),

and prints, at the chosen ``n``, the fitted log marginal likelihood per point of
each (the same objective: higher is the better optimum) and the angular weights.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bock/warm_vs_cold_fits.py RESULTS_CSV \
        --method benchmarks.bock.ablations:bock_warm_fresh_noise --kernel bock \
        --seeds 0,1,2,3,4 --at 20,40,59
"""

from __future__ import annotations

import argparse
import csv

import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from benchmarks.bock.kernels import bock_square_kernel
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.options import MethodOptions

#: The kernels a replay can fit: the runner's ``bock`` and its square-weight form.
REPLAY_KERNELS = {"bock": "bock", "bock-square": bock_square_kernel}


def log_likelihood_per_point(model) -> float:
    r"""The model's exact log marginal likelihood per training point."""
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        return mll(model(*model.train_inputs), model.train_targets).item()


def run_states(rows: list[dict], method: str, seed: int) -> tuple:
    r"""The run's inputs and outcomes (maximization sign) in evaluation order.

    Args:
        rows: A runner ``results.csv``'s rows (``csv.DictReader``'s dicts).
        method: The run's method.
        seed: The run's seed.
    """
    run = sorted(
        (r for r in rows if r["method"] == method and int(r["seed"]) == seed),
        key=lambda r: int(r["n_evals"]),
    )
    if not run:
        methods = sorted({r["method"] for r in rows})
        raise ValueError(
            f"no rows of method {method!r} and seed {seed} (methods: {methods})."
        )
    columns = sorted(
        (c for c in run[0] if c.startswith("x") and c[1:].isdigit()),
        key=lambda c: int(c[1:]),
    )
    X = torch.tensor([[float(r[c]) for c in columns] for r in run], dtype=torch.float64)
    Y = -torch.tensor([float(r["value"]) for r in run], dtype=torch.float64)
    return X, Y.unsqueeze(-1)


def replay(X, Y, kernel, n_init: int, at: list[int], ftol: float) -> list[dict]:
    r"""Warm chain and cold fits at the states ``at``; one dict per state."""
    options = MethodOptions(outcome_transform="bilog")
    fit_options = {"ftol": ftol}
    start, out = None, []
    for n in range(n_init, max(at) + 1):
        warm = fit_model(
            X[:n],
            Y[:n],
            options,
            kernel=kernel,
            initial_hyperparameters=start,
            fit_options=fit_options,
        )
        start = {
            name: p.detach().clone()
            for name, p in warm.named_parameters()
            if "noise" not in name
        }
        if n in at:
            cold = fit_model(
                X[:n], Y[:n], options, kernel=kernel, fit_options=fit_options
            )
            out.append(
                {
                    "n": n,
                    "warm_ll": log_likelihood_per_point(warm),
                    "cold_ll": log_likelihood_per_point(cold),
                    "warm_weights": warm.covar_module.angular_weights.tolist(),
                    "cold_weights": cold.covar_module.angular_weights.tolist(),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a runner results.csv with the x columns")
    parser.add_argument("--method", required=True)
    parser.add_argument("--kernel", choices=sorted(REPLAY_KERNELS), default="bock")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--at", default="20,40,59", help="states n to compare at")
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--ftol", type=float, default=1e-6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with open(args.results, newline="") as f:
        rows = list(csv.DictReader(f))
    at = [int(v) for v in args.at.split(",")]
    for seed in (int(v) for v in args.seeds.split(",")):
        X, Y = run_states(rows, args.method, seed)
        if max(at) > len(X):
            raise ValueError(f"--at {max(at)} is past the run's {len(X)} points.")
        for r in replay(X, Y, REPLAY_KERNELS[args.kernel], args.n_init, at, args.ftol):
            print(
                f"seed {seed} n {r['n']}: log likelihood per point warm "
                f"{r['warm_ll']:.4f} cold {r['cold_ll']:.4f} "
                f"(warm - cold {r['warm_ll'] - r['cold_ll']:+.4f}); weights warm "
                f"{[round(w, 3) for w in r['warm_weights']]} cold "
                f"{[round(w, 3) for w in r['cold_weights']]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
