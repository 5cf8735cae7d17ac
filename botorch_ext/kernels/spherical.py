r"""Polar coordinates about a center and polynomials of the angle between points.

The building blocks of kernels on a ball (``BOCKKernel``): the split of
offsets into norm and direction, the moments of a uniform direction, and
polynomial evaluation by Horner's rule.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from botorch_ext.validation import check_positive_int


def sphere_moments(dim: int, degree: int) -> list[float]:
    r"""Moments ``m_p = E[(a . e)^p]``, ``p = 0..degree``, of a uniform unit vector.

    For ``a`` uniform on the sphere ``S^{dim-1}`` and any fixed unit vector ``e``,
    odd moments vanish and ``m_p = prod_{k < p/2} (2k + 1) / (dim + 2k)`` for even
    ``p``; ``m_0 = 1``.

    Example:
        >>> sphere_moments(3, 2)  # [1, 0, 1/3]
        [1.0, 0.0, 0.3333333333333333]

    Args:
        dim: The dimension of the ambient space (``>= 1``).
        degree: The largest power ``p``.

    Returns:
        A list of ``degree + 1`` moments.
    """
    check_positive_int("dim", dim)
    moments = []
    for p in range(degree + 1):
        if p % 2:
            moments.append(0.0)
        else:
            moments.append(
                float(math.prod((2 * k + 1) / (dim + 2 * k) for k in range(p // 2)))
            )
    return moments


def polar_split(diff: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""Split offsets from the center into norm, unit direction and a center mask.

    ``norm = ||diff||`` and ``a = diff / ||diff||`` are computed with the safe
    pattern (the square root and the division only ever see positive values), so
    values and gradients are finite everywhere. At exactly the center the norm is
    0 with zero gradient, the direction is the zero vector, and ``at_center`` is
    True; callers decide what the center's angular similarity is.

    Example:
        >>> norm, a, at_center = polar_split(torch.tensor([[3.0, 4.0], [0.0, 0.0]]))
        >>> norm.squeeze(-1), at_center.squeeze(-1)
        (tensor([5., 0.]), tensor([False,  True]))

    Args:
        diff: A ``batch_shape x n x d`` tensor of offsets ``x - center``.

    Returns:
        ``norm`` (``batch_shape x n x 1``), ``a`` (``batch_shape x n x d``) and
        ``at_center`` (``batch_shape x n x 1``, bool).
    """
    sq = diff.pow(2).sum(dim=-1, keepdim=True)
    at_center = sq == 0
    safe_norm = torch.where(at_center, torch.ones_like(sq), sq).sqrt()
    norm = torch.where(at_center, torch.zeros_like(sq), safe_norm)
    return norm, diff / safe_norm, at_center


def horner(weights: Tensor, z: Tensor) -> Tensor:
    r"""``sum_p weights[..., p] z^p`` by Horner's rule (weights broadcast to ``z``)."""
    out = weights[..., -1]
    for p in range(weights.shape[-1] - 2, -1, -1):
        out = torch.addcmul(weights[..., p], out, z)
    return out
