r"""Soft (sigmoid-relaxed) parallel probability of improvement, in linear and log space.

References:
    .. [Wilson2017reparam]
        J. T. Wilson, R. Moriconi, F. Hutter and M. P. Deisenroth. The
        reparameterization trick for acquisition functions. NeurIPS Workshop on
        Bayesian Optimization, 2017.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from botorch.acquisition.monte_carlo import (
    SampleReducingMCAcquisitionFunction,
    qProbabilityOfImprovement,
)
from botorch.acquisition.objective import MCAcquisitionObjective, PosteriorTransform
from botorch.models.model import Model
from botorch.sampling.base import MCSampler
from botorch.utils.safe_math import logexpit, logmeanexp
from torch import Tensor

from botorch_ext.validation import check_finite, check_no_nan_inputs, check_positive

#: Default temperature. [Wilson2017reparam]_ used ``tau = 0.01`` on standardized
#: outcomes in all their q-PI and q-ES experiments. ``sigmoid(x / tau)``
#: underflows to exactly 0 (zero value and gradient in float64) once
#: ``x < -745 tau``, so BoTorch's ``qPI`` default of ``1e-3`` gives no signal once
#: every sample lies more than 0.745 outcome units (standard deviations of the
#: standardized outcome) below the incumbent; ``0.01`` moves that to 7.45.
DEFAULT_TAU = 0.01


class qSoftPI(qProbabilityOfImprovement):
    r"""MC-based parallel probability of improvement with a sigmoid relaxation.

    Table 1 of [Wilson2017reparam]_:

    .. math::

        \text{q-PI}(X) = E\Big[\mathrm{sigmoid}\Big(
            \frac{\max_j y_j - f^*}{\tau}\Big)\Big], \qquad y = \mu + L z.

    Because the sigmoid is monotone, the max can be taken after the sigmoid,
    ``max_j sigmoid((y_j - best_f) / tau)``, which is what the sample-reducing
    base class computes. As ``tau -> 0`` this tends to the exact q-PI; larger
    ``tau`` trades bias for informative gradients.

    A thin subclass of BoTorch's ``qProbabilityOfImprovement``: the same
    arguments in the same order and the same value (to the last bit at equal
    ``tau``); the only change is the default temperature, the paper's
    ``tau = 0.01`` instead of BoTorch's ``1e-3`` (see ``DEFAULT_TAU``). Arguments
    are validated at construction (finite ``best_f``, positive ``tau``) and NaN
    candidates raise instead of returning NaN.

    The value underflows to exactly zero (with an exactly zero gradient) for
    candidates far below ``best_f``; use ``qLogSoftPI`` there. Called on a
    ``batch_shape x q x d`` tensor, it returns ``batch_shape`` values in ``[0, 1]``.

    Example:
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> sampler = SobolQMCNormalSampler(torch.Size([512]))
        >>> acqf = qSoftPI(model, train_Y.max(), sampler)  # BoTorch's order
        >>> value = acqf(test_X)
    """

    def __init__(
        self,
        model: Model,
        best_f: float | Tensor,
        sampler: MCSampler | None = None,
        objective: MCAcquisitionObjective | None = None,
        posterior_transform: PosteriorTransform | None = None,
        X_pending: Tensor | None = None,
        tau: float | Tensor = DEFAULT_TAU,
        constraints: list[Callable[[Tensor], Tensor]] | None = None,
        eta: Tensor | float = 1e-3,
    ) -> None:
        r"""Soft q-Probability of Improvement.

        Args:
            model: A fitted model.
            best_f: The incumbent objective value; a ``batch_shape``-dim tensor
                for batched models.
            sampler: The sampler used to draw base samples (BoTorch's default if
                None).
            objective: The ``MCAcquisitionObjective`` (identity if None).
            posterior_transform: A ``PosteriorTransform`` (optional).
            X_pending: A ``m x d``-dim tensor of pending points.
            tau: Positive sigmoid temperature, in the units of the objective. The
                default ``0.01`` is the value [Wilson2017reparam]_ used on
                standardized outcomes; the registered input constructor rescales
                it by the standard deviation of the training objective values.
            constraints: Optional outcome-constraint callables, each mapping
                samples to a tensor that is feasible where negative (as in
                BoTorch's ``qProbabilityOfImprovement``).
            eta: Temperature(s) of the sigmoid constraint indicators.

        Raises:
            ValueError: If ``best_f`` is not finite or ``tau`` is not positive.
        """
        check_finite("best_f", best_f)
        check_positive("tau", tau)
        super().__init__(
            model=model,
            best_f=best_f,
            sampler=sampler,
            objective=objective,
            posterior_transform=posterior_transform,
            X_pending=X_pending,
            tau=tau,  # type: ignore[arg-type]  # BoTorch takes a tensor too (as_tensor)
            constraints=constraints,
            eta=eta,
        )

    def _non_reduced_forward(self, X: Tensor) -> Tensor:
        r"""BoTorch's per-sample values, after checking ``X`` for NaN.

        Args:
            X: A ``batch_shape x q x d``-dim tensor of candidates.

        Returns:
            A ``sample_shape x batch_shape x q``-dim tensor of constraint-weighted
            ``sigmoid((obj - best_f) / tau)``.
        """
        check_no_nan_inputs(X)
        return super()._non_reduced_forward(X)


class qLogSoftPI(SampleReducingMCAcquisitionFunction):
    r"""Logarithm of ``qSoftPI``, computed in log space end to end.

    .. math::

        \log \text{q-PI}(X) = \log \frac{1}{N} \sum_k \max_j
            \mathrm{sigmoid}\Big(\frac{y_{kj} - f^*}{\tau}\Big)

    is evaluated as ``logmeanexp_k max_j logexpit((y_kj - best_f) / tau)``:
    ``logexpit`` is ``-log1pexp(-x)``, which is linear (slope one) for very
    negative ``x``, and ``logmeanexp`` is shifted by its maximum, so both the value
    and its gradient stay finite and non-zero where ``qSoftPI`` underflows to
    exactly zero (e.g. 60 posterior standard deviations below the incumbent). In
    the normal range ``exp(qLogSoftPI) == qSoftPI`` up to rounding. The relaxation
    follows [Wilson2017reparam]_; the log-space evaluation follows BoTorch's LogEI.
    The arguments are those of ``qProbabilityOfImprovement``, in its order. Called
    on a ``batch_shape x q x d`` tensor, it returns ``batch_shape``
    log-probabilities (``<= 0``).

    Example:
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> acqf = qLogSoftPI(model, best_f=train_Y.max())
        >>> candidates, log_value = optimize_acqf(
        ...     acqf, bounds=bounds, q=2, num_restarts=10, raw_samples=512
        ... )
    """

    _log: bool = True
    best_f: Tensor
    tau: Tensor

    def __init__(
        self,
        model: Model,
        best_f: float | Tensor,
        sampler: MCSampler | None = None,
        objective: MCAcquisitionObjective | None = None,
        posterior_transform: PosteriorTransform | None = None,
        X_pending: Tensor | None = None,
        tau: float | Tensor = DEFAULT_TAU,
        constraints: list[Callable[[Tensor], Tensor]] | None = None,
        eta: Tensor | float = 1e-3,
    ) -> None:
        r"""Log soft q-Probability of Improvement.

        Args:
            model: A fitted model.
            best_f: The incumbent objective value (``batch_shape``-dim for
                batched models).
            sampler: The sampler used to draw base samples (BoTorch's default if
                None).
            objective: The ``MCAcquisitionObjective`` (identity if None).
            posterior_transform: A ``PosteriorTransform`` (optional).
            X_pending: A ``m x d``-dim tensor of pending points.
            tau: Positive sigmoid temperature (see ``qSoftPI``).
            constraints: Optional outcome-constraint callables (feasible where
                < 0); their log indicators are added to the log utilities.
            eta: Temperature(s) of the sigmoid constraint indicators.

        Raises:
            ValueError: If ``best_f`` is not finite or ``tau`` is not positive.
        """
        check_finite("best_f", best_f)
        check_positive("tau", tau)
        # In log space the mean over samples becomes a logmeanexp; the max over
        # the batch commutes with the (monotone) log and stays a hard max.
        super().__init__(
            model=model,
            sampler=sampler,
            objective=objective,
            posterior_transform=posterior_transform,
            X_pending=X_pending,
            constraints=constraints,
            eta=eta,
            sample_reduction=logmeanexp,
            # The stub names amax's tensor argument `input`, the protocol `X`.
            q_reduction=torch.amax,  # type: ignore[arg-type]
        )
        # The trailing singleton aligns a batched ``best_f`` with ``batch_shape x q``.
        self.register_buffer("best_f", torch.as_tensor(best_f).unsqueeze(-1))
        self.register_buffer("tau", torch.as_tensor(tau))

    def _non_reduced_forward(self, X: Tensor) -> Tensor:
        r"""The base class's per-sample log values, after checking ``X`` for NaN.

        Args:
            X: A ``batch_shape x q x d``-dim tensor of candidates.

        Returns:
            A ``sample_shape x batch_shape x q``-dim tensor of log utilities plus
            log constraint indicators.
        """
        check_no_nan_inputs(X)
        return super()._non_reduced_forward(X)

    def _sample_forward(self, obj: Tensor) -> Tensor:
        r"""Per-sample log soft improvement indicators.

        Args:
            obj: A ``sample_shape x batch_shape x q``-dim tensor of MC objective
                values.

        Returns:
            A ``sample_shape x batch_shape x q``-dim tensor of
            ``logexpit((obj - best_f) / tau)``.
        """
        return logexpit((obj - self.best_f.to(obj)) / self.tau.to(obj))
