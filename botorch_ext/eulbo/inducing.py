r"""Inducing-point allocators that never build the ``n x n`` training kernel.

BoTorch's ``GreedyVarianceReduction`` [Burt2020svgp]_ and
``GreedyImprovementReduction`` [Moss2023ipa]_ choose inducing points by a greedy
pivoted Cholesky of the training kernel, weighted by a quality score per point
(1, or the previous model's expected improvement). The greedy rule reads only the
kernel's diagonal and the rows of the points it picks, but BoTorch evaluates the
whole ``n x n`` matrix first: ``8 n^2`` bytes in float64, 3.2 GB at
``n = 20,000``, and ``O(n^2 d)`` time.

The allocators here run the same rule and compute each picked point's kernel row
when it is needed: ``O(n m)`` memory and ``O(n m d)`` time for ``m`` points. They
pick the same points as BoTorch's, except where two candidates' scores tie to the
last bits (a row computed on its own can differ from the same row of the full
matrix in its last bits).

References:
    .. [Burt2020svgp]
        D. R. Burt, C. E. Rasmussen and M. van der Wilk. Convergence of Sparse
        Variational Inference in Gaussian Processes Regression. JMLR 2020.
    .. [Moss2023ipa]
        H. B. Moss, S. W. Ober and V. Picheny. Inducing Point Allocation for Sparse
        Gaussian Processes in High-Throughput Bayesian Optimisation. AISTATS 2023.
    .. [Chen2018dpp]
        L. Chen, G. Zhang and H. Zhou. Fast Greedy MAP Inference for Determinantal
        Point Process to Improve Recommendation Diversity. NeurIPS 2018.
"""

from __future__ import annotations

import torch
from botorch.models.model import Model
from botorch.models.utils.inducing_point_allocators import (
    GreedyImprovementReduction,
    GreedyVarianceReduction,
    InducingPointAllocator,
    QualityFunction,
)
from botorch.utils.probability.utils import ndtr, phi
from gpytorch.module import Module
from torch import Tensor

#: Points per posterior call of ``ChunkedExpectedImprovementQuality``.
QUALITY_CHUNK = 1024

#: The greedy rule stops when the best remaining conditional variance falls below
#: this (BoTorch's value): the kernel matrix is then numerically of lower rank.
PIVOT_EPSILON = 1e-6


def greedy_pivots(
    inputs: Tensor,
    covar_module: Module,
    max_length: int,
    quality_scores: Tensor,
    epsilon: float = PIVOT_EPSILON,
) -> Tensor:
    r"""The greedy pivoted-Cholesky choice of inducing points, row by row.

    With ``d_i`` the conditional variance of point ``i`` given the points picked
    so far and ``s_i`` its quality score, each step picks
    ``argmax_i d_i s_i^2`` [Chen2018dpp]_ and updates ``d`` with the new pivot's
    kernel row ``k(x_pick, X)``, the only row it needs.

    Example:
        >>> Z = greedy_pivots(X, model.covar_module, 100, torch.ones(len(X)))

    Args:
        inputs: ``n x d`` training inputs.
        covar_module: The kernel (a GPyTorch module called as ``k(x1, x2)``).
        max_length: The number of points wanted (at most ``n``).
        quality_scores: ``n`` nonnegative scores.
        epsilon: Stop when the best conditional variance falls below this.

    Returns:
        ``k x d`` inputs, ``k <= max_length`` (fewer when the kernel matrix is
        numerically of lower rank).

    Raises:
        ValueError: If ``inputs`` is not ``n x d``, ``max_length`` is below 1 or
            ``quality_scores`` does not have ``n`` entries.
    """
    if inputs.ndim != 2:
        raise ValueError(f"`inputs` must be n x d, got shape {tuple(inputs.shape)}.")
    n = inputs.shape[0]
    if max_length < 1:
        raise ValueError(f"`max_length` must be at least 1, got {max_length}.")
    if quality_scores.shape != (n,):
        raise ValueError(
            f"`quality_scores` must have shape ({n},), got "
            f"{tuple(quality_scores.shape)}."
        )
    with torch.no_grad():
        variances = covar_module(inputs, diag=True).reshape(n).clone()
        rows = torch.zeros(max_length, n, dtype=inputs.dtype, device=inputs.device)
        weights = quality_scores.square()
        pick = torch.argmax(variances * weights)
        picks = [pick]
        while len(picks) < max_length:
            k = len(picks) - 1
            row = covar_module(inputs[pick].unsqueeze(0), inputs).to_dense()
            row = row.reshape(n)
            rows[k] = (row - rows[:k, pick] @ rows[:k]) / variances[pick].sqrt()
            variances = variances - rows[k].square()
            variances[pick] = -torch.inf
            pick = torch.argmax(variances * weights)
            if variances[pick] < epsilon:
                break
            picks.append(pick)
    return inputs[torch.stack(picks)]


