r"""Gradient-based vs random-search acquisition optimization (the reparameterization
paper's Figure 2, scaled down to a 2-core CPU).

Wilson et al. (2017) ran BO on 8-D tasks drawn from a GP prior with known
hyperparameters, choosing ``q`` points per step, and compared optimizers of the
same acquisition functions at matched wall time; gradient-based optimizers won.
Here: each task is a draw from a zero-mean GP with an RBF kernel (lengthscale
``--lengthscale``, unit output scale) represented by 1024 random Fourier features;
the model is a ``SingleTaskGP`` with exactly those hyperparameters (not refitted,
noise 1e-6); BO starts from ``q`` uniform points. At every step the gradient arm
runs ``optimize_acqf`` (L-BFGS-B, ``--restarts`` restarts from ``--raw-samples``
raw samples) and the random arm evaluates random q-batches for the same wall time
the gradient arm just used, keeping the best. The metric is the simple regret
``max f - best observed f`` after the last step, with ``max f`` estimated by
multi-start L-BFGS on the (cheap) task itself.

Example:
    python benchmarks/reparam_acq/gradient_vs_random.py --tasks 4 --steps 8 --q 4 \
        --output benchmarks/reparam_acq/results/gradient_vs_random.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import torch
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood

from botorch_ext.acquisition import draw_representer_points, qES, qLogSoftPI, qUCB


class RFFTask:
    r"""A draw from a zero-mean RBF GP prior via random Fourier features."""

    def __init__(self, dim: int, lengthscale: float, seed: int, features: int = 1024):
        gen = torch.Generator().manual_seed(seed)
        self.omega = torch.randn(features, dim, generator=gen, dtype=torch.double)
        self.omega /= lengthscale
        self.phase = (
            2 * math.pi * torch.rand(features, generator=gen, dtype=torch.double)
        )
        self.weight = torch.randn(features, generator=gen, dtype=torch.double)
        self.scale = math.sqrt(2.0 / features)
        self.dim = dim

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return self.scale * torch.cos(X @ self.omega.T + self.phase) @ self.weight

    def estimate_max(self, starts: int = 256) -> float:
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(starts * 64, self.dim, generator=gen, dtype=torch.double)
        X = X[self(X).topk(starts).indices].clone().requires_grad_(True)
        opt = torch.optim.LBFGS([X], max_iter=200, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = -self(X.clamp(0, 1)).sum()
            loss.backward()
            return loss

        opt.step(closure)
        with torch.no_grad():
            return self(X.clamp(0, 1)).max().item()


def make_model(X, Y, lengthscale):
    covar = ScaleKernel(RBFKernel())
    covar.base_kernel.lengthscale = lengthscale
    covar.outputscale = 1.0
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(1e-7))
    likelihood.noise = 1e-6
    model = SingleTaskGP(
        X, Y, covar_module=covar, likelihood=likelihood, outcome_transform=None
    )
    model.mean_module.constant.data.fill_(0.0)
    return model.eval()


def build_acqf(name, model, Y, bounds, seed):
    if name == "qucb":
        return qUCB(model, beta=math.sqrt(3.0))  # the paper's beta
    if name == "qlogsoftpi":
        return qLogSoftPI(model, best_f=Y.max(), tau=0.01)
    if name == "qes":
        torch.manual_seed(seed)
        # The settings measured (the defaults at the time).
        R = draw_representer_points(
            model, bounds, num_points=64, seed=seed, scheme="ei", num_around_best=0
        )
        return qES(
            model,
            representer_points=R,
            tau=0.01,
            num_fantasies=16,
            num_inner_samples=64,
        )
    raise ValueError(name)


def random_search(acqf, q, dim, seconds, gen, chunk=256):
    best_value, best_X = -math.inf, None
    start = time.monotonic()
    while True:
        X = torch.rand(chunk, q, dim, generator=gen, dtype=torch.double)
        with torch.no_grad():
            values = acqf(X)
        i = int(values.argmax())
        if values[i].item() > best_value:
            best_value, best_X = values[i].item(), X[i]
        if time.monotonic() - start >= seconds:
            return best_X


def run(args):
    torch.set_num_threads(args.threads)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    bounds = torch.stack([torch.zeros(args.dim), torch.ones(args.dim)]).double()
    columns = [
        "acqf",
        "task",
        "optimizer",
        "step",
        "n_evals",
        "best",
        "f_max",
        "regret",
        "opt_seconds",
    ]
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for task_id in range(args.tasks):
            task = RFFTask(args.dim, args.lengthscale, seed=1000 + task_id)
            f_max = task.estimate_max()
            gen0 = torch.Generator().manual_seed(task_id)
            X0 = torch.rand(args.q, args.dim, generator=gen0, dtype=torch.double)
            for acqf_name in args.acqfs.split(","):
                X_g, X_r = X0.clone(), X0.clone()
                gen = torch.Generator().manual_seed(17 + task_id)
                for step in range(args.steps):
                    # Gradient arm.
                    Y_g = task(X_g).unsqueeze(-1)
                    acqf = build_acqf(
                        acqf_name,
                        make_model(X_g, Y_g, args.lengthscale),
                        Y_g,
                        bounds,
                        seed=step,
                    )
                    t0 = time.monotonic()
                    cand, _ = optimize_acqf(
                        acqf,
                        bounds,
                        q=args.q,
                        num_restarts=args.restarts,
                        raw_samples=args.raw_samples,
                    )
                    seconds = time.monotonic() - t0
                    X_g = torch.cat([X_g, cand.detach()])
                    # Random arm, same wall time.
                    Y_r = task(X_r).unsqueeze(-1)
                    acqf = build_acqf(
                        acqf_name,
                        make_model(X_r, Y_r, args.lengthscale),
                        Y_r,
                        bounds,
                        seed=step,
                    )
                    X_r = torch.cat(
                        [X_r, random_search(acqf, args.q, args.dim, seconds, gen)]
                    )
                    for name, X in (("lbfgs", X_g), ("random", X_r)):
                        best = task(X).max().item()
                        writer.writerow(
                            {
                                "acqf": acqf_name,
                                "task": task_id,
                                "optimizer": name,
                                "step": step + 1,
                                "n_evals": X.shape[0],
                                "best": best,
                                "f_max": f_max,
                                "regret": f_max - best,
                                "opt_seconds": seconds,
                            }
                        )
                    f.flush()
                print(
                    f"task {task_id} {acqf_name}: regret lbfgs "
                    f"{f_max - task(X_g).max().item():.4f}, random "
                    f"{f_max - task(X_r).max().item():.4f}",
                    flush=True,
                )


def summarize(path):
    rows = list(csv.DictReader(open(path)))
    last = max(int(r["step"]) for r in rows)
    print("| acqf | optimizer | tasks | final regret (mean ± se) | wins | s / step |")
    print("|---|---|---|---|---|---|")
    final = {}
    for r in rows:
        if int(r["step"]) == last:
            final[(r["acqf"], r["optimizer"], r["task"])] = float(r["regret"])
    secs = {}
    for r in rows:
        secs.setdefault(r["acqf"], []).append(float(r["opt_seconds"]))
    for acqf in sorted({k[0] for k in final}):
        tasks = sorted({k[2] for k in final if k[0] == acqf})
        for opt in ("lbfgs", "random"):
            vals = [final[(acqf, opt, t)] for t in tasks if (acqf, opt, t) in final]
            other = "random" if opt == "lbfgs" else "lbfgs"
            wins = sum(
                final[(acqf, opt, t)] < final[(acqf, other, t)]
                for t in tasks
                if (acqf, other, t) in final
            )
            mean = sum(vals) / len(vals)
            se = (sum((v - mean) ** 2 for v in vals) / max(len(vals) - 1, 1)) ** 0.5
            se /= math.sqrt(len(vals))
            print(
                f"| {acqf} | {opt} | {len(vals)} | {mean:.4f} ± {se:.4f} | "
                f"{wins}/{len(tasks)} | {sum(secs[acqf]) / len(secs[acqf]):.1f} |"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--q", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--lengthscale", type=float, default=0.4)
    parser.add_argument("--acqfs", default="qucb,qlogsoftpi,qes")
    parser.add_argument("--restarts", type=int, default=8)
    parser.add_argument("--raw-samples", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--output", default="benchmarks/reparam_acq/results/gradient_vs_random.csv"
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.steps, args.restarts, args.raw_samples = 1, 1, 2, 32
    if not args.summary_only:
        run(args)
    summarize(args.output)
