r"""MAMBA vs grid search vs the 1/N heuristic on Bayesian logistic regression
(the MAMBA paper's Sec. 4.1 and App. B.1, scaled down to one CPU core).

Model and data (App. B.1.1): ``d = 10``, ``N = 10^5`` simulated points,
``x_i ~ N(0, I)``, ``theta_true ~ N(0, I)``, ``y_i ~ Bernoulli(sigmoid(x_i .
theta_true))``, all drawn from ``--data-seed``; prior ``N(0, 10 I)``; float64. The
log likelihood is ``sum_i y_i z_i - softplus(z_i)`` with ``z_i = x_i . theta``, and
the gradient estimator is ``log_posterior_gradient`` (autograd). It takes a batch
of thetas, split into chunks of 32 rows, for the full-batch scores the KSD needs.

Tuning, for SGLD and for SGHMC (friction 0.01), for each ``--seeds`` seed. Every
method starts from the same point, the MAP plus ``N(0, 0.2^2 I)`` noise drawn
from the seed. The paper adds this noise for its grid search (App. B.1.2) and
starts MAMBA at the MAP. Using one start for all methods keeps them comparable.
The posterior standard deviations are about 0.012, so this start lies far out in
the tails, and an arm has to reach the posterior within its budget.

* ``mamba``: ``mamba(..., budget=R, eta=3, metric="ksd", thin=10)`` over the step
  sizes x batch sizes {100%, 10%, 1%, 0.1%} of N (x leapfrog steps {5, 10} for
  SGHMC). Its tuning time is ``MambaResult.seconds``, which includes the KSD
  evaluations.
* ``grid-ksd``: the paper's "grid search-KSD" over the same arms. Every arm runs
  for ``R`` seconds from the start; its reward is the KSD of its thinned samples
  (thin 10, at most 1000 evenly spaced samples, full-batch scores), scored by
  ``mamba``'s own ``run_and_score_arm``; the lowest KSD wins. Its tuning time is
  the total time, KSD included.
* ``heuristic``: ``h = 1/N``, batch 10% (SGHMC: 10 leapfrog steps), no tuning (0
  s). For reference, its KSD after ``R`` seconds from the same start is recorded.

Step sizes: by default the paper's grid ``10^{-1, -1.5, ..., -7.5}`` minus its top
end ``10^{-1} ... 10^{-3}``, i.e. ``10^{-3.5} ... 10^{-7.5}`` (9 values). At the
MAP the largest Hessian eigenvalue of ``-log pi`` is about 1.04e4 (printed), so
Langevin steps are stable only for ``h < 2 / lambda_max``, about 1.9e-4. The
dropped steps have ``h lambda_max >= 10`` and make every arm fly away; with them
the script would not fit in 15 minutes. Because the logistic gradient is
bounded, such a chain never overflows and is never flagged as diverged: it runs
its whole budget and loses on KSD. ``10^{-3.5}`` (``h lambda_max`` about 3.3) is
kept as the marginal case. ``--log10-step-sizes`` restores the full grid.

Evaluation: the chosen arm is run for ``--eval-seconds`` (default 4 s; the paper
used 10 s) from the MAP with a fresh generator. The script reports the KSD of the
thinned samples of that run (at most 1000 evenly spaced ones, as in tuning) and
the relative error ``||sd_hat - sd_ref|| / ||sd_ref||`` of the posterior
standard deviations of all its thinned samples (no burn-in is removed: the run
starts at the MAP). The paper's reference was NUTS. Here ``sd_ref`` comes from
a long full-batch MALA reference: Metropolis-adjusted, so exact. It runs
``--mala-chains`` chains in parallel, preconditioned by the Laplace covariance
at the MAP, starts them from Laplace draws, adapts the step size to an
acceptance rate of 0.574 during burn-in and then freezes it. The script prints
the acceptance rate, the Monte Carlo error of ``sd_ref`` (from the spread over
chains) and the KSD of 1000 reference samples, the floor the KSD of exact
samples reaches at that sample size.

The target, checked per sampler on the means over seeds: MAMBA's final
KSD within 10% of grid search's (``ksd_mamba <= 1.1 ksd_grid``) at less than
half its tuning time.

Outputs: one row per (seed, sampler, method) in
``benchmarks/sgmcmc/results/mamba/logistic.csv``, written as soon as it exists; the
per-arm grid-search rewards in ``logistic_grid_arms.csv`` and MAMBA's rounds in
``logistic_mamba_rounds.csv`` next to it (``logistic_c0.1*.csv`` with
``--ksd-c 0.1``); a Markdown summary on stdout. All timings are
wall-clock on one torch thread, so they depend on the machine's load. The
``other_cpu`` column is the share of the machine used by other processes during
tuning.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/sgmcmc/mamba_logistic.py          # about 12 min
    OMP_NUM_THREADS=1 python benchmarks/sgmcmc/mamba_logistic.py --quick  # smoke run
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections import Counter

import torch
import torch.nn.functional as F
from torch import Tensor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import OtherCPU, environment, write_csv

from botorch_ext.sgmcmc import (
    ArmScore,
    MambaArm,
    log_posterior_gradient,
    mamba,
    mamba_arms,
    run_and_score_arm,
    stein_metric,
)

PRIOR_VARIANCE = 10.0
START_NOISE = 0.2
THIN = 10
MAX_METRIC_SAMPLES = 1000
ETA = 3
FRICTION = 0.01
#: The IMQ kernel's c of every KSD (``--ksd-c``; 1 is the paper's and the default).
KSD_C = 1.0
#: Rows of a batch of thetas per autograd call for the full-batch scores
#: (N x 32 float64 intermediates, about 26 MB each at N = 10^5).
SCORE_CHUNK = 32
PAPER_LOG10_STEPS = [-1.0 - 0.5 * i for i in range(14)]  # -1, -1.5, ..., -7.5
DEFAULT_LOG10_STEPS = [s for s in PAPER_LOG10_STEPS if s <= -3.5]
BATCH_FRACTIONS = (1.0, 0.1, 0.01, 0.001)
LEAPFROG_STEPS = (5, 10)
HEURISTIC_LEAPFROG = 10
RESULTS_DIR = "benchmarks/sgmcmc/results/mamba"


# ----------------------------------------------------------------------------- model


def simulate(num_data: int, dim: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """``X (N x d)``, ``y (N)`` and ``theta_true (d)``, float64, from one seed."""
    gen = torch.Generator().manual_seed(seed)
    theta_true = torch.randn(dim, generator=gen, dtype=torch.double)
    X = torch.randn(num_data, dim, generator=gen, dtype=torch.double)
    y = torch.bernoulli(torch.sigmoid(X @ theta_true), generator=gen)
    return X, y, theta_true


def log_prior(t: Tensor) -> Tensor:
    """``N(0, 10 I)`` log density up to a constant; ``t`` is ``d`` or ``k x d``."""
    return -0.5 * (t * t).sum(-1) / PRIOR_VARIANCE


def make_log_likelihood(X: Tensor, y: Tensor):
    r"""``(theta, indices) -> sum_{i in indices} y_i z_i - softplus(z_i)``.

    ``theta`` is ``d`` (a chain) or ``k x d`` (a batch of samples, giving ``k``
    values). ``softplus`` is evaluated stably by torch, and ``sum_i y_i z_i`` is
    a matrix-vector product.
    """

    def log_likelihood(t: Tensor, indices: Tensor | None) -> Tensor:
        Xb, yb = (X, y) if indices is None else (X[indices], y[indices])
        z = Xb @ (t if t.dim() == 1 else t.T)  # n or n x k
        return yb @ z - F.softplus(z).sum(0)

    return log_likelihood


def make_gradient(X: Tensor, y: Tensor):
    """The minibatch estimator from ``log_posterior_gradient``, chunked over rows
    of a batch of thetas (the full-batch scores of up to 1000 samples)."""
    base = log_posterior_gradient(log_prior, make_log_likelihood(X, y), X.shape[0])

    def gradient(theta: Tensor, indices: Tensor | None = None) -> Tensor:
        if theta.dim() == 2 and theta.shape[0] > SCORE_CHUNK:
            return torch.cat([base(c, indices) for c in theta.split(SCORE_CHUNK)])
        return base(theta, indices)

    return gradient


def find_map(X: Tensor, y: Tensor, max_iter: int = 100) -> tuple[Tensor, Tensor, int]:
    """Newton's method on the (strictly concave) log posterior, from 0.

    Returns the MAP, the negative Hessian of ``log pi`` there and the iterations.
    """
    d = X.shape[1]
    theta = torch.zeros(d, dtype=X.dtype)
    eye = torch.eye(d, dtype=X.dtype)
    it = 0
    while it < max_iter:
        it += 1
        p = torch.sigmoid(X @ theta)
        grad = X.T @ (y - p) - theta / PRIOR_VARIANCE
        hess = (X.T * (p * (1 - p))) @ X + eye / PRIOR_VARIANCE
        theta = theta + torch.linalg.solve(hess, grad)
        if grad.norm() < 1e-8:
            break
    p = torch.sigmoid(X @ theta)
    hess = (X.T * (p * (1 - p))) @ X + eye / PRIOR_VARIANCE
    return theta, hess, it


# ------------------------------------------------------------------ MALA reference


def mala_reference(
    X: Tensor,
    y: Tensor,
    theta_map: Tensor,
    neg_hessian: Tensor,
    num_chains: int,
    num_steps: int,
    burn_in: int,
    seed: int,
) -> dict:
    r"""Full-batch MALA, preconditioned by the Laplace covariance ``C = H^{-1}``.

    In whitened coordinates ``theta = theta_map + L u`` (``C = L L^T``) it is
    plain MALA on ``u``: propose ``u' = u + (eps^2 / 2) grad_u + eps xi`` and
    accept with the Metropolis-Hastings ratio, so the chains leave the posterior
    exactly invariant. ``num_chains`` chains run as one batch. The step ``eps``
    is adapted towards acceptance 0.574 (Robbins-Monro on ``log eps``) during
    burn-in only, and then frozen.
    """
    gen = torch.Generator().manual_seed(seed)
    log_lik = make_log_likelihood(X, y)
    d = theta_map.numel()
    L = torch.linalg.cholesky(torch.linalg.inv(neg_hessian))

    def value_and_grad_u(u: Tensor) -> tuple[Tensor, Tensor]:
        with torch.enable_grad():
            t = (theta_map + u @ L.T).requires_grad_(True)
            value = log_prior(t) + log_lik(t, None)
            (g,) = torch.autograd.grad(value.sum(), t)
        return value.detach(), g @ L

    def randn(*shape) -> Tensor:
        return torch.randn(*shape, generator=gen, dtype=X.dtype)

    u = randn(num_chains, d)
    lp, gu = value_and_grad_u(u)
    log_eps = math.log(1.65 * d ** (-1 / 6))
    kept, accepted = [], 0
    for step in range(burn_in + num_steps):
        eps = math.exp(log_eps)
        mean_fwd = u + 0.5 * eps**2 * gu
        u_new = mean_fwd + eps * randn(num_chains, d)
        lp_new, gu_new = value_and_grad_u(u_new)
        mean_bwd = u_new + 0.5 * eps**2 * gu_new
        log_q_fwd = -((u_new - mean_fwd) ** 2).sum(-1) / (2 * eps**2)
        log_q_bwd = -((u - mean_bwd) ** 2).sum(-1) / (2 * eps**2)
        log_alpha = lp_new - lp + log_q_bwd - log_q_fwd
        log_unif = torch.rand(num_chains, generator=gen, dtype=X.dtype).log()
        accept = log_unif < torch.nan_to_num(log_alpha, nan=-math.inf)
        u = torch.where(accept.unsqueeze(-1), u_new, u)
        lp = torch.where(accept, lp_new, lp)
        gu = torch.where(accept.unsqueeze(-1), gu_new, gu)
        if step < burn_in:
            rate = accept.double().mean().item()
            log_eps += (rate - 0.574) / (step + 1) ** 0.6
        else:
            accepted += int(accept.sum())
            kept.append(theta_map + u @ L.T)
    samples = torch.stack(kept, dim=1)  # chains x steps x d
    pooled = samples.reshape(-1, d)
    sd = pooled.std(0)
    per_chain_sd = samples.std(1)  # chains x d
    sd_se = per_chain_sd.std(0) / math.sqrt(num_chains)
    return {
        "samples": samples,
        "mean": pooled.mean(0),
        "sd": sd,
        "sd_rel_se": float(sd_se.norm() / sd.norm()),
        "acceptance": accepted / (num_chains * num_steps),
        "step": math.exp(log_eps),
    }


# ----------------------------------------------------------------------- helpers


def reference_ksd(gradient, samples: Tensor) -> tuple[float, int]:
    """KSD of exact samples as ``mamba`` scores an arm (``stein_metric``: IMQ,
    c = ``--ksd-c``, at most 1000 evenly spaced samples, full-batch scores).
    Returns the value and the samples used."""
    value, used = stein_metric(
        samples,
        lambda t: gradient(t, None),
        max_samples=MAX_METRIC_SAMPLES,
        metric_kwargs={"c": KSD_C},
    )
    return value, used.shape[0]


def run_arm(gradient, theta, arm: MambaArm, sampler: str, num_data: int, seconds, gen):
    """``run_and_score_arm`` with this benchmark's settings: ``seconds`` from
    ``theta``, thinned by 10, scored by the KSD of ``reference_ksd``."""
    return run_and_score_arm(
        gradient,
        theta.detach().clone(),
        arm,
        seconds,
        num_data,
        sampler=sampler,
        score=lambda t: gradient(t, None),
        metric_kwargs={"c": KSD_C},
        thin=THIN,
        max_metric_samples=MAX_METRIC_SAMPLES,
        friction=FRICTION,
        generator=gen,
    )


def child_generator(gen: torch.Generator) -> torch.Generator:
    return torch.Generator().manual_seed(int(torch.randint(2**62, (1,), generator=gen)))


def arm_label(arm: MambaArm, num_data: int) -> str:
    e = math.log10(arm.step_size)
    h = f"1e{e:.1f}" if abs(2 * e - round(2 * e)) < 1e-9 else f"{arm.step_size:.2g}"
    label = f"h={h}, n={100 * arm.batch_size / num_data:g}%"
    if arm.num_leapfrog_steps is not None:
        label += f", L={arm.num_leapfrog_steps}"
    return label


def grid_search(gradient, start, num_data, arms, sampler, budget, gen):
    """Every arm for ``budget`` seconds from ``start``; the lowest KSD wins."""
    t0 = time.perf_counter()
    records = []
    for arm in arms:
        scored: ArmScore = run_arm(
            gradient, start, arm, sampler, num_data, budget, child_generator(gen)
        )
        records.append(
            {
                "arm": arm,
                "ksd": scored.metric,
                "num_samples": scored.samples.shape[0],
                "num_steps": scored.run.num_steps,
                "seconds": scored.run.seconds,
                "diverged": scored.run.state.diverged,
            }
        )
    best = min(records, key=lambda r: r["ksd"])
    return best, records, time.perf_counter() - t0


# -------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-data", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--samplers", default="sgld,sghmc")
    parser.add_argument("--budget", type=float, default=1.0, help="R, seconds")
    parser.add_argument("--eval-seconds", type=float, default=4.0)
    parser.add_argument(
        "--log10-step-sizes",
        default=",".join(f"{s:g}" for s in DEFAULT_LOG10_STEPS),
        help="comma-separated log10 step sizes (paper: -1,-1.5,...,-7.5)",
    )
    parser.add_argument("--mala-chains", type=int, default=16)
    parser.add_argument("--mala-steps", type=int, default=2000)
    parser.add_argument("--mala-burn-in", type=int, default=300)
    parser.add_argument(
        "--ksd-c",
        type=float,
        default=1.0,
        help="the IMQ kernel's c for every KSD (tuning and evaluation)",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run (seconds)")
    parser.add_argument(
        "--output",
        default=None,
        help=f"CSV path (default {RESULTS_DIR}/logistic.csv; none with --quick)",
    )
    args = parser.parse_args()
    if args.quick:
        args.num_data, args.seeds, args.budget, args.eval_seconds = 5000, "0", 0.3, 0.5
        args.log10_step_sizes = "-3,-4,-5"
        args.mala_chains, args.mala_steps, args.mala_burn_in = 4, 100, 50
    elif args.output is None:
        suffix = "" if args.ksd_c == 1.0 else f"_c{args.ksd_c:g}"
        args.output = f"{RESULTS_DIR}/logistic{suffix}.csv"
    return args


def main() -> None:
    global KSD_C
    args = parse_args()
    KSD_C = args.ksd_c
    torch.set_num_threads(1)
    print(environment(), flush=True)
    t_script = time.perf_counter()
    N, d = args.num_data, args.dim
    log10_steps = [float(s) for s in args.log10_step_sizes.split(",")]
    step_sizes = [10.0**s for s in log10_steps]
    fractions = BATCH_FRACTIONS[:3] if args.quick else BATCH_FRACTIONS
    batch_sizes = [max(1, round(f * N)) for f in fractions]
    leapfrogs = LEAPFROG_STEPS[:1] if args.quick else LEAPFROG_STEPS
    seeds = [int(s) for s in args.seeds.split(",")]
    samplers = args.samplers.split(",")

    X, y, _ = simulate(N, d, args.data_seed)
    gradient = make_gradient(X, y)
    theta_map, neg_hess, newton_iters = find_map(X, y)
    eig = torch.linalg.eigvalsh(neg_hess)
    grad_at_map = gradient(theta_map, None).abs().max().item()
    print(
        f"data: N={N}, d={d}, mean(y)={y.mean():.3f}; MAP after {newton_iters} Newton "
        f"steps, max |autograd grad log pi(MAP)| = {grad_at_map:.2e}; eigenvalues of "
        f"-Hessian in [{eig[0]:.4g}, {eig[-1]:.4g}], so h < 2/lambda_max = "
        f"{2 / eig[-1]:.3g} for a stable Langevin step",
        flush=True,
    )
    t0 = time.perf_counter()
    ref = mala_reference(
        X,
        y,
        theta_map,
        neg_hess,
        args.mala_chains,
        args.mala_steps,
        args.mala_burn_in,
        seed=args.data_seed + 12345,
    )
    ref_ksd, ref_n = reference_ksd(gradient, ref["samples"].reshape(-1, d))
    laplace_sd = torch.linalg.inv(neg_hess).diag().sqrt()
    print(
        f"reference: MALA, {args.mala_chains} chains x {args.mala_steps} steps after "
        f"{args.mala_burn_in} burn-in, step {ref['step']:.3f} (whitened), acceptance "
        f"{ref['acceptance']:.3f}, {time.perf_counter() - t0:.0f} s; sd_ref in "
        f"[{ref['sd'].min():.4f}, {ref['sd'].max():.4f}], Monte Carlo rel. error of "
        f"sd_ref ~ {ref['sd_rel_se']:.4f}; Laplace sd rel. diff "
        f"{(laplace_sd - ref['sd']).norm() / ref['sd'].norm():.4f}; KSD of {ref_n} "
        f"reference samples (exact-sampling floor) {ref_ksd:.3g}",
        flush=True,
    )

    def sd_error(samples: Tensor) -> float:
        if samples.shape[0] < 2:
            return math.inf
        return float((samples.std(0) - ref["sd"]).norm() / ref["sd"].norm())

    # logistic.csv -> logistic_grid_arms.csv, logistic_mamba_rounds.csv
    stem = os.path.splitext(args.output)[0] if args.output else None
    rows, grid_rows, round_rows = [], [], []

    def save() -> None:
        if args.output:
            write_csv(args.output, rows)
            if grid_rows:
                write_csv(f"{stem}_grid_arms.csv", grid_rows)
            if round_rows:
                write_csv(f"{stem}_mamba_rounds.csv", round_rows)

    for seed in seeds:
        gen_start = torch.Generator().manual_seed(10_000 + seed)
        noise = torch.randn(d, generator=gen_start, dtype=torch.double)
        start = theta_map + START_NOISE * noise
        for sampler in samplers:
            leap = list(leapfrogs) if sampler == "sghmc" else None
            arms = mamba_arms(step_sizes, batch_sizes, leap)
            gen = torch.Generator().manual_seed(1000 * seed + samplers.index(sampler))
            chosen = {}  # method -> (arm, tuning seconds, tuning KSD, extra, other)

            with OtherCPU() as other:
                res = mamba(
                    gradient,
                    start,
                    N,
                    step_sizes,
                    batch_sizes,
                    budget=args.budget,
                    num_leapfrog_steps=leap,
                    sampler=sampler,
                    eta=ETA,
                    metric="ksd",
                    metric_kwargs={"c": KSD_C},
                    thin=THIN,
                    max_metric_samples=MAX_METRIC_SAMPLES,
                    friction=FRICTION,
                    generator=child_generator(gen),
                    progress=False,
                )
            no_samples_r0 = sum(math.isinf(a["metric"]) for a in res.history[0].arms)
            chosen["mamba"] = (
                res.best_arm,
                res.seconds,
                res.metric,
                {"rounds": len(res.history), "inf_arms_round0": no_samples_r0},
                other.share,
            )
            for i, rnd in enumerate(res.history):
                for a in rnd.arms:
                    round_rows.append(
                        {
                            "seed": seed,
                            "sampler": sampler,
                            "round": i,
                            "round_budget_s": round(rnd.budget, 4),
                            "arm": arm_label(a["arm"], N),
                            "ksd": a["metric"],
                            "num_samples": a["num_samples"],
                            "num_steps": a["num_steps"],
                            "seconds": round(a["seconds"], 4),
                            "diverged": a["diverged"],
                            "survived": a["arm"] in rnd.survivors,
                        }
                    )

            with OtherCPU() as other:
                best, records, grid_s = grid_search(
                    gradient, start, N, arms, sampler, args.budget, child_generator(gen)
                )
            chosen["grid-ksd"] = (
                best["arm"],
                grid_s,
                best["ksd"],
                {"inf_arms": sum(math.isinf(r["ksd"]) for r in records)},
                other.share,
            )
            for r in records:
                grid_rows.append(
                    {
                        "seed": seed,
                        "sampler": sampler,
                        "arm": arm_label(r["arm"], N),
                        "step_size": r["arm"].step_size,
                        "batch_size": r["arm"].batch_size,
                        "leapfrog": r["arm"].num_leapfrog_steps,
                        "ksd": r["ksd"],
                        "num_samples": r["num_samples"],
                        "num_steps": r["num_steps"],
                        "seconds": round(r["seconds"], 4),
                        "diverged": r["diverged"],
                    }
                )

            h_arm = MambaArm(
                1.0 / N,
                max(1, round(0.1 * N)),
                HEURISTIC_LEAPFROG if sampler == "sghmc" else None,
            )
            h_run = run_arm(
                gradient, start, h_arm, sampler, N, args.budget, child_generator(gen)
            )
            chosen["heuristic"] = (h_arm, 0.0, h_run.metric, {}, math.nan)

            for method, (arm, tune_s, tune_ksd, extra, other_share) in chosen.items():
                ev = run_arm(
                    gradient,
                    theta_map,
                    arm,
                    sampler,
                    N,
                    args.eval_seconds,
                    child_generator(gen),
                )
                final_ksd, used = ev.metric, ev.samples.shape[0]
                run = ev.run
                row = {
                    "seed": seed,
                    "sampler": sampler,
                    "method": method,
                    "arm": arm_label(arm, N),
                    "step_size": arm.step_size,
                    "batch_size": arm.batch_size,
                    "leapfrog": arm.num_leapfrog_steps,
                    "tuning_seconds": round(tune_s, 3),
                    "tuning_ksd": tune_ksd,
                    "eval_seconds": round(run.seconds, 3),
                    "eval_steps": run.num_steps,
                    "eval_samples": run.samples.shape[0],
                    "ksd_samples": used,
                    "final_ksd": final_ksd,
                    "sd_rel_error": sd_error(run.samples),
                    "diverged": run.state.diverged,
                    "other_cpu": round(other_share, 3),
                    "num_arms": len(arms) if method != "heuristic" else 1,
                    "budget_s": args.budget,
                    "ref_ksd_floor": ref_ksd,
                    **extra,
                }
                rows.append(row)
                save()
                print(
                    f"seed {seed} {sampler} {method}: {row['arm']}; tuning "
                    f"{tune_s:.1f} s (KSD {tune_ksd:.3g}); eval {run.num_steps} steps, "
                    f"{row['eval_samples']} samples, KSD {final_ksd:.3g}, sd rel. err "
                    f"{row['sd_rel_error']:.3f}" + (f"; {extra}" if extra else ""),
                    flush=True,
                )

    summarize(rows, samplers, N, ref_ksd)
    print(f"\ntotal {time.perf_counter() - t_script:.0f} s", flush=True)
    if args.output:
        print(f"rows written to {args.output}")


def _mean(values) -> float:
    values = list(values)
    return statistics.mean(values) if values else math.nan


def _sd(values) -> float:
    values = list(values)
    return statistics.stdev(values) if len(values) > 1 else 0.0


def summarize(rows: list[dict], samplers: list[str], num_data: int, ref_ksd) -> None:
    methods = ("mamba", "grid-ksd", "heuristic")
    n_seeds = len({r["seed"] for r in rows})
    print(
        f"\nMeans over {n_seeds} seed(s) (+- sd over seeds); KSD of 1000 exact "
        f"(MALA) samples: {ref_ksd:.3g}\n"
    )
    print(
        "| sampler | method | chosen arm (seeds) | tuning s | final KSD | sd rel. err |"
    )
    print("|---|---|---|---|---|---|")
    for sampler in samplers:
        for method in methods:
            sel = [r for r in rows if r["sampler"] == sampler and r["method"] == method]
            if not sel:
                continue
            arms = Counter(r["arm"] for r in sel)
            arm_text = "; ".join(f"{a} ({c})" for a, c in arms.most_common())
            k, e = [r["final_ksd"] for r in sel], [r["sd_rel_error"] for r in sel]
            print(
                f"| {sampler} | {method} | {arm_text} | "
                f"{_mean(r['tuning_seconds'] for r in sel):.1f} | "
                f"{_mean(k):.3g} +- {_sd(k):.2g} | {_mean(e):.3f} +- {_sd(e):.2g} |"
            )
    print(
        "\nTarget: MAMBA's final KSD <= 1.1 x grid search's, tuning time < 0.5 x grid's"
    )
    for sampler in samplers:
        m = [r for r in rows if r["sampler"] == sampler and r["method"] == "mamba"]
        g = [r for r in rows if r["sampler"] == sampler and r["method"] == "grid-ksd"]
        if not m or not g:
            continue
        ksd_ratio = _mean(r["final_ksd"] for r in m) / _mean(r["final_ksd"] for r in g)
        time_ratio = _mean(r["tuning_seconds"] for r in m) / _mean(
            r["tuning_seconds"] for r in g
        )
        met = ksd_ratio <= 1.1 and time_ratio < 0.5
        per_seed = sum(
            a["final_ksd"] <= 1.1 * b["final_ksd"]
            and a["tuning_seconds"] < 0.5 * b["tuning_seconds"]
            for a, b in zip(m, g, strict=True)
        )
        print(
            f"- {sampler}: KSD ratio {ksd_ratio:.2f}, tuning-time ratio "
            f"{time_ratio:.2f} -> {'MET' if met else 'NOT met'} (on means; "
            f"per seed {per_seed}/{len(m)})"
        )


if __name__ == "__main__":
    main()
