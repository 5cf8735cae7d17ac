r"""Stein discrepancies for scoring (SG)MCMC output: KSD and FSSD.

MAMBA [Coullon2023mamba, Sec. 2.2] ranks stochastic gradient MCMC runs by how
far their samples are from the target ``pi``, using only the samples and the
score ``s(x) = grad log pi(x)`` at each sample (``pi`` is needed only up to its
normalizing constant). Two discrepancies are provided:

- the kernel Stein discrepancy (KSD) [Liu2016ksd, Chwialkowski2016ksd] with the
  inverse multiquadric (IMQ) base kernel ``k(x, y) = (c^2 + ||x - y||^2)^beta``
  recommended by [Gorham2017ksd]_, quadratic in the number of samples;
- the finite set Stein discrepancy (FSSD) [Jitkrittum2017fssd]_, the Stein
  witness function evaluated at a few optimized test locations, linear in the
  number of samples.

Both are returned as non-negative V-statistics (square roots of squared
discrepancies), so that smaller is better and arms can be ranked directly.

References:

.. [Coullon2023mamba]
    J. Coullon, L. South and C. Nemeth. Efficient and generalizable tuning
    strategies for stochastic gradient MCMC. Statistics and Computing, 2023.
.. [Liu2016ksd]
    Q. Liu, J. Lee and M. Jordan. A kernelized Stein discrepancy for
    goodness-of-fit tests. ICML 2016.
.. [Chwialkowski2016ksd]
    K. Chwialkowski, H. Strathmann and A. Gretton. A kernel test of goodness of
    fit. ICML 2016.
.. [Gorham2017ksd]
    J. Gorham and L. Mackey. Measuring sample quality with kernels. ICML 2017.
.. [Jitkrittum2017fssd]
    W. Jitkrittum, W. Xu, Z. Szabo, K. Fukumizu and A. Gretton. A linear-time
    kernel goodness-of-fit test. NeurIPS 2017.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from botorch_ext.validation import check_positive, check_positive_int

#: Relative ridge added to the Gaussian fit that draws the initial FSSD test
#: locations (see ``fssd_test_locations``).
FSSD_INIT_RIDGE = 1e-6


def kernel_stein_discrepancy(
    samples: Tensor,
    scores: Tensor,
    c: float = 1.0,
    beta: float = -0.5,
    block_size: int = 1024,
) -> Tensor:
    r"""Kernel Stein discrepancy of ``samples`` to the target with ``scores``.

    ``KSD = sqrt((1 / n^2) sum_{i, j} k_pi(x_i, x_j))`` [Liu2016ksd]_, the
    V-statistic of the Langevin Stein kernel

        ``k_pi(x, y) = s(x)^T s(y) k + s(x)^T grad_y k + grad_x k^T s(y)
        + trace(grad_x grad_y k)``

    built on the IMQ base kernel ``k(x, y) = (c^2 + ||x - y||^2)^beta``. With
    ``r = x - y`` and ``u = c^2 + ||r||^2``: ``grad_x k = -grad_y k =
    2 beta u^(beta - 1) r`` and ``trace(grad_x grad_y k) = -2 beta d u^(beta - 1)
    - 4 beta (beta - 1) u^(beta - 2) ||r||^2``, so every term is a matrix product
    of the ``n x d`` inputs and no ``n x n x d`` tensor is formed. [Gorham2017ksd]_
    prove that with ``c > 0`` and ``beta in (-1, 0)`` the KSD detects
    non-convergence; MAMBA [Coullon2023mamba]_ uses it as the (negated) reward of
    a hyperparameter arm. The cost is ``O(n^2 d)`` time and
    ``O(block_size^2 + n d)`` memory.

    Example:
        >>> x = torch.randn(1000, 2)
        >>> kernel_stein_discrepancy(x, -x)  # N(0, I) target: small
        >>> kernel_stein_discrepancy(x + 1, -(x + 1))  # shifted: larger

    Args:
        samples: An ``n x d`` tensor of samples ``x_i`` (float32 or float64).
        scores: An ``n x d`` tensor of scores ``s(x_i) = grad log pi(x_i)`` with
            the dtype and device of ``samples``.
        c: The IMQ kernel's offset, ``c > 0``.
        beta: The IMQ kernel's exponent, ``-1 < beta < 0``.
        block_size: The side of the square blocks of the ``n x n`` kernel matrix
            that are formed at a time; bounds the memory.

    Returns:
        A scalar tensor (dtype and device of ``samples``) with the KSD ``>= 0``.

    Raises:
        ValueError: If an input is malformed or non-finite, or a parameter is out
            of range.
    """
    _check_samples_and_scores(samples, scores)
    _check_imq(c, beta)
    check_positive_int("block_size", block_size)
    n, d = samples.shape
    # The Stein kernel depends on x only through x - y; centering keeps the
    # expanded squared distances ||x||^2 + ||y||^2 - 2 x^T y accurate in float32.
    x = samples - samples.mean(dim=0)
    acc_dtype = _accumulation_dtype(samples)
    total = torch.zeros((), dtype=acc_dtype, device=samples.device)
    starts = range(0, n, block_size)
    for a in starts:
        xa, sa = x[a : a + block_size], scores[a : a + block_size]
        for b in starts:
            # k_pi is symmetric: visit the upper block triangle, count off-diagonal
            # blocks twice.
            if b < a:
                continue
            xb, sb = x[b : b + block_size], scores[b : b + block_size]
            block = _stein_kernel_block(xa, sa, xb, sb, c * c, beta, d)
            total = total + (1.0 if a == b else 2.0) * block.sum(dtype=acc_dtype)
    # The V-statistic is >= 0 in exact arithmetic; rounding can push it below.
    return (total / (n * n)).clamp_min(0.0).sqrt().to(samples.dtype)


def fssd_test_locations(
    samples: Tensor,
    scores: Tensor,
    num_test_locations: int = 10,
    test_locations: Tensor | None = None,
    optimize: bool = True,
    num_steps: int = 50,
    lr: float = 0.05,
    c: float = 1.0,
    beta: float = -0.5,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Test locations for the FSSD: a Gaussian draw refined by Adam.

    Following [Jitkrittum2017fssd]_ and [Coullon2023mamba, Sec. 2.2.2], the
    ``J = num_test_locations`` locations are drawn from ``N(m, S + eps I)``,
    with ``m`` and ``S`` the sample mean and covariance of ``samples`` and the
    ridge ``eps = 1e-6 (trace(S) / d + c^2)`` making the draw non-degenerate when
    ``n < d`` or a coordinate does not vary (a continuous draw, so the locations
    are distinct almost surely). The draw uses ``x_bar + X_c^T z / sqrt(n - 1)
    + sqrt(eps) z'`` with ``X_c`` the centered samples, which has exactly that
    covariance without factorizing ``S``. The locations are then moved by
    ``num_steps`` Adam steps to maximize ``FSSD^2`` itself. [Jitkrittum2017fssd]_
    maximize a test-power criterion (``FSSD^2`` over its null standard deviation)
    instead; for ranking arms by a non-negative discrepancy the statistic itself
    is the natural objective. The best locations seen, the initial ones
    included, are returned, so optimizing never lowers the statistic.

    Computing the FSSD for given locations is cheap (linear in ``n``); to get
    both the locations and the statistic without optimizing twice, call this
    function and pass its output to ``finite_set_stein_discrepancy`` with
    ``optimize=False``.

    Example:
        >>> x = torch.randn(500, 2)
        >>> gen = torch.Generator().manual_seed(0)
        >>> V = fssd_test_locations(x + 1, -(x + 1), generator=gen)
        >>> finite_set_stein_discrepancy(x + 1, -(x + 1), test_locations=V,
        ...                              optimize=False)

    Args:
        samples: An ``n x d`` tensor of samples (float32 or float64).
        scores: An ``n x d`` tensor of scores ``grad log pi`` at ``samples``.
        num_test_locations: The number ``J`` of locations to draw; ignored when
            ``test_locations`` is given.
        test_locations: Optional ``J x d`` initial locations replacing the draw.
        optimize: If False, the initial locations are returned unchanged.
        num_steps: Number of Adam steps.
        lr: Adam's learning rate, in the units of ``samples``.
        c: The IMQ kernel's offset, ``c > 0``.
        beta: The IMQ kernel's exponent, ``-1 < beta < 0``.
        generator: Optional generator for the draw, for reproducibility; it may
            live on the CPU or on the device of ``samples``.

    Returns:
        A ``J x d`` tensor (dtype and device of ``samples``) of test locations.

    Raises:
        ValueError: If an input is malformed or non-finite, or a parameter is out
            of range.
    """
    _check_fssd_args(
        samples, scores, num_test_locations, test_locations, num_steps, lr, c, beta
    )
    if test_locations is None:
        V = _draw_test_locations(samples, num_test_locations, c, generator)
    else:
        V = test_locations.detach().clone()
    if not optimize or num_steps == 0:
        return V
    x, s = samples.detach(), scores.detach()
    with torch.enable_grad():
        V = V.requires_grad_(True)
        adam = torch.optim.Adam([V], lr=lr, maximize=True)
        best_value, best_V = -math.inf, V.detach().clone()
        for step in range(num_steps + 1):
            adam.zero_grad()
            value = _fssd_squared(x, s, V, c * c, beta)
            # Adam can overshoot; keeping the best iterate makes the result
            # never worse than the starting locations.
            if value.item() > best_value:
                best_value, best_V = value.item(), V.detach().clone()
            if step < num_steps:
                value.backward()
                adam.step()
    return best_V


