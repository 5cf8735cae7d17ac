r"""Trust-region state and box for TuRBO-style Bayesian optimization.

The rules are those of the TuRBO paper [Eriksson2019turbo]_ as written in BoTorch's
TuRBO tutorial: a box of side ``length`` (start 0.8, in the unit cube) centred at
the incumbent, stretched per dimension by the model's lengthscales (geometric mean
one), doubled after ``success_tolerance`` consecutive improving batches, halved
after ``failure_tolerance = ceil(max(4 / q, d / q))`` consecutive failures, capped
at 1.6 and restarted below ``0.5^7``. [Maus2024eulbo]_ use these settings with
both exact GPs and the EULBO-fitted SVGP.

References:
    .. [Eriksson2019turbo]
        D. Eriksson, M. Pearce, J. Gardner, R. D. Turner and M. Poloczek. Scalable
        Global Optimization via Local Bayesian Optimization. NeurIPS 2019.
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian
        Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.utils.transforms import is_fully_bayesian
from torch import Tensor

from botorch_ext.kernels.utils import kernel_lengthscale
from botorch_ext.validation import check_positive_int


@dataclass
class TurboState:
    r"""The state of one TuRBO trust region (maximization).

    Example:
        >>> state = TurboState(dim=20, batch_size=4)
        >>> state.update(Y_next)  # after evaluating a batch
        >>> bounds = state.bounds(X_best, model)  # the next trust region

    Args:
        dim: Input dimension ``d``.
        batch_size: Batch size ``q``.
        length: Side length of the box before lengthscale weighting.
        length_min: Below this the region has collapsed (``restart_triggered``).
        length_max: Upper cap on ``length``.
        success_tolerance: Consecutive successes before the box doubles (10 in
            BoTorch's tutorial; the TuRBO paper used 3).
        failure_tolerance: Consecutive failures before the box halves; default
            ``ceil(max(4 / q, d / q))``.
        best_value: The best value seen so far.
    """

    dim: int
    batch_size: int = 1
    length: float = 0.8
    length_min: float = 0.5**7
    length_max: float = 1.6
    success_tolerance: int = 10
    failure_tolerance: int | None = None
    best_value: float = -math.inf
    success_counter: int = field(default=0)
    failure_counter: int = field(default=0)
    restart_triggered: bool = field(default=False)

    def __post_init__(self) -> None:
        check_positive_int("dim", self.dim)
        check_positive_int("batch_size", self.batch_size)
        check_positive_int("success_tolerance", self.success_tolerance)
        if self.failure_tolerance is None:
            self.failure_tolerance = math.ceil(
                max(4.0 / self.batch_size, self.dim / self.batch_size)
            )
        check_positive_int("failure_tolerance", self.failure_tolerance)
        best = self.best_value
        if isinstance(best, Tensor) and best.numel() == 1:
            best = self.best_value = float(best)  # e.g. Y.max()
        if (
            isinstance(best, bool)
            or not isinstance(best, numbers.Real)
            or math.isnan(best)
            or best == math.inf
        ):
            raise ValueError(
                "`best_value` must be a finite number or -inf (nothing seen yet), "
                f"got {best!r}."
            )
        if not 0 < self.length_min <= self.length <= self.length_max:
            raise ValueError(
                "TurboState needs 0 < length_min <= length <= length_max, got "
                f"length_min={self.length_min}, length={self.length}, "
                f"length_max={self.length_max}."
            )

    def update(self, Y_next: Tensor) -> TurboState:
        r"""Update the counters and the box length after evaluating a batch.

        A batch succeeds if its best value beats ``best_value`` by more than
        ``1e-3 |best_value|`` (BoTorch tutorial rule).

        Args:
            Y_next: The batch's values (any shape; maximization).

        Returns:
            ``self``, updated in place.

        Raises:
            ValueError: If ``Y_next`` is empty or contains NaN or +inf.
        """
        if (
            Y_next.numel() == 0
            or bool(torch.isnan(Y_next).any())
            or bool((Y_next == math.inf).any())
        ):
            raise ValueError(
                f"`Y_next` must be non-empty, without NaN or +inf, got {Y_next}."
            )
        best_next = Y_next.max().item()
        threshold = self.best_value
        if math.isfinite(threshold):  # -inf + 1e-3 * inf would be NaN
            threshold += 1e-3 * abs(threshold)
        if best_next > threshold:
            self.success_counter += 1
            self.failure_counter = 0
        else:
            self.success_counter = 0
            self.failure_counter += 1
        if self.success_counter == self.success_tolerance:
            self.length = min(2.0 * self.length, self.length_max)
            self.success_counter = 0
        elif self.failure_counter == self.failure_tolerance:
            self.length /= 2.0
            self.failure_counter = 0
        self.best_value = max(self.best_value, best_next)
        if self.length < self.length_min:
            self.restart_triggered = True
        return self

    def bounds(
        self,
        x_center: Tensor,
        model: Model | None = None,
        lengthscale: Tensor | None = None,
    ) -> Tensor:
        r"""The trust region: a box about ``x_center``, clipped to the unit cube.

        Side lengths are ``length * w_i`` with ``w = l / mean(l)`` rescaled to
        geometric mean 1, ``l`` the lengthscales (so the volume is
        ``length^d`` before clipping). Without lengthscales the box is a cube.

        Args:
            x_center: A ``d``-vector in ``[0, 1]^d``, usually the incumbent.
            model: Optional model whose ``covar_module`` (or its
                ``base_kernel``) has ARD lengthscales, e.g. a ``SingleTaskGP`` or
                an ``EULBOModel``'s SVGP.
            lengthscale: Explicit lengthscales (``d`` entries), overriding
                ``model``.

        Returns:
            A ``2 x d`` tensor of lower and upper bounds.

        Raises:
            ValueError: For an ``x_center`` of the wrong size or outside
                ``[0, 1]^d`` (e.g. in the problem's own units: normalize it), or
                lengthscales of the wrong size or not finite and positive.
            UnsupportedError: For a fully Bayesian ``model`` (one lengthscale
                per draw): pass ``lengthscale``, e.g. the draws' median.
        """
        x_center = x_center.reshape(-1)
        if x_center.shape[0] != self.dim:
            raise ValueError(
                f"`x_center` must have {self.dim} entries, got {x_center.shape[0]}."
            )
        outside = ~((x_center >= 0) & (x_center <= 1))  # NaN included
        if bool(outside.any()):
            raise ValueError(
                "`x_center` must lie in the unit cube [0, 1]^d (normalize it), got "
                f"{x_center.tolist()}."
            )
        if lengthscale is None and model is not None:
            if is_fully_bayesian(model):
                raise UnsupportedError(
                    f"TurboState.bounds cannot take the lengthscales of a fully "
                    f"Bayesian model ({type(model).__name__}: one per draw); pass "
                    "`lengthscale`, e.g. their median over the draws."
                )
            lengthscale = _ard_lengthscale(model)
        if lengthscale is None:
            weights = torch.ones_like(x_center)
        else:
            ls = lengthscale.detach().reshape(-1).to(x_center)
            if ls.shape[0] == 1:
                ls = ls.expand(self.dim)
            if ls.shape[0] != self.dim or not bool(
                ((ls > 0) & torch.isfinite(ls)).all()
            ):
                raise ValueError(
                    f"`lengthscale` must have 1 or {self.dim} finite, positive "
                    f"entries, got {lengthscale.reshape(-1).tolist()}."
                )
            weights = ls / ls.mean()
            weights = weights / weights.log().mean().exp()
        half = weights * self.length / 2.0
        lower = (x_center - half).clamp(0.0, 1.0)
        upper = (x_center + half).clamp(0.0, 1.0)
        return torch.stack([lower, upper])


def _ard_lengthscale(model: Model) -> Tensor | None:
    covar = getattr(model, "covar_module", None)
    if covar is None and hasattr(model, "model"):  # approximate GPyTorch models
        covar = getattr(model.model, "covar_module", None)
    return kernel_lengthscale(covar)
