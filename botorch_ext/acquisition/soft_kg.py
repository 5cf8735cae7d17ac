r"""The one-shot soft knowledge gradient of [Maus2024eulbo]_, in log space.

Data path: ``X`` (``batch_shape x (q + S) x d``: ``q`` candidates, then ``S``
free points ``x'_i``) -> ``model.posterior(X, observation_noise=True)`` -> the
conditional mean at each ``x'_i`` after a fantasy observation at each ``x_j``
(``one_shot_fantasy_means``, one rank-one Gaussian update per pair) -> log soft
improvement over ``c+`` -> max over the ``q`` candidates, mean over the ``S``
fantasies (``log_soft_kg``).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
    .. [Balandat2020botorch]
        M. Balandat, B. Karrer, D. R. Jiang, S. Daulton, B. Letham, A. G. Wilson and
        E. Bakshy. BoTorch: A Framework for Efficient Monte-Carlo Bayesian
        Optimization. NeurIPS 2020.
"""

from __future__ import annotations

from typing import cast

import torch
from botorch.acquisition.acquisition import OneShotAcquisitionFunction
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.utils.safe_math import log_softplus
from botorch.utils.sampling import draw_sobol_normal_samples
from botorch.utils.transforms import is_fully_bayesian, t_batch_mode_transform
from linear_operator.operators import LinearOperator
from torch import Tensor

from botorch_ext.validation import (
    check_finite,
    check_no_nan_inputs,
    check_positive,
    check_positive_int,
)

#: Fantasy samples ``S`` (and free points ``x'_i``) when none are given; BoTorch's
#: ``qKnowledgeGradient`` uses the same default.
DEFAULT_NUM_FANTASIES = 64


def one_shot_fantasy_means(
    mean: Tensor,
    covariance: Tensor | LinearOperator,
    base_samples: Tensor,
    noise: Tensor | float | None = None,
) -> Tensor:
    r"""``E[f(x'_i) | D, (x_j, y_ij)]`` for every fantasy ``i`` and candidate ``j``.

    With the joint Gaussian predictive distribution (mean ``mu``, covariance
    ``Sigma``) of the ``q`` candidates ``x_j`` and the ``S`` free points ``x'_i``,
    a fantasy observation ``y_ij = mu(x_j) + sqrt(Sigma(x_j, x_j) + s2) eps_ij``
    conditions it by one rank-one Gaussian update:

        E[f(x'_i) | y_ij] = mu(x'_i)
            + Sigma(x'_i, x_j) / sqrt(Sigma(x_j, x_j) + s2) * eps_ij.

    Each candidate is conditioned on separately, as in the batch KG-EULBO of
    [Maus2024eulbo]_. Differentiable in everything it is given.

    Example:
        >>> mvn = model.posterior(X, observation_noise=True).distribution
        >>> means = one_shot_fantasy_means(mvn.mean, mvn.covariance_matrix, eps)

    Args:
        mean: ``batch_shape x (q + S)`` predictive means, candidates first.
        covariance: ``batch_shape x (q + S) x (q + S)`` predictive covariance (a
            tensor or a ``LinearOperator``; only the ``S x q`` cross block and
            the candidates' diagonal are evaluated).
        base_samples: ``S x q`` standard normal draws ``eps_ij``.
        noise: The observation noise variance ``s2`` added to
            ``Sigma(x_j, x_j)``; None when ``covariance`` already includes it on
            its diagonal (a posterior with ``observation_noise=True``).

    Returns:
        A ``batch_shape x S x q`` tensor of conditional means.
    """
    S, q = base_samples.shape
    if mean.shape[-1] != q + S:
        raise ValueError(
            f"`X` must hold q + S = {q + S} points for the one-shot KG, got "
            f"{mean.shape[-1]}."
        )
    cross = covariance[..., q:, :q].to_dense()  # Sigma(x'_i, x_j): b x S x q
    var_x = covariance[..., :q, :q].to_dense().diagonal(dim1=-2, dim2=-1)
    if noise is not None:
        var_x = var_x + noise
    scale = var_x.clamp_min(1e-12).sqrt()  # b x q
    return mean[..., q:].unsqueeze(-1) + cross / scale.unsqueeze(-2) * base_samples


def log_soft_kg(
    fantasy_means: Tensor, best_f: Tensor | float, tau: Tensor | float = 1.0
) -> Tensor:
    r"""``1/S sum_i max_j log softplus((m_ij - c+) / tau)`` of conditional means.

    ``log`` is increasing, so the log of the max over the batch is the max of the
    logs; BoTorch's ``log_softplus`` keeps it finite far below ``c+``.

    Args:
        fantasy_means: ``batch_shape x S x q`` conditional means ``m_ij``
            (``one_shot_fantasy_means``).
        best_f: The constant ``c+``, broadcastable with ``batch_shape x 1 x 1``.
        tau: Positive softplus temperature, in the units of ``m_ij``.

    Returns:
        A ``batch_shape`` tensor.
    """
    log_u = log_softplus((fantasy_means - best_f) / tau)
    return log_u.amax(dim=-1).mean(dim=-1)


