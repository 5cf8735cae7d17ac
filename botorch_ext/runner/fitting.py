r"""Model fitting for the runner's exact-GP methods.

``fit_model`` fits a ``SingleTaskGP`` by MAP or samples its hyperparameters by
MAMBA-tuned SGLD, and ``gp_diagnostics`` reads the fitted state the runner writes into
each row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_ext.kernels import BOCKKernel
from botorch_ext.runner.kernels import KERNELS
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.transforms import outcome_transform
from botorch_ext.sgmcmc import (
    SGMCMCFullyBayesianSingleTaskGP,
    fit_fully_bayesian_model_sgmcmc,
)

#: A model's covariance for ``fit_model``: a name in ``KERNELS``, a kernel, or a
#: function of the dimension returning ``(covar_module, input_transform)``.
KernelSpec: TypeAlias = (
    str | Kernel | Callable[[int], tuple[Kernel, InputTransform | None]]
)

#: Hyperparameter draws per BO iteration of ``bock-sgmcmc`` (BoTorch's SAAS
#: default keeps 16 NUTS draws too).
SGMCMC_DRAWS = 16
#: L-BFGS-B's ``ftol`` in the runner's ``bock`` MAP fits (SciPy's default is about
#: 2.2e-9): the fit stops once an iteration lowers the negative log marginal
#: likelihood per point by less than ``1e-6`` relative (absolute below 1). BOCK's
#: fits otherwise spend many iterations driving vanishing angular weights' softmax
#: logits towards -inf for gains of that order; measured with the same regret
#: on Rosenbrock-20 (the BOCK page of the documentation, under its cost).
BOCK_FIT_FTOL = 1e-6
#: MAMBA's budget ``R`` for ``bock-sgmcmc``, in SGLD iterations of the winning
#: arm (thinned by 5 for the KSD and the draws); about 10 s per BO iteration.
SGMCMC_BUDGET_STEPS = 150


def fit_model(
    train_X: Tensor,
    train_Y: Tensor,
    options: MethodOptions,
    kernel: KernelSpec = "default",
    fully_bayesian: bool = False,
    seed: int = 0,
    initial_hyperparameters: dict[str, Tensor] | None = None,
    fit_options: dict[str, Any] | None = None,
) -> SingleTaskGP:
    r"""Fit a ``SingleTaskGP`` by MAP, or sample its hyperparameters by SGLD.

    MAP maximizes the marginal likelihood with ``fit_gpytorch_mll``; the SGLD sampler is
    MAMBA-tuned.

    Example:
        >>> model = fit_model(train_X, train_Y, MethodOptions(), kernel="bock")

    Args:
        train_X: ``n x d`` inputs in the unit cube.
        train_Y: ``n x 1`` outcomes (maximization sign).
        options: The method options (outcome transform).
        kernel: ``"default"`` for BoTorch's default covariance (ARD RBF with
            dimension-scaled priors), a name in ``KERNELS``, a function of the
            dimension returning ``(covar_module, input_transform)`` as those of
            ``KERNELS`` do (for variants, e.g. the benchmarks' ablations), or a
            GPyTorch kernel instance (used as is, without input transform).
            Everything else (likelihood, outcome transform, fitting) is the same
            for all kernels.
        fully_bayesian: Sample the hyperparameters instead
            (``fit_fully_bayesian_model_sgmcmc`` from the MAP, ``SGMCMC_DRAWS``
            draws, an SGLD step-size grid tuned by MAMBA with a budget of
            ``SGMCMC_BUDGET_STEPS`` iterations, so runs stay reproducible).
        seed: Seeds the sampler (fully Bayesian only).
        initial_hyperparameters: Values (``named_parameters`` names, raw
            values) the fit starts from, e.g. a previous fit's; names the model
            lacks, or of another shape, are ignored. None starts from the
            model's initial values.
        fit_options: Options of the MAP fit's optimizer (SciPy's L-BFGS-B, e.g.
            ``{"ftol": 1e-6}``), passed as ``fit_gpytorch_mll``'s
            ``optimizer_kwargs={"options": fit_options}``. None for BoTorch's
            defaults. Not with ``fully_bayesian``.

    Returns:
        The fitted model, in eval mode.

    Raises:
        ValueError: For ``fit_options`` with ``fully_bayesian``.
    """
    if fit_options is not None and fully_bayesian:
        raise ValueError("`fit_options` apply to MAP fits, not `fully_bayesian`.")
    covar_module, input_transform = None, None
    if isinstance(kernel, Kernel):
        covar_module = kernel
    elif callable(kernel):
        covar_module, input_transform = kernel(train_X.shape[-1])
    elif kernel != "default":
        if kernel not in KERNELS:
            choices = ", ".join(["default", *KERNELS])
            raise ValueError(f"unknown kernel {kernel!r}; choose from {choices}")
        covar_module, input_transform = KERNELS[kernel](train_X.shape[-1])
    model_class = SGMCMCFullyBayesianSingleTaskGP if fully_bayesian else SingleTaskGP
    model = model_class(
        train_X,
        train_Y,
        covar_module=covar_module,
        input_transform=input_transform,
        outcome_transform=outcome_transform(options.outcome_transform),
    )
    if initial_hyperparameters is not None:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                value = initial_hyperparameters.get(name)
                if value is not None and value.shape == parameter.shape:
                    parameter.copy_(value)
    if fully_bayesian:
        fit_fully_bayesian_model_sgmcmc(
            model,
            num_samples=SGMCMC_DRAWS,
            budget=SGMCMC_BUDGET_STEPS,
            budget_unit="steps",
            thin=5,
            generator=torch.Generator().manual_seed(seed),
        )
    else:
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        if fit_options is None:
            fit_gpytorch_mll(mll)
        else:
            fit_gpytorch_mll(mll, optimizer_kwargs={"options": dict(fit_options)})
    model.eval()
    return model


def gp_diagnostics(model: SingleTaskGP) -> dict[str, Any]:
    r"""The fitted noise variance and lengthscales of a (batched) exact GP.

    Averages over a batch of hyperparameter draws (fully Bayesian models). The
    lengthscale is the first one found among the covariance's modules (for BOCK,
    that of its radius kernel); a ``BOCKKernel`` also reports its angular
    weights ``c_0..c_P`` and its warp ``(alpha, beta)``.

    Example:
        >>> gp_diagnostics(fit_model(train_X, train_Y, MethodOptions()))["noise"]

    Args:
        model: A fitted ``SingleTaskGP``.

    Returns:
        ``{"noise": float, "lengthscales": list or None}``, plus
        ``"angular_weights"`` and ``"warp"`` (lists) for BOCK.
    """
    out: dict[str, Any] = {}
    with torch.no_grad():
        out["noise"] = model.likelihood.noise.mean().item()
        out["lengthscales"] = None
        for module in model.covar_module.modules():
            value = getattr(module, "lengthscale", None)
            if isinstance(value, Tensor):
                ls = value.reshape(-1, value.shape[-1]).mean(0)
                out["lengthscales"] = ls.tolist()
                break
        for module in model.covar_module.modules():
            if isinstance(module, BOCKKernel):
                c = module.angular_weights
                out["angular_weights"] = c.reshape(-1, c.shape[-1]).mean(0).tolist()
                out["warp"] = [module.alpha.mean().item(), module.beta.mean().item()]
                break
    return out