def finite_set_stein_discrepancy(
    samples: Tensor,
    scores: Tensor,
    num_test_locations: int = 10,
    test_locations: Tensor | None = None,
    optimize: bool = True,
    num_steps: int = 50,
    lr: float = 0.05,
    c: float = 1.0,
    beta: float = -0.5,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Finite set Stein discrepancy of ``samples`` to the target with ``scores``.

    ``FSSD^2 = (1 / (d J)) sum_{j=1}^J ||g(v_j)||^2`` [Jitkrittum2017fssd]_ with
    the empirical Stein witness ``g(v) = (1 / n) sum_i [s(x_i) k(x_i, v)
    + grad_{x_i} k(x_i, v)]``, a ``d``-vector per test location ``v_j``. The
    base kernel is the IMQ kernel ``k(x, v) = (c^2 + ||x - v||^2)^beta`` of
    ``kernel_stein_discrepancy``; it is real analytic, the property
    [Jitkrittum2017fssd]_ require for ``FSSD^2 = 0`` to characterize the target
    for almost every choice of locations. Squaring the plug-in witness gives a
    V-statistic, so the result is ``>= 0`` and usable as a MAMBA arm score
    [Coullon2023mamba, Sec. 2.2.2]. The cost is ``O(n J d)`` per evaluation, plus
    ``num_steps`` evaluations with gradients for the test locations, chosen by
    ``fssd_test_locations`` (Gaussian draw, then Adam maximizing ``FSSD^2``).

    Example:
        >>> x = torch.randn(500, 2)
        >>> gen = torch.Generator().manual_seed(0)
        >>> finite_set_stein_discrepancy(x, -x, generator=gen)  # small
        >>> finite_set_stein_discrepancy(2 * x, -2 * x, generator=gen)  # larger

    Args:
        samples: An ``n x d`` tensor of samples (float32 or float64).
        scores: An ``n x d`` tensor of scores ``grad log pi`` at ``samples``.
        num_test_locations: The number ``J`` of test locations to draw; ignored
            when ``test_locations`` is given.
        test_locations: Optional ``J x d`` locations, the starting point of the
            optimization (or the final locations if ``optimize=False``).
        optimize: Whether to optimize the locations by Adam.
        num_steps: Number of Adam steps.
        lr: Adam's learning rate, in the units of ``samples``.
        c: The IMQ kernel's offset, ``c > 0``.
        beta: The IMQ kernel's exponent, ``-1 < beta < 0``.
        generator: Optional generator for the draw of the locations.

    Returns:
        A scalar tensor (dtype and device of ``samples``) with ``FSSD >= 0``.

    Raises:
        ValueError: If an input is malformed or non-finite, or a parameter is out
            of range.
    """
    V = fssd_test_locations(
        samples,
        scores,
        num_test_locations=num_test_locations,
        test_locations=test_locations,
        optimize=optimize,
        num_steps=num_steps,
        lr=lr,
        c=c,
        beta=beta,
        generator=generator,
    )
    return _fssd_squared(samples, scores, V, c * c, beta).clamp_min(0.0).sqrt()


def _stein_kernel_block(
    xa: Tensor, sa: Tensor, xb: Tensor, sb: Tensor, c2: float, beta: float, d: int
) -> Tensor:
    r"""The ``m x p`` block ``k_pi(xa_i, xb_j)`` of the IMQ Stein kernel matrix."""
    sq = (
        (xa * xa).sum(-1, keepdim=True)
        + (xb * xb).sum(-1).unsqueeze(0)
        - 2.0 * (xa @ xb.T)
    ).clamp_min(0.0)
    u = sq + c2
    u_bm1 = u.pow(beta - 1.0)
    # s(x)^T grad_y k + grad_x k^T s(y) = 2 beta u^(beta-1) r^T (s(y) - s(x)),
    # expanded so that only matrix products of the n x d inputs appear.
    r_ds = (
        xa @ sb.T
        + sa @ xb.T
        - (xa * sa).sum(-1, keepdim=True)
        - (xb * sb).sum(-1).unsqueeze(0)
    )
    return (
        (sa @ sb.T) * (u_bm1 * u)
        + (2.0 * beta) * u_bm1 * (r_ds - d)
        - (4.0 * beta * (beta - 1.0)) * (u_bm1 / u) * sq
    )


def _fssd_squared(x: Tensor, s: Tensor, V: Tensor, c2: float, beta: float) -> Tensor:
    r"""``FSSD^2`` for ``n x d`` samples ``x``, scores ``s`` and ``J x d`` ``V``."""
    n, d = x.shape
    # k and its gradient depend on x - v only: center both for accurate
    # expanded squared distances.
    m = x.detach().mean(dim=0)
    x, V = x - m, V - m
    sq = (
        (x * x).sum(-1, keepdim=True) + (V * V).sum(-1).unsqueeze(0) - 2.0 * (x @ V.T)
    ).clamp_min(0.0)
    u = sq + c2
    w = u.pow(beta - 1.0)  # n x J; grad_x k(x_i, v_j) = 2 beta w_ij (x_i - v_j)
    witness = s.T @ (w * u) + (2.0 * beta) * (x.T @ w - V.T * w.sum(dim=0))
    witness = witness / n  # d x J
    return witness.pow(2).sum() / (d * V.shape[0])


def _draw_test_locations(
    samples: Tensor, num: int, c: float, generator: torch.Generator | None
) -> Tensor:
    n, d = samples.shape
    x = samples.detach()
    mean = x.mean(dim=0)
    xc = x - mean
    var = xc.pow(2).sum() / (max(n - 1, 1) * d)
    eps = FSSD_INIT_RIDGE * (var.item() + c * c)
    # Draw on the generator's device (a CPU generator cannot fill a CUDA tensor),
    # then move to the samples.
    gen_device = generator.device if generator is not None else samples.device
    kw: dict[str, Any] = {
        "dtype": samples.dtype,
        "device": gen_device,
        "generator": generator,
    }
    z_n = torch.randn(num, n, **kw).to(samples.device)
    z_d = torch.randn(num, d, **kw).to(samples.device)
    return mean + z_n @ xc / math.sqrt(max(n - 1, 1)) + math.sqrt(eps) * z_d


def _accumulation_dtype(t: Tensor) -> torch.dtype:
    # The n^2 Stein kernel terms cancel down to O(n); summing the blocks in
    # float64 keeps float32 inputs accurate. MPS has no float64.
    return t.dtype if t.device.type == "mps" else torch.float64


def _check_matrix(name: str, value: Tensor) -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"`{name}` must be a tensor, got {type(value).__name__}.")
    if value.dim() != 2:
        raise ValueError(
            f"`{name}` must be a 2-D `n x d` tensor, got shape {tuple(value.shape)}."
        )
    if not value.is_floating_point():
        raise ValueError(f"`{name}` must be floating point, got {value.dtype}.")
    bad = ~torch.isfinite(value)
    if bool(bad.any()):
        row = int(bad.any(dim=-1).nonzero()[0, 0])
        raise ValueError(
            f"`{name}` must be finite, got {int(bad.sum())} non-finite entries "
            f"(first in row {row}: {value[row].tolist()})."
        )


def _check_samples_and_scores(samples: Tensor, scores: Tensor) -> None:
    _check_matrix("samples", samples)
    _check_matrix("scores", scores)
    if samples.shape[0] == 0 or samples.shape[1] == 0:
        raise ValueError(
            "`samples` must have at least one row and one column, got shape "
            f"{tuple(samples.shape)}."
        )
    if scores.shape != samples.shape:
        raise ValueError(
            f"`scores` must have the shape of `samples` {tuple(samples.shape)}, got "
            f"{tuple(scores.shape)}."
        )
    if scores.dtype != samples.dtype or scores.device != samples.device:
        raise ValueError(
            f"`scores` must have the dtype and device of `samples` ({samples.dtype}, "
            f"{samples.device}), got ({scores.dtype}, {scores.device})."
        )


def _check_imq(c: float, beta: float) -> None:
    check_positive("c", c)
    beta_f = float(beta)
    if not (-1.0 < beta_f < 0.0):
        raise ValueError(
            f"`beta` must be in (-1, 0), the range in which Gorham and Mackey (2017) "
            f"prove the IMQ kernel Stein discrepancy detects non-convergence; got "
            f"{beta!r}."
        )


def _check_fssd_args(
    samples: Tensor,
    scores: Tensor,
    num_test_locations: int,
    test_locations: Tensor | None,
    num_steps: int,
    lr: float,
    c: float,
    beta: float,
) -> None:
    _check_samples_and_scores(samples, scores)
    _check_imq(c, beta)
    check_positive_int("num_test_locations", num_test_locations)
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
        raise ValueError(
            f"`num_steps` must be a non-negative integer, got {num_steps!r}."
        )
    check_positive("lr", lr)
    if test_locations is not None:
        _check_matrix("test_locations", test_locations)
        d = samples.shape[1]
        if test_locations.shape[0] == 0 or test_locations.shape[1] != d:
            raise ValueError(
                f"`test_locations` must be a `J x d` tensor with J >= 1 and d = {d}, "
                f"got shape {tuple(test_locations.shape)}."
            )
        if (
            test_locations.dtype != samples.dtype
            or test_locations.device != samples.device
        ):
            raise ValueError(
                "`test_locations` must have the dtype and device of `samples` "
                f"({samples.dtype}, {samples.device}), got ({test_locations.dtype}, "
                f"{test_locations.device})."
            )