class qLogSoftKG(OneShotAcquisitionFunction):
    r"""One-shot soft knowledge gradient in log space, for any Gaussian model.

    The soft KG of [Maus2024eulbo]_ (Sec. 3.3-3.4) in the one-shot form of
    [Balandat2020botorch]_: the inner maximization of the KG over ``x'`` is
    replaced by one free point ``x'_i`` per fantasy sample, optimized jointly
    with the ``q`` candidates ``x_j``,

        alpha(x_1..x_q, x'_1..x'_S) = 1/S sum_i max_j
            log softplus((E[f(x'_i) | D, (x_j, y_ij)] - c+) / tau),

    with fantasies ``y_ij = mu(x_j) + sqrt(Sigma(x_j, x_j) + s2) eps_ij`` from
    the model's predictive distribution (fixed ``eps``) and the conditional mean
    a rank-one Gaussian update (``one_shot_fantasy_means``). ``c+`` is the
    paper's ``y+`` (the best observed value), the softplus temperature ``tau``
    is 1 on the paper's standardized scale. This is the utility term of the
    KG-EULBO; ``botorch_ext.eulbo.optimize_eulbo(model, bounds, utility="kg")``
    maximizes it jointly with the SVGP fit, and this class is the same quantity
    for a fixed model.

    Like BoTorch's ``qKnowledgeGradient`` the inputs are
    ``batch_shape x (q + S) x d`` (``get_augmented_q_batch_size``), and
    ``optimize_acqf`` returns only the ``q`` candidates unless
    ``return_full_tree=True``. Each candidate is conditioned on separately (the
    paper's batch KG-EULBO), so the ``eps_ij`` are independent over ``j``. The
    model must give a joint Gaussian posterior with homoskedastic observation
    noise (``observation_noise=True`` adds it on the diagonal only), e.g. a
    ``SingleTaskGP`` or an SVGP.

    Example:
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> acqf = qLogSoftKG(model, best_f=train_Y.max(), num_fantasies=16)
        >>> candidate, value = optimize_acqf(
        ...     acqf,
        ...     bounds=bounds,
        ...     q=acqf.get_augmented_q_batch_size(1),
        ...     num_restarts=10,
        ...     raw_samples=256,
        ... )
    """

    best_f: Tensor
    tau: Tensor

    def __init__(
        self,
        model: Model,
        best_f: float | Tensor,
        num_fantasies: int = DEFAULT_NUM_FANTASIES,
        base_samples: Tensor | None = None,
        tau: float | Tensor = 1.0,
        posterior_transform: PosteriorTransform | None = None,
        seed: int = 0,
    ) -> None:
        r"""One-shot soft knowledge gradient.

        Args:
            model: A fitted single-output model with a Gaussian posterior.
            best_f: The constant ``c+`` that the conditional means must beat
                (the paper uses the best observed value), in the model's
                outcome units.
            num_fantasies: ``S``, the number of fantasy samples and free points.
                Ignored when ``base_samples`` are given.
            base_samples: Optional ``S x q`` standard normal draws ``eps_ij``,
                fixed for the whole optimization. If None, ``S x q`` scrambled
                Sobol normal draws (BoTorch's ``draw_sobol_normal_samples``,
                seeded by ``seed``) are made for each ``q`` seen.
            tau: Positive softplus temperature, in the model's outcome units;
                the paper's choice is 1 on standardized outcomes, i.e. the
                standard deviation of the training outcomes here (the
                registered input constructor's default).
            posterior_transform: A ``PosteriorTransform`` (e.g. a scalarization
                of a multi-output model).
            seed: Seed of the default base samples.

        Raises:
            ValueError: For a non-finite ``best_f`` or ``base_samples``, a
                non-positive ``tau`` or ``num_fantasies``, or ``base_samples``
                that are not ``S x q``.
            UnsupportedError: For a multi-output model without a scalarizing
                ``posterior_transform``, or a fully Bayesian model.
        """
        if is_fully_bayesian(model):
            raise UnsupportedError(
                "qLogSoftKG does not support fully Bayesian models "
                f"({type(model).__name__})."
            )
        if getattr(model, "num_outputs", 1) != 1 and posterior_transform is None:
            raise UnsupportedError(
                "qLogSoftKG needs a single-output posterior; pass a "
                "`posterior_transform` for a multi-output model."
            )
        super().__init__(model=model)
        check_finite("best_f", best_f)
        check_positive("tau", tau)
        if base_samples is not None:
            if base_samples.dim() != 2:
                raise ValueError(
                    "`base_samples` must be S x q, got shape "
                    f"{tuple(base_samples.shape)}."
                )
            check_finite("base_samples", base_samples)
            num_fantasies = base_samples.shape[0]
        check_positive_int("num_fantasies", num_fantasies)
        self.num_fantasies = num_fantasies
        self.base_samples = base_samples
        self.posterior_transform = posterior_transform
        self.seed = seed
        # Double buffers: a Python float keeps its precision, and a 0-dim tensor
        # does not change the dtype of the tensors it is combined with.
        self.register_buffer("best_f", torch.as_tensor(best_f, dtype=torch.double))
        self.register_buffer("tau", torch.as_tensor(tau, dtype=torch.double))
        self._sobol_cache: dict[int, Tensor] = {}

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        r"""Refuse pending points, which the one-shot soft KG does not condition on.

        Args:
            X_pending: Must be None.

        Raises:
            UnsupportedError: If ``X_pending`` is given (it would be ignored).
        """
        if X_pending is not None:
            raise UnsupportedError(
                "qLogSoftKG does not condition on pending points; optimize the "
                "pending and new candidates together as one batch (a larger q)."
            )
        super().set_X_pending(None)

    def get_augmented_q_batch_size(self, q: int) -> int:
        r"""``q + S``: the candidates and one free point per fantasy.

        Args:
            q: The number of candidates.

        Returns:
            The number of points ``forward`` expects.
        """
        return q + self.num_fantasies

    def extract_candidates(self, X_full: Tensor) -> Tensor:
        r"""The ``q`` candidates of a ``batch_shape x (q + S) x d`` input.

        Args:
            X_full: Candidates followed by the ``S`` free points.

        Returns:
            A ``batch_shape x q x d`` tensor.
        """
        return X_full[..., : -self.num_fantasies, :]

    def get_base_samples(self, q: int, like: Tensor) -> Tensor:
        r"""The ``S x q`` draws ``eps_ij`` used for ``q`` candidates.

        Args:
            q: The number of candidates.
            like: A tensor whose dtype and device the draws take.

        Returns:
            The given ``base_samples``, or Sobol normal draws cached per ``q``.
        """
        if self.base_samples is not None:
            if self.base_samples.shape[-1] != q:
                raise ValueError(
                    f"`base_samples` are for q = {self.base_samples.shape[-1]} "
                    f"candidates, got q = {q}."
                )
            return self.base_samples.to(like)
        if q not in self._sobol_cache:
            self._sobol_cache[q] = draw_sobol_normal_samples(
                d=q, n=self.num_fantasies, dtype=torch.double, seed=self.seed
            )
        return self._sobol_cache[q].to(like)

    def fantasy_means(self, X: Tensor) -> Tensor:
        r"""``E[f(x'_i) | D, (x_j, y_ij)]`` under ``model.posterior``.

        Subclasses may compute the conditional means differently (the EULBO's
        warm start uses its SVGP's latent, standardized scale).

        Args:
            X: ``batch_shape x (q + S) x d``: candidates, then free points.

        Returns:
            A ``batch_shape x S x q`` tensor.
        """
        q = X.shape[-2] - self.num_fantasies
        if q < 1:
            raise ValueError(
                f"`X` must hold q + S points with q >= 1 and S = "
                f"{self.num_fantasies}, got {X.shape[-2]}; see "
                "`get_augmented_q_batch_size`."
            )
        posterior = cast(
            GPyTorchPosterior,
            self.model.posterior(
                X, observation_noise=True, posterior_transform=self.posterior_transform
            ),
        )
        if posterior.mean.shape[-1] != 1:
            raise UnsupportedError(
                "qLogSoftKG needs a single-output posterior; pass a "
                "`posterior_transform` for a multi-output model."
            )
        mvn = posterior.distribution
        return one_shot_fantasy_means(
            mvn.mean, mvn.lazy_covariance_matrix, self.get_base_samples(q, X)
        )

    @t_batch_mode_transform()  # type: ignore[arg-type]  # typed for the base class
    def forward(self, X: Tensor) -> Tensor:
        r"""Evaluate the one-shot soft KG.

        Args:
            X: ``batch_shape x (q + S) x d``: ``q`` candidates, then the ``S``
                free points ``x'_i``.

        Returns:
            A ``batch_shape`` tensor of values.
        """
        check_no_nan_inputs(X)
        return log_soft_kg(self.fantasy_means(X), self.best_f, self.tau)


def __getattr__(name: str) -> object:
    # Deprecated alias (0.2.0): the EULBO's own soft-KG term moved to its home
    # (it takes ``best_f`` now).
    from botorch_ext.deprecation import moved_name

    return moved_name(
        __name__, name, {"qLogSoftKGModelScale": "botorch_ext.eulbo.utilities"}
    )
