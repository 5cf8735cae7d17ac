r"""How far is a carried TuRBO step's 500-iteration L-BFGS ELBO fit from converged?

On ``n`` i.i.d. uniform points of the 60-D rover, one ``turbo-elbo-svgp`` step on
the first ``n - 20`` (the run's first step), then the model carried over to all
``n`` as the next step does (``EULBOModel.carry_over``), and L-BFGS on the
collapsed bound continued from it in rounds of 500, 500, 1,000 and 2,000
iterations: the per-datum bound after the first round is what a BO step gets
(``lbfgs_max_iter`` = 500), the last is close to the optimum.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/eulbo/fit_convergence.py --n 500 --m 50
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    import torch

    from botorch_ext.eulbo.collapsed import collapsed_elbo, fit_elbo_collapsed
    from botorch_ext.runner.methods import get_method
    from botorch_ext.runner.options import MethodOptions
    from botorch_ext.runner.problems import get_problem

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--m", type=int, default=50)
    args = p.parse_args()
    torch.set_num_threads(1)
    problem = get_problem("rover")
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(args.n, problem.dim, generator=gen, dtype=torch.double)
    X = problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * X
    Y = -problem(X).unsqueeze(-1)
    step = get_method("turbo-elbo-svgp").new_run()
    options = MethodOptions(
        num_restarts=10, raw_samples=256, num_inducing_points=args.m
    )
    step.propose(X[:-20], Y[:-20], problem.bounds, 20, 0, options)
    model = step.previous.carry_over(X, Y)
    with torch.no_grad():
        start = collapsed_elbo(model).item()
    print(f"n = {args.n}, m = {args.m}: carried start {start:.6f}")
    total = 0
    for budget in (500, 500, 1000, 2000):
        tic = time.perf_counter()
        value = fit_elbo_collapsed(model, max_iter=budget)
        total += budget
        seconds = time.perf_counter() - tic
        steps = model.last_fit["steps"]
        print(f"after {total} iterations: {value:.6f} ({steps} this round, "
              f"{seconds:.1f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
