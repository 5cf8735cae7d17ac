r"""Argument checks shared by the package.

Every public constructor validates its arguments here so that bad input fails at
construction with a message naming the argument and the offending value, instead
of surfacing later as a NaN inside ``optimize_acqf``.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor


def _as_real_tensor(name: str, value: object) -> Tensor:
    r"""``value`` as a float64 tensor, or a ``ValueError`` naming ``name``."""
    if isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"`{name}` must be a real number, got {value!r}.")
    try:
        return torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"`{name}` must be a real number, got {value!r}.") from e


def check_positive(
    name: str, value: float | Tensor, *, allow_zero: bool = False
) -> None:
    r"""Raise a ``ValueError`` unless every element of ``value`` is finite and > 0.

    Args:
        name: The argument name used in the error message.
        value: A scalar or tensor to check.
        allow_zero: If True, zero is accepted (i.e. the check is ``>= 0``).

    Raises:
        ValueError: If ``value`` is not a real number or tensor, or is NaN,
            infinite or not (strictly) positive.
    """
    t = _as_real_tensor(name, value)
    bound = "non-negative" if allow_zero else "positive"
    ok = torch.isfinite(t) & ((t >= 0) if allow_zero else (t > 0))
    if not bool(ok.all()):
        raise ValueError(f"`{name}` must be finite and {bound}, got {_fmt(value)}.")


def check_finite(name: str, value: float | Tensor) -> None:
    r"""Raise a ``ValueError`` if ``value`` contains NaN or infinite entries.

    Args:
        name: The argument name used in the error message.
        value: A scalar or tensor to check.

    Raises:
        ValueError: If ``value`` is not a real number or tensor, or any entry is
            NaN or +/- inf.
    """
    t = value if isinstance(value, Tensor) else _as_real_tensor(name, value)
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"`{name}` must be finite, got {_fmt(value)}.")


def check_positive_int(name: str, value: int) -> None:
    r"""Raise a ``ValueError`` unless ``value`` is an integer >= 1.

    Args:
        name: The argument name used in the error message.
        value: The value to check.

    Raises:
        ValueError: If ``value`` is not an integer (a Python or NumPy integer)
            or is smaller than one.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")


def check_bounds(name: str, bounds: Tensor, d: int | None = None) -> None:
    r"""Raise a ``ValueError`` unless ``bounds`` is a finite ``2 x d`` box.

    Every column must have ``lower < upper``.

    The one rule for every box the package is given (``draw_representer_points``,
    ``optimize_eulbo``, ...): row 0 holds the lower and row 1 the upper
    bounds, as for ``optimize_acqf``. Lower must lie strictly below upper: a
    zero-width dimension is a fixed feature (``optimize_acqf``'s
    ``fixed_features``), not a box, and Ax's ``RangeParameter`` rejects it too.

    Example:
        >>> check_bounds("bounds", torch.tensor([[0.0, 0.0], [1.0, 2.0]]), d=2)

    Args:
        name: The argument name used in the error message.
        bounds: The tensor to check.
        d: The required number of columns, if known.

    Raises:
        ValueError: If ``bounds`` is not a tensor of shape ``2 x d`` (``d >= 1``),
            has a NaN or infinite entry, or has ``lower >= upper`` in a column;
            the message names the argument and the offending column.
    """
    shape = "2 x d" if d is None else f"2 x {d}"
    if not isinstance(bounds, Tensor):
        raise ValueError(
            f"`{name}` must be a `{shape}` tensor, got {type(bounds).__name__}."
        )
    if (
        bounds.dim() != 2
        or bounds.shape[0] != 2
        or bounds.shape[1] == 0
        or (d is not None and bounds.shape[1] != d)
    ):
        raise ValueError(
            f"`{name}` must be a `{shape}` tensor (lower bounds in row 0, upper "
            f"in row 1), got shape {tuple(bounds.shape)}."
        )
    for bad, rule in (
        (~torch.isfinite(bounds).all(dim=0), "must be finite"),
        (bounds[0] >= bounds[1], "must have lower < upper in every column"),
    ):
        if bool(bad.any()):
            j = int(bad.nonzero()[0, 0])
            raise ValueError(
                f"`{name}` {rule}, got lower = {bounds[0, j].item()!r} and upper = "
                f"{bounds[1, j].item()!r} in column {j} ({int(bad.sum())} of "
                f"{bounds.shape[1]} columns bad)."
            )


def check_no_nan_inputs(X: Tensor, name: str = "X") -> None:
    r"""Raise a ``ValueError`` if the candidate tensor ``X`` has a non-finite entry.

    A NaN or infinite candidate otherwise propagates through the GP posterior
    and comes back as a NaN acquisition value, which ``optimize_acqf`` silently
    treats as a valid (if poor) point.

    Args:
        X: A ``batch_shape x q x d``-dim tensor of candidates.
        name: The argument name used in the error message (``X_pending``, ...).

    Raises:
        ValueError: If ``X`` contains NaN or +/- inf.
    """
    bad = ~torch.isfinite(X) if X.is_floating_point() else None
    if bad is not None and bool(bad.any()):
        kind = "NaN" if bool(torch.isnan(X).any()) else "an infinite value"
        raise ValueError(
            f"`{name}` contains {kind} ({int(bad.sum())} of {X.numel()} entries "
            "not finite)."
        )


def _fmt(value: float | Tensor) -> str:
    if isinstance(value, Tensor):
        if value.numel() == 1:
            return repr(value.item())
        return f"tensor of shape {tuple(value.shape)} with values {value.tolist()}"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return repr(value)
