r"""The EULBO as an object: its ELBO scale, utility weight and incumbent.

GPyTorch's ``VariationalELBO`` holds the constants of its bound (``num_data``,
``beta``) and is called on a model's output; BoTorch's ``fit_gpytorch_mll``
takes it. ``EULBO`` is the same for the objective of [Maus2024eulbo]_,

    L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f),

over the candidates ``x`` and the SVGP state ``w`` of an ``EULBOModel``: it holds
the scale of the ELBO term (``elbo_scale``), the weight of the utility term
(``utility_weight``) and the incumbent ``y*`` of the utility (``incumbent``),
and it evaluates the ELBO, the expected log utility and their sum for a model
it is given. The model holds data, state and posterior only; the fit
(``botorch_ext.eulbo.fit``) and the joint step (``botorch_ext.eulbo.optimize``)
take an ``EULBO`` beside their ``EULBOOptions``.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import cast

import torch
from gpytorch.mlls import VariationalELBO
from torch import Tensor

from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.options import DEPRECATED_ELBO_SCALES, ELBO_SCALES
from botorch_ext.eulbo.utilities import (
    DEFAULT_NUM_QUADRATURE_POINTS,
    expected_log_utility,
)
from botorch_ext.validation import check_finite, check_positive


@dataclass(frozen=True)
class EULBO:
    r"""The expected-utility lower bound of [Maus2024eulbo]_, for a given model.

    ``elbo_scale="sum"`` (the default, name ``"paper"``) is the ELBO summed over
    the data, eq. (8): one utility term weighs as much as one data point.
    ``"mean"`` (name ``"per-datum"``) is GPyTorch's per-datum ELBO, so the utility
    weighs ``n`` times more; the authors' released code uses it on a window of
    the last 100 points (``EULBOOptions.authors``). Reason for the default: it
    is the paper's objective. ``utility_weight`` multiplies the utility term in
    either case. ``incumbent`` is the utility's ``y*`` on the original outcome
    scale (maximization), for a model trained on part of the data (the authors'
    window); None is the best of the model's training outcomes.

    Example:
        >>> objective = EULBO(elbo_scale="mean", incumbent=float(train_Y.max()))
        >>> value = objective(model, torch.rand(1, 2))  # full-data EULBO
        >>> candidates, _ = optimize_eulbo(model, bounds, objective=objective)

    Args:
        elbo_scale: ``"sum"`` or ``"mean"``, or a name of ``ELBO_SCALES``.
        utility_weight: Weight of the expected log utility (non-negative).
        incumbent: ``y*`` on the original scale, or None.
    """

    elbo_scale: str = "sum"
    utility_weight: float = 1.0
    incumbent: float | None = None

    def __post_init__(self) -> None:
        r"""Resolve the scale's names and check the settings."""
        object.__setattr__(self, "elbo_scale", _resolve_elbo_scale(self.elbo_scale))
        check_positive("utility_weight", self.utility_weight, allow_zero=True)
        object.__setattr__(self, "utility_weight", float(self.utility_weight))
        if self.incumbent is not None:
            check_finite("incumbent", torch.as_tensor(self.incumbent))

    def elbo(self, model: EULBOModel, X: Tensor, Y: Tensor) -> Tensor:
        r"""The ELBO of the data ``(X, Y)`` on ``elbo_scale``.

        GPyTorch's ``VariationalELBO`` with ``num_data = n`` (the per-datum
        estimate), times ``n`` for ``elbo_scale="sum"``. Evaluated in the
        model's current mode.

        Example:
            >>> EULBO().elbo(model, model.train_X_full, model.train_Y_std)

        Args:
            model: An ``EULBOModel``.
            X: ``b x d`` inputs in model space (a minibatch or all data).
            Y: ``b x 1`` transformed outcomes.

        Returns:
            A scalar tensor.
        """
        n = model.train_X_full.shape[-2]
        mll = VariationalELBO(model.likelihood, model.model, num_data=n)
        per_datum = mll(model.model(X), Y.squeeze(-1))
        value = per_datum * n if self.elbo_scale == "sum" else per_datum
        return cast(Tensor, value)

    def per_datum(self, model: EULBOModel, value: float) -> float:
        r"""A value on ``elbo_scale`` as a per-datum value.

        Example:
            >>> objective.per_datum(model, objective.elbo(model, X, Y).item())

        Args:
            model: The ``EULBOModel`` whose ``n`` the sum runs over.
            value: An ELBO or EULBO value on ``elbo_scale``.

        Returns:
            ``value / n`` for ``"sum"``, ``value`` for ``"mean"``.
        """
        n = model.train_X_full.shape[-2]
        return value / n if self.elbo_scale == "sum" else value

    def best_f(self, model: EULBOModel) -> Tensor:
        r"""The incumbent ``y*`` on the model's transformed (standardized) scale.

        ``incumbent`` through the model's outcome transform (in eval mode), or
        the best transformed training outcome.

        Example:
            >>> EULBO().best_f(model)

        Args:
            model: An ``EULBOModel``.

        Returns:
            A scalar tensor.
        """
        if self.incumbent is None:
            return model.train_Y_std.max()
        best = torch.as_tensor(self.incumbent, dtype=model.train_Y_std.dtype)
        transform = model.outcome_transform
        was_training = transform.training
        transform.eval()
        try:
            best_t = transform(best.reshape(1, 1).to(model.train_Y_std))[0]
            return cast(Tensor, best_t.squeeze())
        finally:
            transform.train(was_training)

    def expected_log_utility(
        self,
        model: EULBOModel,
        X: Tensor,
        base_samples: Tensor | None = None,
        utility: str = "ei",
        num_quadrature_points: int = DEFAULT_NUM_QUADRATURE_POINTS,
    ) -> Tensor:
        r"""``E_{q(f)} log u(X, f)`` over ``best_f`` (transformed scale), unweighted.

        See ``botorch_ext.eulbo.utilities.expected_log_utility``.

        Example:
            >>> EULBO().expected_log_utility(model, torch.rand(4, 1, 2))

        Args:
            model: An ``EULBOModel``.
            X: ``batch_shape x q x d`` candidates (``batch_shape x (q + S) x d``
                for ``"kg"``).
            base_samples: Fixed standard normal draws (``q > 1`` and ``"kg"``).
            utility: ``"ei"`` or ``"kg"``.
            num_quadrature_points: Gauss-Hermite points (``q = 1``, ``"ei"``).

        Returns:
            A ``batch_shape`` tensor.
        """
        return expected_log_utility(
            model,
            X,
            self.best_f(model),
            base_samples,
            utility,
            num_quadrature_points=num_quadrature_points,
        )

    def __call__(
        self,
        model: EULBOModel,
        X: Tensor,
        base_samples: Tensor | None = None,
        utility: str = "ei",
        num_quadrature_points: int = DEFAULT_NUM_QUADRATURE_POINTS,
    ) -> Tensor:
        r"""The full-data EULBO ``L_ELBO + utility_weight * E log u(X)``.

        The ELBO is evaluated in train mode on all of the model's data (the
        model's mode is restored).

        Example:
            >>> value = EULBO()(model, torch.rand(1, 2))

        Args:
            model: An ``EULBOModel``.
            X: ``q x d`` candidates (``(q + S) x d`` for ``"kg"``).
            base_samples: As for ``expected_log_utility``.
            utility: ``"ei"`` or ``"kg"``.
            num_quadrature_points: Gauss-Hermite points (``q = 1``, ``"ei"``).

        Returns:
            A scalar tensor.
        """
        was_training = model.training
        model.train()
        try:
            value = self.elbo(model, model.train_X_full, model.train_Y_std)
        finally:
            model.train(was_training)
        return value + self.utility_weight * self.expected_log_utility(
            model, X.unsqueeze(0), base_samples, utility, num_quadrature_points
        ).squeeze(0)


