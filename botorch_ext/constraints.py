r"""Parameter constraints that hold under any optimizer and leave MAP fits unchanged.

A GPyTorch constraint without a transform (``Interval(..., transform=None)``, as
BoTorch uses for its noise and lengthscale floors) is a promise only
``fit_gpytorch_mll`` keeps: it hands the box to L-BFGS-B as bounds, while Adam,
SGLD or any other torch optimizer steps straight through it. GPyTorch's default
transforms (sigmoid for a box, softplus for a floor) enforce the box, but they
change the coordinates L-BFGS-B works in, never reach the box's ends (a start or
an optimum on a bound, e.g. BOCK's identity warp ``alpha = beta = 1``, becomes an
infinite logit) and so change the fitted values.

``ReflectedInterval`` enforces the box by reflection instead: the transform is the
identity inside ``[lower, upper]`` and folds values outside back in (a triangle
wave with slope of magnitude one everywhere), so

* inside the box the raw parameter *is* the value: BoTorch's
  ``get_parameters_and_bounds`` maps the bounds through the (identity) inverse
  transform and passes L-BFGS-B the same bounds as for ``transform=None``, so MAP
  fits are the same to the last bit, and a start on a bound is allowed;
* any raw value, wherever an optimizer or sampler puts it, maps into the box, with
  a non-zero gradient (a parameter pushed out comes back in when pushed back).

Example:
    >>> from gpytorch.kernels import MaternKernel
    >>> kernel = MaternKernel(
    ...     lengthscale_constraint=ReflectedInterval(0.01, 2.0, initial_value=1.0)
    ... )
"""

from __future__ import annotations

import math

import torch
from gpytorch.constraints import Interval
from torch import Tensor


def _identity(x: Tensor) -> Tensor:
    return x


class ReflectedInterval(Interval):  # type: ignore[misc]  # GPyTorch ships no type information
    r"""The box ``[lower_bound, upper_bound]``, enforced by reflection at its ends.

    ``transform(raw)`` is ``raw`` inside the box and the mirror image of ``raw``
    in the nearest end outside it, repeated (for a finite box, a triangle wave
    of period ``2 (upper - lower)``). One end may be infinite (a floor with
    ``upper_bound=math.inf``, a ceiling with ``lower_bound=-math.inf``); then
    values are mirrored at the finite end only. ``inverse_transform`` is the
    identity on the box and refuses values outside it.

    Example:
        >>> c = ReflectedInterval(0.5, 1.0)
        >>> c.transform(torch.tensor([0.7, 1.1, 1.6]))
        tensor([0.7000, 0.9000, 0.6000])

    Args:
        lower_bound: The lower end (``-math.inf`` for none).
        upper_bound: The upper end (``math.inf`` for none).
        initial_value: Optional starting value inside the box (GPyTorch sets the
            parameter to it when the constraint is registered).
    """

    def __init__(
        self,
        lower_bound: float | Tensor,
        upper_bound: float | Tensor,
        initial_value: float | Tensor | None = None,
    ) -> None:
        lower = torch.as_tensor(lower_bound, dtype=torch.double)
        upper = torch.as_tensor(upper_bound, dtype=torch.double)
        for name, bound in (("lower_bound", lower), ("upper_bound", upper)):
            if bool(torch.isnan(bound).any()):
                raise ValueError(f"`{name}` must not be NaN; got {_fmt(bound)}.")
            finite = torch.isfinite(bound)
            if bool(finite.any()) and not bool(finite.all()):
                raise ValueError(
                    f"`{name}` must be finite everywhere or infinite everywhere; "
                    f"got {_fmt(bound)}."
                )
        self._finite_lower = bool(torch.isfinite(lower).all())
        self._finite_upper = bool(torch.isfinite(upper).all())
        if not (self._finite_lower or self._finite_upper):
            raise ValueError(
                "`ReflectedInterval` needs at least one finite bound; got "
                f"`lower_bound` {_fmt(lower)} and `upper_bound` {_fmt(upper)}."
            )
        super().__init__(
            lower_bound=lower_bound,
            upper_bound=upper_bound,
            transform=_identity,
            inv_transform=_identity,
            initial_value=initial_value,
        )

    def transform(self, tensor: Tensor | float) -> Tensor:
        r"""Map a raw value into the box: itself inside, reflected outside.

        Args:
            tensor: Raw values, any shape.

        Returns:
            Values in ``[lower_bound, upper_bound]``, the shape of ``tensor``.
        """
        raw = torch.as_tensor(tensor)
        if not raw.is_floating_point():
            raw = raw.to(self.lower_bound)
        lower = self.lower_bound.to(raw)
        upper = self.upper_bound.to(raw)
        inside = (raw >= lower) & (raw <= upper)
        if bool(inside.all()):
            # The identity, as the `where` below gives it inside (value and
            # gradient), without its dozen small operations: the common case
            # under L-BFGS-B, which keeps the raw values within the bounds.
            return raw
        if self._finite_lower and self._finite_upper:
            # A triangle wave of period 2 * width through the box.
            width = upper - lower
            t = torch.remainder(raw - lower, 2 * width)
            folded = lower + width - (t - width).abs()
        elif self._finite_lower:
            folded = lower + (raw - lower).abs()
        else:
            folded = upper - (upper - raw).abs()
        # Exactly the raw value inside (value and gradient), not a rounded copy.
        return torch.where(inside, raw, folded)

    def inverse_transform(self, transformed_tensor: Tensor | float) -> Tensor:
        r"""The raw value of a value in the box: the value itself.

        Args:
            transformed_tensor: Values in ``[lower_bound, upper_bound]``.

        Returns:
            The same values as a tensor.

        Raises:
            ValueError: If a value lies outside the box (or is NaN).
        """
        value = torch.as_tensor(transformed_tensor)
        if not value.is_floating_point():
            value = value.to(self.lower_bound)
        lower = self.lower_bound.to(value)
        upper = self.upper_bound.to(value)
        if not bool(((value >= lower) & (value <= upper)).all()):
            shown = [f"{v:.6g}" for v in value.reshape(-1).tolist()]
            raise ValueError(
                f"value(s) {', '.join(shown)} outside the box [{_fmt(lower)}, "
                f"{_fmt(upper)}] of {self}."
            )
        return value

    def __repr__(self) -> str:
        # GPyTorch's shows tensor bounds as an empty module, ``Interval()``.
        return f"{self._get_name()}({_fmt(self.lower_bound)}, {_fmt(self.upper_bound)})"


def _fmt(bound: Tensor) -> str:
    if bound.numel() != 1:
        return str(bound.tolist())
    value = bound.item()
    return str(value) if not math.isfinite(value) else f"{value:.3E}"
