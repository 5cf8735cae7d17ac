r"""CPU milliseconds of one marginal-likelihood evaluation, `bock` and `matern-scaled`.

One evaluation is what L-BFGS-B calls in a MAP fit: BoTorch's loss closure (the
negative log marginal likelihood with its gradient) of the runner's model
(``SingleTaskGP``, Bilog + Standardize) on Rosenbrock-``d`` data, the cube's
center plus Sobol points, as ``iteration_time.py`` builds them; and, inside it,
the kernel's Gram matrix forward and backward alone (``kern``). Each figure is
the fastest of ``--repeats`` batches of ``--calls`` calls, in CPU seconds of the
process with one torch thread (robust to other processes on a shared machine).

Usage::

    python benchmarks/bock/mll_eval_cost.py --ns 50,150
"""

from __future__ import annotations

import argparse
import time

import torch
from botorch.models import SingleTaskGP
from botorch.optim.closures import get_loss_closure_with_grads
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.runner.kernels import KERNELS
from botorch_ext.runner.problems import get_problem
from botorch_ext.runner.transforms import outcome_transform


def _best_ms(call, calls: int, repeats: int) -> float:
    for _ in range(10):
        call()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            call()
        best = min(best, (time.process_time() - start) / calls)
    return 1e3 * best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--ns", default="50,150")
    parser.add_argument("--kernels", default="bock,matern-scaled")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    d = args.dim
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    for n in (int(v) for v in args.ns.split(",")):
        X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=0).squeeze(-2)
        X[0] = 0.5
        Y = -get_problem("rosenbrock", d)(X).reshape(n, 1)
        for name in args.kernels.split(","):
            covar, _ = KERNELS[name](d)
            model = SingleTaskGP(
                X, Y, covar_module=covar, outcome_transform=outcome_transform("bilog")
            )
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            mll.train()
            parameters = {k: p for k, p in mll.named_parameters() if p.requires_grad}
            closure = get_loss_closure_with_grads(mll, parameters)
            train_X = model.train_inputs[0]

            def kernel_call(covar=covar, train_X=train_X) -> None:
                covar(train_X).to_dense().sum().backward()

            closure_ms = _best_ms(closure, args.calls, args.repeats)
            kernel_ms = _best_ms(kernel_call, args.calls, args.repeats)
            print(
                {"d": d, "n": n, "kernel": name, "closure_ms": round(closure_ms, 3)}
                | {"kern_ms": round(kernel_ms, 3)},
                flush=True,
            )


if __name__ == "__main__":
    main()
