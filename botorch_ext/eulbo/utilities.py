r"""Expected log-utilities of the EULBO: soft improvement and one-shot soft KG.

The soft improvement is integrated by quadrature or samples.

The EULBO [Maus2024eulbo]_ adds ``E_{q(f)} log u(x, f)`` to the SVGP's ELBO. For the
soft improvement ``u = softplus((f(x) - y*) / tau)`` and ``q = 1`` the expectation
is one-dimensional and computed by Gauss-Hermite quadrature; for ``q > 1`` the
batch utility ``max_j u_j`` is averaged over fixed Monte Carlo samples. For the
one-shot soft knowledge gradient the conditional means after a fantasy
observation come from ``botorch_ext.acquisition.soft_kg``.

The first three functions work on tensors. ``expected_log_utility``,
``fantasy_means`` and ``soft_kg_log_utility`` evaluate them for a model with a
latent SVGP (``LatentSVGPModel``, e.g. ``EULBOModel``) on its transformed
(standardized) outcomes, with gradients to the variational parameters, the
inducing points, the hyperparameters and the inputs. The incumbent ``y*`` is an
argument: the objective (``botorch_ext.eulbo.objective.EULBO.best_f``) chooses
it. ``qLogSoftKGModelScale`` is the soft-KG term as a BoTorch acquisition
function, for the joint step's warm start.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian
        Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
from typing import Protocol, cast

import numpy as np
import torch
from botorch.models.model import Model
from botorch.utils.safe_math import log_softplus
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.models import ApproximateGP
from torch import Tensor

from botorch_ext.acquisition.soft_kg import (
    log_soft_kg,
    one_shot_fantasy_means,
    qLogSoftKG,
)
from botorch_ext.validation import (
    check_no_nan_inputs,
    check_positive,
    check_positive_int,
)

#: Gauss-Hermite points used by the paper (its Table 1).
DEFAULT_NUM_QUADRATURE_POINTS = 20


class LatentSVGPModel(Protocol):
    r"""What the utilities need of a model: its latent SVGP and its scale.

    ``EULBOModel`` is one. The utilities work on the model's transformed
    (standardized) outcome scale, through the latent GPyTorch model, so that
    gradients reach the variational parameters.

    Attributes:
        model: The latent approximate GP (e.g. a ``SingleTaskVariationalGP``'s
            ``model``).
        likelihood: Its Gaussian likelihood.
    """

    model: ApproximateGP
    likelihood: GaussianLikelihood

    def to_model_space(self, X: Tensor) -> Tensor:
        r"""Apply the model's input transform (in eval mode)."""
        ...


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


def expected_log_utility(
    model: LatentSVGPModel,
    X: Tensor,
    best_f: Tensor,
    base_samples: Tensor | None = None,
    utility: str = "ei",
    num_quadrature_points: int = DEFAULT_NUM_QUADRATURE_POINTS,
) -> Tensor:
    r"""``E_{q(f)} log u(X, f)`` of a latent SVGP (transformed scale).

    ``"ei"``: the soft improvement over ``y*`` (``best_f``, transformed scale),
    with temperature 1; by ``expected_log_soft_improvement``
    (``num_quadrature_points`` points) for ``q = 1`` and by
    ``mc_log_soft_improvement`` on ``f_s = mean + L eps_s`` for ``q > 1``.
    ``"kg"``: the last ``S`` points of ``X`` are the one-shot KG's free points
    ``x'_i``, see ``soft_kg_log_utility``.

    Example:
        >>> value = expected_log_utility(model, X, model.train_Y_std.max())

    Args:
        model: A ``LatentSVGPModel`` such as ``EULBOModel``.
        X: ``batch_shape x q x d`` candidates (``batch_shape x (q + S) x d`` for
            ``"kg"``).
        best_f: The incumbent ``y*`` on the transformed scale.
        base_samples: ``num_samples x q`` standard normal draws, required for
            ``q > 1`` and for ``"kg"`` (fixed across the optimization, as in
            BoTorch).
        utility: ``"ei"`` or ``"kg"``.
        num_quadrature_points: Gauss-Hermite points of the ``q = 1`` utility.

    Returns:
        A ``batch_shape`` tensor.

    Raises:
        ValueError: For an unknown ``utility``, NaN or infinite ``X``, or
            missing ``base_samples``.
    """
    if utility not in ("ei", "kg"):
        raise ValueError(f"`utility` must be 'ei' or 'kg', got {utility!r}.")
    check_no_nan_inputs(X)
    if utility == "kg":
        if base_samples is None:
            raise ValueError("`base_samples` are required for utility='kg'.")
        return soft_kg_log_utility(model, X, base_samples, best_f)
    # Latent SVGP marginal on the transformed (standardized) scale.
    f = model.model(model.to_model_space(X))
    if X.shape[-2] == 1:
        return expected_log_soft_improvement(
            f.mean.squeeze(-1),
            f.variance.clamp_min(0).sqrt().squeeze(-1),
            best_f,
            num_points=num_quadrature_points,
        )
    if base_samples is None:
        raise ValueError("`base_samples` are required for q > 1.")
    # The joint covariance: in train mode with more points than inducing points,
    # GPyTorch's default (diag=True) updates only the variances and leaves the
    # prior's covariances off the diagonal.
    f = model.model(model.to_model_space(X), diag=False)
    jitter = 1e-6 * torch.eye(X.shape[-2], dtype=X.dtype, device=X.device)
    L = torch.linalg.cholesky(f.covariance_matrix + jitter)
    # f_s = mean + L eps_s for every t-batch: num_samples x batch_shape x q.
    samples = f.mean.unsqueeze(0) + torch.einsum("...ij,sj->s...i", L, base_samples)
    return mc_log_soft_improvement(samples, best_f)


