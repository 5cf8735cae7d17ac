r"""Minibatch Adam pieces shared by the ELBO fit and the joint EULBO phases.

Minibatches reshuffled every epoch (Appendix A of [Maus2024eulbo]_), the fixed
check set of the ``"steps"`` stopping rule, one clipped w-step on the minibatch
ELBO, and the stopping rules' state: ``StoppingRule`` (``"steps"`` and
``"epochs"``) and ``FailureCount`` (``"failures"``, the authors' code). The
parameters at the best check are a ``botorch_ext.eulbo.snapshot.Snapshot``
(``BestState`` here is its deprecated former name).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.objective import EULBO
from botorch_ext.eulbo.snapshot import Snapshot


class StoppingRule:
    r"""Stop after ``patience`` rounds without an improvement larger than ``tol``.

    The first value always counts as an improvement.

    Example:
        >>> rule = StoppingRule(patience=2, tol=0.1)
        >>> [rule.update(v) for v in (1.0, 1.05, 1.08)]
        [False, False, True]

    Args:
        patience: Rounds in a row without progress before stopping.
        tol: Smallest improvement that counts as progress.
    """

    def __init__(self, patience: int, tol: float) -> None:
        r"""Start with no value seen."""
        self.patience, self.tol = patience, tol
        self.best, self.stale = -math.inf, 0

    def update(self, value: float) -> bool:
        r"""Record a round's value.

        Args:
            value: The round's objective (per datum).

        Returns:
            True when the fit should stop.
        """
        if value > self.best + self.tol or self.best == -math.inf:
            self.best, self.stale = max(value, self.best), 0
        else:
            self.stale += 1
        return self.stale >= self.patience


def minibatches(
    model: EULBOModel, batch_size: int, generator: torch.Generator
) -> list[Tensor]:
    r"""One epoch of shuffled minibatch indices of ``batch_size``.

    Example:
        >>> batches = minibatches(model, 32, torch.Generator().manual_seed(0))

    Args:
        model: An ``EULBOModel``.
        batch_size: The minibatch size (``AdamOptions.batch_size``).
        generator: The generator of the shuffle.

    Returns:
        Index tensors covering all training points once.
    """
    n = model.train_X_full.shape[-2]
    perm = torch.randperm(n, generator=generator)
    return list(perm.split(batch_size))


def minibatch_stream(
    model: EULBOModel, batch_size: int, generator: torch.Generator
) -> Iterator[Tensor]:
    r"""Reshuffled minibatches, epoch after epoch (Appendix A of [Maus2024eulbo]_).

    Example:
        >>> idx = next(minibatch_stream(model, 32, torch.Generator().manual_seed(0)))

    Args:
        model: An ``EULBOModel``.
        batch_size: The minibatch size.
        generator: The generator of the shuffles (drawn from lazily).

    Yields:
        Index tensors of minibatches.
    """
    while True:
        yield from minibatches(model, batch_size, generator)


def check_set(model: EULBOModel, check_size: int, generator: torch.Generator) -> Tensor:
    r"""The fixed check set: all data, or ``check_size`` random points.

    Reason: a fixed set makes the stopping criterion a deterministic function
    of the parameters rather than minibatch noise.

    Example:
        >>> idx = check_set(model, 1024, torch.Generator().manual_seed(0))

    Args:
        model: An ``EULBOModel``.
        check_size: ``StoppingOptions.check_size``.
        generator: The generator of the random subset.

    Returns:
        Indices of the check set.
    """
    n = model.train_X_full.shape[-2]
    if n <= check_size:
        return torch.arange(n)
    return torch.randperm(n, generator=generator)[:check_size]


def check_elbo(model: EULBOModel, objective: EULBO, idx: Tensor) -> Tensor:
    r"""The ELBO (on the objective's scale) on the fixed check set, no gradient.

    Example:
        >>> value = check_elbo(model, EULBO(), check_set(model, 1024, generator))

    Args:
        model: An ``EULBOModel``.
        objective: The ``EULBO`` whose ELBO term is evaluated.
        idx: Indices of the check set.

    Returns:
        A scalar tensor.
    """
    with torch.no_grad():
        return objective.elbo(model, model.train_X_full[idx], model.train_Y_std[idx])


def w_parameters(model: EULBOModel) -> list[Tensor]:
    r"""``w``: the variational parameters, inducing points and hyperparameters.

    Example:
        >>> params = w_parameters(model)
    """
    return [p for p in model.parameters() if p.requires_grad]


def w_step(
    model: EULBOModel,
    objective: EULBO,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    idx: Tensor,
    grad_clip: float,
    extra: Callable[[], Tensor] | None = None,
) -> float | None:
    r"""One optimizer step on the minibatch ELBO (plus ``extra()``), clipped.

    The gradient norm of ``params`` is clipped at ``grad_clip``.

    Example:
        >>> value = w_step(model, EULBO(), torch.optim.Adam(params), params, idx, 2.0)

    Args:
        model: An ``EULBOModel``.
        objective: The ``EULBO`` whose ELBO term is stepped.
        opt: The optimizer of ``params``.
        params: The parameters stepped.
        idx: Indices of the minibatch.
        grad_clip: Gradient-norm clipping threshold (``AdamOptions.grad_clip``).
        extra: A differentiable term added to the objective (the EULBO's
            utility), or None.

    Returns:
        The objective before the step, or None (and no step) if it is not
        finite.
    """
    opt.zero_grad()
    value = objective.elbo(model, model.train_X_full[idx], model.train_Y_std[idx])
    if extra is not None:
        value = value + extra()
    loss = -value
    if not torch.isfinite(loss):
        return None
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, grad_clip)
    opt.step()
    return -loss.item()


class FailureCount:
    r"""The ``"failures"`` rule: stop at the ``patience``-th failure, counted in total.

    A value fails when it is not below the lowest value seen so far (the first
    never fails); the rule of the authors' released code for an epoch's summed
    minibatch loss.

    Example:
        >>> rule = FailureCount(patience=2)
        >>> [rule.update(v) for v in (3.0, 2.0, 2.5, 1.0, 1.0)]
        [False, False, False, False, True]

    Args:
        patience: Failures in total before stopping.
    """

    def __init__(self, patience: int) -> None:
        r"""Start with no value seen."""
        self.patience, self.lowest, self.failures = patience, math.inf, 0

    def update(self, loss: float) -> bool:
        r"""Record a loss; True when the fit should stop.

        Args:
            loss: The epoch's loss (lower is better).

        Returns:
            True at the ``patience``-th failure.
        """
        if loss < self.lowest:
            self.lowest = loss
        else:
            self.failures += 1
        return self.failures >= self.patience


class BestState(Snapshot):
    r"""Deprecated: ``Snapshot(params, value)`` (``botorch_ext.eulbo.snapshot``).

    The parameters at the best check of a fit, with the signature of 0.2.0
    (``offer`` and ``restore`` take the parameters again). Warns with a
    ``DeprecationWarning``; goes in the next release.

    Example:
        >>> best = Snapshot(params, check_value)  # not BestState(params, ...)

    Args:
        params: The parameters being fitted.
        value: Their check value now.
    """

    def __init__(self, params: list[Tensor], value: float) -> None:
        r"""Save ``params`` as the best so far (and warn)."""
        warnings.warn(
            "botorch_ext.eulbo.adam.BestState is deprecated and goes in the next "
            "release; use botorch_ext.eulbo.snapshot.Snapshot(params, value).",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(params, value)

    def offer(  # type: ignore[override]
        self, params: list[Tensor], value: float
    ) -> bool:
        r"""Save ``params`` if ``value`` beats the best so far."""
        return super().offer(value)

    def restore(self, params: list[Tensor]) -> float:  # type: ignore[override]
        r"""Copy the best parameters back into ``params``; return their value."""
        super().restore()
        return self.value
