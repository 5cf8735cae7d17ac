r"""Why does a kernel win or lose a BO run? Held-out model quality on BOCK's problems.

For each problem and seed, a training set shaped like the middle of a
centre-initialized BO run: the cube's center, ``n_sobol`` scrambled Sobol points
and ``n_local`` points around the optimizer (Gaussian offsets of scale 0.05 in
the unit cube, clamped), i.e. a run that has found the basin. The runner's
``fit_model`` fits each kernel with the same Bilog + Standardize outcome
transform (MAP, ``fit_gpytorch_mll``). Two test sets: 500 uniform points and 500
points around the optimizer (scale 0.05). Metrics, per test set: the Spearman
rank correlation between the posterior mean and the true values (what an
acquisition function needs) and the mean negative log predictive density of the
*transformed* outcomes under the model's Gaussian posterior (lower is better).
Also the fitted hyperparameters of ``bock`` (warp, angular weights,
lengthscale), to see whether they sit on the boundary of their box, and two
BOCK variants: the authors' log-weight prior on the angular logits
(``bock-logit-prior``) and a wider warp box (``bock-wide-warp``).

Usage::

    python benchmarks/bock/model_fit.py     # rosenbrock, levy, repeated-hartmann6
    python benchmarks/bock/model_fit.py --quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.constraints import Interval
from gpytorch.kernels import ScaleKernel
from gpytorch.priors import NormalPrior

from benchmarks.bock.kernels import ABLATION_KERNELS
from botorch_ext.kernels import BOCKKernel
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import environment, write_csv


def _spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    ra = a.argsort().argsort().double()
    rb = b.argsort().argsort().double()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()))


def _around(center: torch.Tensor, n: int, scale: float, gen) -> torch.Tensor:
    noise = torch.randn(n, center.shape[-1], generator=gen, dtype=torch.double)
    return (center + scale * noise).clamp(0.0, 1.0)


def evaluate(model, X: torch.Tensor, f: torch.Tensor) -> tuple[float, float]:
    r"""Spearman(mean, -f) and the Gaussian NLPD, on the model's transformed scale.

    The outcome transforms are monotone, so the rank correlation of the latent
    mean equals that of the posterior median on the original scale.
    """
    with torch.no_grad():
        pred = model.likelihood(model(model.transform_inputs(X)))  # with noise
        Yt, _ = model.outcome_transform(-f.unsqueeze(-1))
        mean, var = pred.mean, pred.variance
        resid2 = (Yt.squeeze(-1) - mean) ** 2
        nlpd = 0.5 * (torch.log(2 * torch.pi * var) + resid2 / var)
    return _spearman(mean, -f), float(nlpd.mean())


class _LogitPriorBOCKKernel(BOCKKernel):
    r"""BOCK with the authors' log-weight prior put on the softmax logits.

    The authors' code puts ``N(-2, 2^2)`` on the log of the constant weight and
    ``N(0, 1)`` on the log of the others (their weights are unnormalized, with
    a separate amplitude); the logits here play that role.
    """

    def __init__(self) -> None:
        super().__init__()
        loc = torch.zeros(self.angular_degree + 1)
        scale = torch.ones(self.angular_degree + 1)
        loc[0], scale[0] = -2.0, 2.0
        self.register_prior(
            "logit_prior", NormalPrior(loc, scale), self._logits, self._set_logits
        )

    def _logits(self, m):
        return m.raw_angular_weights

    def _set_logits(self, m, v):
        m.initialize(raw_angular_weights=v)


def _wide_warp_kernel() -> BOCKKernel:
    # A warp box wider than the authors' (alpha in [0.5, 1], beta in [1, 2]).
    return BOCKKernel(
        alpha_constraint=Interval(0.1, 1.0, transform=None, initial_value=1.0),
        beta_constraint=Interval(1.0, 10.0, transform=None, initial_value=1.0),
        alpha_prior=None,
        beta_prior=None,
    )


def _scaled_kernel() -> ScaleKernel:
    # BOCK with a learned amplitude (GPyTorch's kernel has one through its
    # unnormalized angular weights).
    return ScaleKernel(BOCKKernel())


def _floored(floor) -> callable:
    # The continuous center rule with floors on the angular weights.
    return lambda: BOCKKernel(angular_weights_floor=floor)


#: Kernel variants of BOCK, next to the runner's named kernels.
VARIANTS = {
    "bock-floor50": _floored([0.0, 0.5, 0.0, 0.0]),
    "bock-floor-both": _floored([0.05, 0.05, 0.0, 0.0]),
    "bock-floor-nonconst50": _floored([0.0, 0.5 / 3, 0.5 / 3, 0.5 / 3]),
    "bock-scaled": _scaled_kernel,
    "bock-logit-prior": _LogitPriorBOCKKernel,
    "bock-wide-warp": _wide_warp_kernel,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="rosenbrock,levy,repeated-hartmann6")
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--n-sobol", type=int, default=60)
    parser.add_argument("--n-local", type=int, default=40)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--kernels",
        default="bock,matern,default,gpytorch-cylindrical," + ",".join(VARIANTS),
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--output", default="benchmarks/bock/results/bock_model_fit.csv"
    )
    args = parser.parse_args()
    if args.quick:
        args.problems, args.dim, args.n_sobol, args.n_local, args.seeds = (
            "rosenbrock",
            5,
            10,
            5,
            "0",
        )
    torch.set_num_threads(1)
    print(environment())
    options = MethodOptions(outcome_transform="bilog")
    rows = []
    for name in args.problems.split(","):
        problem = get_problem(name, args.dim)
        d = problem.dim
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
        opt = problem.optimizer.double()
        for seed in (int(s) for s in args.seeds.split(",")):
            gen = torch.Generator().manual_seed(seed)
            sobol = draw_sobol_samples(bounds, n=args.n_sobol, q=1, seed=seed)
            X = torch.cat(
                [
                    torch.full((1, d), 0.5, dtype=torch.double),
                    sobol.squeeze(-2),
                    _around(opt, args.n_local, 0.05, gen),
                ]
            )
            Y = -problem(X).reshape(-1, 1)
            tests = {
                "uniform": torch.rand(500, d, generator=gen, dtype=torch.double),
                "near_opt": _around(opt, 500, 0.05, gen),
            }
            for kernel in args.kernels.split(","):
                if kernel in VARIANTS:
                    spec = VARIANTS[kernel]()
                else:  # the runner's kernels, or the study's ablation kernels
                    spec = ABLATION_KERNELS.get(kernel, kernel)
                model = fit_model(X, Y, options, kernel=spec)
                row = {"problem": name, "dim": d, "seed": seed, "kernel": kernel}
                for tname, Xt in tests.items():
                    spearman, nlpd = evaluate(model, Xt, problem(Xt).reshape(-1))
                    row[f"spearman_{tname}"] = round(spearman, 4)
                    row[f"nlpd_{tname}"] = round(nlpd, 4)
                if kernel.startswith("bock"):
                    k = model.covar_module
                    k = k.base_kernel if isinstance(k, ScaleKernel) else k
                    row["bock_hypers"] = (
                        f"alpha={k.alpha.item():.3g} beta={k.beta.item():.3g} "
                        f"ls={k.radial_base_kernel.lengthscale.item():.3g} "
                        f"c={[round(v, 3) for v in k.angular_weights.tolist()]}"
                    )
                rows.append(row)
                print(row, flush=True)
    print("\nmeans over seeds:")
    keys = [k for k in rows[0] if k.startswith(("spearman", "nlpd"))]
    for name in args.problems.split(","):
        for kernel in args.kernels.split(","):
            sel = [r for r in rows if r["problem"] == name and r["kernel"] == kernel]
            stats = ", ".join(
                f"{k}={statistics.mean(r[k] for r in sel):.3f}" for k in keys
            )
            print(f"{name} {kernel}: {stats}")
    if not args.quick:
        write_csv(args.output, rows)


if __name__ == "__main__":
    main()
