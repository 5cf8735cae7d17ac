r"""Fitting an ``EULBOModel`` by its ELBO: minibatch Adam with a stopping rule.

This module is to ``EULBOModel`` what ``botorch.optim.fit`` is to BoTorch's
models: the loop that fits the model, kept beside the model rather than inside
it. ``EULBOModel.fit_elbo`` calls ``fit_elbo``; the joint EULBO optimization
(``botorch_ext.optim.eulbo``) reuses its minibatch, check-set and w-step helpers
and its stopping rule.

Data path of one fit: the model's current state (a carried-over ``w`` or the
closed-form ``q(u)``) -> Adam steps on minibatch ELBOs (``_w_step``, gradient
norm clipped) -> every round (``check_every`` steps, or one epoch) the
objective on a fixed check set (or the epoch's mean) -> ``_StoppingRule`` ->
``model.last_fit``.

References

.. [Maus2024eulbo]
    N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
    Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:  # the model imports this module, not the other way round
    from botorch_ext.models.eulbo import EULBOModel

#: Stopping rules of ``EULBOOptions.convergence``.
CONVERGENCE_RULES = ("steps", "epochs")


class _StoppingRule:
    r"""Stop after ``patience`` rounds without an improvement larger than ``tol``."""

    def __init__(self, patience: int, tol: float) -> None:
        self.patience, self.tol = patience, tol
        self.best, self.stale = -math.inf, 0

    def update(self, value: float) -> bool:
        r"""Record a round's value; return True when the fit should stop."""
        if value > self.best + self.tol or self.best == -math.inf:
            self.best, self.stale = max(value, self.best), 0
        else:
            self.stale += 1
        return self.stale >= self.patience


def _minibatches(model: EULBOModel, generator: torch.Generator) -> list[Tensor]:
    r"""One epoch of shuffled minibatch indices."""
    n = model.train_X_full.shape[-2]
    perm = torch.randperm(n, generator=generator)
    return list(perm.split(model.options.batch_size))


def _minibatch_stream(
    model: EULBOModel, generator: torch.Generator
) -> Iterator[Tensor]:
    r"""Reshuffled minibatches, epoch after epoch (Appendix A)."""
    while True:
        yield from _minibatches(model, generator)


def _check_set(model: EULBOModel, generator: torch.Generator) -> Tensor:
    r"""The fixed check set: all data, or ``check_size`` random points."""
    n = model.train_X_full.shape[-2]
    if n <= model.options.check_size:
        return torch.arange(n)
    return torch.randperm(n, generator=generator)[: model.options.check_size]


def _check_elbo(model: EULBOModel, idx: Tensor) -> Tensor:
    r"""The ELBO (on ``elbo_scale``) estimated on the fixed check set."""
    with torch.no_grad():
        return model._elbo(model.train_X_full[idx], model.train_Y_std[idx])


def _w_parameters(model: EULBOModel) -> list[Tensor]:
    r"""``w``: the variational parameters, inducing points and hyperparameters."""
    return [p for p in model.parameters() if p.requires_grad]


def _w_step(
    model: EULBOModel,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    idx: Tensor,
    extra: Callable[[], Tensor] | None = None,
) -> float | None:
    r"""One Adam step on the minibatch ELBO (plus ``extra()``).

    Returns:
        The objective before the step, or None (and no step) if it is not
        finite.
    """
    opt.zero_grad()
    objective = model._elbo(model.train_X_full[idx], model.train_Y_std[idx])
    if extra is not None:
        objective = objective + extra()
    loss = -objective
    if not torch.isfinite(loss):
        return None
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, model.options.grad_clip)
    opt.step()
    return -loss.item()


def fit_elbo(model: EULBOModel, seed: int = 0) -> float:
    r"""Fit an ``EULBOModel`` by its ELBO: minibatch Adam, clipping, a stopping rule.

    Adam with step size ``options.lr_w``, minibatches of ``options.batch_size``
    reshuffled every epoch, gradient norm clipped at ``options.grad_clip``,
    from the model's current state (a carried-over ``w`` or the closed-form
    ``q(u)``); stops by ``options.convergence`` (see ``EULBOOptions``), where
    ``options`` is ``model.options``. ``model.last_fit`` records the number of
    steps, the final per-datum ELBO and whether the stopping rule (not the
    budget) ended the fit. The model is left in eval mode.

    Example:
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> elbo_per_datum = fit_elbo(model, seed=0)  # or model.fit_elbo()

    Args:
        model: The model to fit, in place.
        seed: Seed of the minibatch shuffling and the check set.

    Returns:
        The final per-datum ELBO (on the check set for ``"steps"``; the last
        epoch's mean for ``"epochs"``).

    Raises:
        RuntimeError: If the ELBO becomes non-finite.
    """
    options = model.options
    model.train()
    params = _w_parameters(model)
    opt = torch.optim.Adam(params, lr=options.lr_w)
    gen = torch.Generator().manual_seed(seed)
    rule = _StoppingRule(options.patience, options.tol)
    steps, converged, value = 0, False, -math.inf
    if options.convergence == "epochs":
        n = model.train_X_full.shape[-2]
        for _ in range(options.max_epochs):
            total = 0.0
            for idx in _minibatches(model, gen):
                step_value = _w_step(model, opt, params, idx)
                if step_value is None:
                    raise RuntimeError("The ELBO became non-finite during fit_elbo.")
                steps += 1
                # Weight by minibatch size: a small last minibatch would
                # otherwise make the epoch score noisy (and stop early).
                total += step_value * len(idx)
            value = model._per_datum(total / n)
            if rule.update(value):
                converged = True
                break
    else:
        check = _check_set(model, gen)
        stream = _minibatch_stream(model, gen)
        value = model._per_datum(_check_elbo(model, check).item())
        rule.update(value)
        while steps < options.max_steps:
            for _ in range(min(options.check_every, options.max_steps - steps)):
                if _w_step(model, opt, params, next(stream)) is None:
                    raise RuntimeError("The ELBO became non-finite during fit_elbo.")
                steps += 1
            value = model._per_datum(_check_elbo(model, check).item())
            if rule.update(value):
                converged = True
                break
    model.eval()
    model.last_fit = {"steps": steps, "elbo": value, "converged": converged}
    return value