def fantasy_means(model: LatentSVGPModel, X: Tensor, base_samples: Tensor) -> Tensor:
    r"""One-shot KG conditional means ``E[f(x'_i) | D, (x_j, y_ij)]`` of an SVGP.

    The SVGP's predictive distribution ``q(f)`` is a Gaussian process with mean
    ``mu`` and covariance ``Sigma`` (eq. 4 of [Maus2024eulbo]_). A fantasy
    observation ``y_ij = mu(x_j) + sqrt(Sigma(x_j, x_j) + s2) eps_ij`` (noise
    variance ``s2`` from the likelihood) conditions it by one rank-one Gaussian
    update (``one_shot_fantasy_means``),

        E[f(x'_i) | y_ij] = mu(x'_i)
            + Sigma(x'_i, x_j) / sqrt(Sigma(x_j, x_j) + s2) * eps_ij,

    with ``Sigma(x', x) = k(x', x) - k_x'Z Kzz^-1 k_Zx
    + k_x'Z Kzz^-1 S Kzz^-1 k_Zx``. Given the Cholesky factor of ``Kzz``
    (shared with the ELBO), each ``Sigma(x'_i, x_j)`` costs ``O(m^2)`` (one
    triangular solve per point and a product with the variational factor), and
    everything is differentiable in ``x``, ``x'``, the variational parameters,
    the inducing points and the hyperparameters. GPyTorch's
    ``get_fantasy_model`` would give no gradients to the variational
    parameters, and BoTorch's SVGP cannot ``fantasize``. Each candidate ``x_j``
    is conditioned on separately, as in the paper's batch KG-EULBO.

    Example:
        >>> means = fantasy_means(model, X, torch.randn(32, 1))  # X: b x 33 x d

    Args:
        model: A ``LatentSVGPModel`` such as ``EULBOModel``.
        X: ``batch_shape x (q + S) x d``: ``q`` candidates, then the ``S`` free
            points ``x'_i``.
        base_samples: ``S x q`` standard normal draws ``eps_ij``.

    Returns:
        A ``batch_shape x S x q`` tensor of conditional means (transformed
        scale).
    """
    S, q = base_samples.shape
    if X.shape[-2] != q + S:
        raise ValueError(
            f"`X` must hold q + S = {q + S} points for the one-shot KG, got "
            f"{X.shape[-2]}."
        )
    # diag=False: the posterior covariances between the points also in train
    # mode (see expected_log_utility).
    f = model.model(model.to_model_space(X), diag=False)
    noise = model.likelihood.noise.squeeze(-1)
    return one_shot_fantasy_means(
        f.mean, f.lazy_covariance_matrix, base_samples, noise=noise
    )


def soft_kg_log_utility(
    model: LatentSVGPModel, X: Tensor, base_samples: Tensor, best_f: Tensor
) -> Tensor:
    r"""``1/S sum_i max_j log softplus(E[f(x'_i) | D, (x_j, y_ij)] - y+)``.

    The one-shot soft-KG term of the EULBO [Maus2024eulbo, eq. 10 and its batch
    version] for a ``LatentSVGPModel``, with ``c+ = best_f`` (the paper's
    choice is ``y+``, the best transformed training outcome), temperature 1
    and BoTorch's ``log_softplus`` (``log_soft_kg``).
    ``botorch_ext.acquisition.qLogSoftKG`` is the same quantity for any
    Gaussian model, on its outcome scale.

    Example:
        >>> value = soft_kg_log_utility(model, X, torch.randn(32, 1), y_best)

    Args:
        model: A ``LatentSVGPModel`` such as ``EULBOModel``.
        X: ``batch_shape x (q + S) x d`` as for ``fantasy_means``.
        base_samples: ``S x q`` standard normal draws.
        best_f: The incumbent ``c+`` on the transformed scale.

    Returns:
        A ``batch_shape`` tensor.
    """
    return log_soft_kg(fantasy_means(model, X, base_samples), best_f)


class qLogSoftKGModelScale(qLogSoftKG):
    r"""``qLogSoftKG`` on a model's own transformed scale, with its own fantasy means.

    The EULBO's soft-KG term [Maus2024eulbo]_ is defined on the model's
    transformed (standardized) outcomes with ``c+ = best_f`` and temperature
    1, with the conditional means of the model's latent SVGP
    (``fantasy_means``). This acquisition function is that term, so that
    ``optimize_acqf`` can warm-start the joint EULBO optimization on exactly
    the EULBO's objective for any outcome transform. Inputs are
    ``batch x (q + S) x d``: candidates, then the free points. (Moved here from
    ``botorch_ext.acquisition.soft_kg`` in 0.2.0; ``best_f`` is an argument.)

    Example:
        >>> acqf = qLogSoftKGModelScale(model, torch.randn(32, 1), y_best)
        >>> value = acqf(torch.rand(4, 33, 2))

    Args:
        model: A ``LatentSVGPModel`` that is also a BoTorch ``Model``, e.g.
            ``EULBOModel``.
        base_samples: ``S x q`` standard normal draws, fixed.
        best_f: The incumbent ``c+`` on the transformed scale.
    """

    base_samples: Tensor

    def __init__(
        self, model: LatentSVGPModel, base_samples: Tensor, best_f: Tensor
    ) -> None:
        r"""Use ``best_f`` as ``c+``; see the class docstring for the args."""
        super().__init__(
            model=cast(Model, model), best_f=best_f, base_samples=base_samples
        )

    def fantasy_means(self, X: Tensor) -> Tensor:
        r"""The model's own conditional means at ``X`` (``batch x (q + S) x d``)."""
        model = cast(LatentSVGPModel, self.model)
        return fantasy_means(model, X, self.base_samples)