def eulbo(
    model: EULBOModel,
    X: Tensor,
    base_samples: Tensor | None = None,
    utility: str = "ei",
    objective: EULBO | None = None,
) -> Tensor:
    r"""The full-data EULBO of ``objective`` (``EULBO()`` if None) at ``X``.

    The functional form of ``EULBO.__call__``, with the paper's 20
    Gauss-Hermite points; ``botorch_ext.optim.eulbo`` before, which read the
    settings from the model.

    Example:
        >>> value = eulbo(model, torch.rand(1, 2), objective=EULBO(elbo_scale="mean"))

    Args:
        model: An ``EULBOModel``.
        X: ``q x d`` candidates (``(q + S) x d`` for ``"kg"``).
        base_samples: As for ``EULBO.expected_log_utility``.
        utility: ``"ei"`` or ``"kg"``.
        objective: The objective; ``EULBO()`` if None.

    Returns:
        A scalar tensor.
    """
    return (EULBO() if objective is None else objective)(
        model, X, base_samples, utility
    )


def _resolve_elbo_scale(elbo_scale: str) -> str:
    r"""``"sum"`` or ``"mean"``, resolving the names of ``ELBO_SCALES``."""
    if elbo_scale in DEPRECATED_ELBO_SCALES:
        warnings.warn(
            f"elbo_scale={elbo_scale!r} is deprecated: it is the per-datum ELBO "
            "only, not the authors' loop; use elbo_scale='mean' (or 'per-datum'), "
            "or EULBOOptions.authors() for their loop.",
            DeprecationWarning,
            stacklevel=4,
        )
        return DEPRECATED_ELBO_SCALES[elbo_scale]
    elbo_scale = ELBO_SCALES.get(elbo_scale, elbo_scale)
    if elbo_scale not in ("sum", "mean"):
        raise ValueError(
            "`elbo_scale` must be 'sum', 'mean' or a preset of "
            f"{sorted(ELBO_SCALES)}, got {elbo_scale!r}."
        )
    return elbo_scale