class ChunkedExpectedImprovementQuality(QualityFunction):
    r"""BoTorch's ``ExpectedImprovementQualityFunction``, the posterior in chunks.

    The quality of point ``x`` is the expected improvement of the previous
    model's posterior at ``x`` over the best posterior mean among the inputs,
    ``s (phi(u) + u Phi(u))`` with ``u = (mu - max mu) / s`` [Moss2023ipa]_
    (``mu - min mu`` sign-flipped when minimizing). BoTorch asks for the
    posterior of all ``n`` inputs at once, which for a model with a joint
    posterior (an SVGP's) builds an ``n x n`` covariance; here the means and
    variances come ``chunk_size`` points at a time.

    Example:
        >>> quality = ChunkedExpectedImprovementQuality(model, maximize=True)
        >>> scores = quality(X)

    Args:
        model: The previous BO step's model.
        maximize: Whether the problem is maximized.
        chunk_size: Points per posterior call.
    """

    def __init__(
        self, model: Model, maximize: bool, chunk_size: int = QUALITY_CHUNK
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"`chunk_size` must be at least 1, got {chunk_size}.")
        self._model = model
        self._maximize = maximize
        self.chunk_size = chunk_size

    @torch.no_grad()
    def __call__(self, inputs: Tensor) -> Tensor:
        r"""The ``n`` quality scores of ``n x d`` inputs."""
        means, sigmas = [], []
        for chunk in inputs.split(self.chunk_size):
            posterior = self._model.posterior(chunk)
            mean: Tensor = posterior.mean  # type: ignore[attr-defined]
            variance: Tensor = posterior.variance  # type: ignore[attr-defined]
            means.append(mean.reshape(-1))
            sigmas.append(variance.clamp_min(1e-12).sqrt().reshape(-1))
        mean, sigma = torch.cat(means), torch.cat(sigmas)
        best = mean.max() if self._maximize else mean.min()
        u = (mean - best) / sigma if self._maximize else -(mean - best) / sigma
        return sigma * (phi(u) + u * ndtr(u))


class RowwiseAllocationMixin(InducingPointAllocator):
    r"""BoTorch's ``allocate_inducing_points`` with ``greedy_pivots`` when unbatched.

    Put it before a BoTorch allocator in the bases: the allocator's quality
    function (``_get_quality_function``) is kept, and batched or multi-task
    inputs still go to BoTorch's own allocation (its shapes).

    Example:
        >>> class Rowwise(RowwiseAllocationMixin, GreedyVarianceReduction):
        ...     pass
    """

    def allocate_inducing_points(
        self,
        inputs: Tensor,
        covar_module: Module,
        num_inducing: int,
        input_batch_shape: torch.Size,
    ) -> Tensor:
        r"""Up to ``num_inducing`` points of ``inputs`` (BoTorch's signature).

        Args:
            inputs: A ``batch_shape x n x d`` input tensor.
            covar_module: The kernel.
            num_inducing: The number of points wanted.
            input_batch_shape: The non-task batch shape.

        Returns:
            ``k x d`` points, ``k <= num_inducing``; batched or multi-task
            inputs go to BoTorch's allocation (its shapes).
        """
        covar_module = covar_module.to(inputs.device)
        with torch.no_grad():
            # BoTorch's own case split: its unbatched case is a 2-D kernel matrix.
            batched = covar_module(inputs[..., :1, :], diag=True).ndim != 1
        if batched:
            return super().allocate_inducing_points(
                inputs, covar_module, num_inducing, input_batch_shape
            )
        quality_scores = self._get_quality_function()(inputs)
        return greedy_pivots(inputs, covar_module, num_inducing, quality_scores)


class LowMemoryGreedyVarianceReduction(RowwiseAllocationMixin, GreedyVarianceReduction):
    r"""BoTorch's ``GreedyVarianceReduction`` without the ``n x n`` kernel.

    The points of largest conditional variance, picked greedily [Burt2020svgp]_.

    Example:
        >>> Z = LowMemoryGreedyVarianceReduction().allocate_inducing_points(
        ...     X, kernel, 100, torch.Size([])
        ... )
    """


class LowMemoryGreedyImprovementReduction(
    RowwiseAllocationMixin, GreedyImprovementReduction
):
    r"""BoTorch's ``GreedyImprovementReduction`` without the ``n x n`` kernel.

    Conditional variance weighted by the previous model's expected improvement
    (``ChunkedExpectedImprovementQuality``), picked greedily [Moss2023ipa]_.

    Example:
        >>> allocator = LowMemoryGreedyImprovementReduction(model, maximize=True)
        >>> Z = allocator.allocate_inducing_points(X, kernel, 100, torch.Size([]))
    """

    def _get_quality_function(self) -> QualityFunction:
        return ChunkedExpectedImprovementQuality(self._model, self._maximize)
