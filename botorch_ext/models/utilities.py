r"""Expected log-utilities of the EULBO: soft improvement by quadrature or samples.

The EULBO [Maus2024eulbo] adds ``E_{q(f)} log u(x, f)`` to the SVGP's ELBO. For the
soft improvement ``u = softplus((f(x) - y*) / tau)`` and ``q = 1`` the expectation
is one-dimensional and computed by Gauss-Hermite quadrature; for ``q > 1`` the
batch utility ``max_j u_j`` is averaged over fixed Monte Carlo samples.

References

.. [Maus2024eulbo]
    N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
    Approximation-Aware Bayesian
    Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from botorch.utils.safe_math import log_softplus
from torch import Tensor

from botorch_ext.validation import check_positive, check_positive_int

#: Gauss-Hermite points used by the paper (its Table 1).
DEFAULT_NUM_QUADRATURE_POINTS = 20


def gauss_hermite_normal(
    num_points: int = DEFAULT_NUM_QUADRATURE_POINTS,
    dtype: torch.dtype = torch.double,
    device: torch.device | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Nodes and weights with ``E[g(z)] ~= sum_i w_i g(z_i)`` for ``z ~ N(0, 1)``.

    The physicists' Gauss-Hermite rule integrates ``exp(-x^2) h(x)``; with
    ``z = sqrt(2) x`` and ``w = w_H / sqrt(pi)`` it integrates against the standard
    normal density, exactly for polynomials of degree ``< 2 num_points``.

    Example:
        >>> z, w = gauss_hermite_normal(20)
        >>> (w * z**2).sum()  # E[z^2] = 1
        tensor(1.0000, dtype=torch.float64)

    Args:
        num_points: Number of nodes.
        dtype: Dtype of the returned tensors.
        device: Device of the returned tensors.

    Returns:
        A tuple ``(nodes, weights)`` of ``num_points``-vectors.
    """
    check_positive_int("num_points", num_points)
    x, w = np.polynomial.hermite.hermgauss(num_points)
    nodes = torch.as_tensor(x * math.sqrt(2.0), dtype=dtype, device=device)
    weights = torch.as_tensor(w / math.sqrt(math.pi), dtype=dtype, device=device)
    return nodes, weights


def expected_log_soft_improvement(
    mean: Tensor,
    std: Tensor,
    best_f: float | Tensor,
    tau: float = 1.0,
    num_points: int = DEFAULT_NUM_QUADRATURE_POINTS,
) -> Tensor:
    r"""``E_{f ~ N(mean, std^2)} log softplus((f - best_f) / tau)`` by quadrature.

    The soft-EI utility of [Maus2024eulbo, Sec. 3.2] for one point, integrated
    with ``num_points``-point Gauss-Hermite quadrature (the paper used 20). The
    log of the softplus is BoTorch's ``log_softplus``, accurate far below the
    incumbent where ``softplus`` underflows (there the value tends to
    ``(mean - best_f) / tau``).

    Example:
        >>> post = model.posterior(X)  # X: b x 1 x d
        >>> val = expected_log_soft_improvement(
        ...     post.mean.squeeze(-1), post.variance.sqrt().squeeze(-1), best_f
        ... )

    Args:
        mean: Posterior means, any shape.
        std: Posterior standard deviations (>= 0), broadcastable with ``mean``.
        best_f: The incumbent ``y*``, broadcastable with ``mean``.
        tau: Temperature of the softplus (objective units); the paper uses 1.
        num_points: Number of quadrature points.

    Returns:
        The expected log utility, with the broadcast shape of the inputs.
    """
    check_positive("tau", tau)
    nodes, weights = gauss_hermite_normal(num_points, mean.dtype, mean.device)
    f = mean.unsqueeze(-1) + std.unsqueeze(-1) * nodes
    best_f = torch.as_tensor(best_f, dtype=mean.dtype, device=mean.device)
    return (log_softplus((f - best_f.unsqueeze(-1)) / tau) * weights).sum(dim=-1)


def mc_log_soft_improvement(
    samples: Tensor, best_f: float | Tensor, tau: float = 1.0
) -> Tensor:
    r"""``mean_s log max_j softplus((y_sj - best_f) / tau)``: the q-batch estimate.

    [Maus2024eulbo, Sec. 3.4]: with fixed base samples the batch soft
    improvement is averaged over samples. ``log`` is increasing, so the log of
    the max is the max of the logs, computed with ``log_softplus``.

    Example:
        >>> samples = posterior.rsample_from_base_samples(shape, base_samples)
        >>> val = mc_log_soft_improvement(samples.squeeze(-1), best_f)

    Args:
        samples: ``num_samples x batch_shape x q`` samples of ``f``.
        best_f: The incumbent, broadcastable with ``batch_shape``.
        tau: Temperature of the softplus (objective units).

    Returns:
        A ``batch_shape`` tensor.
    """
    check_positive("tau", tau)
    best_f = torch.as_tensor(best_f, dtype=samples.dtype, device=samples.device)
    log_u = log_softplus((samples - best_f.unsqueeze(-1)) / tau)
    return log_u.amax(dim=-1).mean(dim=0)
