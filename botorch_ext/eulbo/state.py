r"""How an ``EULBOModel`` starts, carried state from the previous BO step included.

The pieces: checked data, the kernel and likelihood, the inducing points, and
the state carried over from the previous model.

Algorithm 1 of [Maus2024eulbo]_ starts each BO step from the previous step's
``w`` (inducing points, ``q(u)``, hyperparameters). The helpers here build that
start for ``EULBOModel.__init__``; they never import the model (the model passes
its previous instance, already checked to be an ``EULBOModel``).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
    .. [Moss2023ipa]
        H. B. Moss, S. W. Ober and V. Picheny. Inducing Point Allocation for Sparse
        Gaussian Processes in High-Throughput Bayesian Optimisation. AISTATS 2023.
"""

from __future__ import annotations

import copy
from typing import Protocol, cast

import gpytorch
import torch
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.models.utils.gpytorch_modules import (
    get_gaussian_likelihood_with_lognormal_prior,
)
from botorch.models.utils.inducing_point_allocators import InducingPointAllocator
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.models import ApproximateGP
from torch import Tensor

from botorch_ext.eulbo.inducing import (
    LowMemoryGreedyImprovementReduction,
    LowMemoryGreedyVarianceReduction,
)
from botorch_ext.kernels.dim_scaled import (
    get_isotropic_rbf_kernel_with_dim_scaled_prior,
)


class CarriedModel(Protocol):
    r"""What the start of a model reads of the previous one (an ``EULBOModel``).

    Its public BoTorch/GPyTorch surface and its data, read only: a protocol
    rather than the class, so that these helpers stay below the model.
    """

    @property
    def model(self) -> ApproximateGP:
        r"""The latent approximate GP."""
        ...

    @property
    def likelihood(self) -> GaussianLikelihood:
        r"""Its Gaussian likelihood."""
        ...

    @property
    def train_X_full(self) -> Tensor:
        r"""The training inputs in model space."""
        ...

    @property
    def train_Y_std(self) -> Tensor:
        r"""The transformed training outcomes."""
        ...

    @property
    def num_inducing_points(self) -> int:
        r"""The number of inducing points."""
        ...

    @property
    def outcome_transform(self) -> OutcomeTransform:
        r"""The outcome transform."""
        ...


def check_training_data(train_X: Tensor, train_Y: Tensor) -> None:
    r"""Raise ``ValueError`` unless ``train_X`` is ``n x d`` and ``train_Y`` ``n x 1``.

    Both must be finite floating-point tensors of one dtype.

    Example:
        >>> check_training_data(torch.rand(5, 2), torch.rand(5, 1))

    Args:
        train_X: Training inputs.
        train_Y: Training outcomes.
    """
    for name, t in (("train_X", train_X), ("train_Y", train_Y)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            kind = t.dtype if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(
                f"`{name}` must be a floating-point tensor (e.g. "
                f"torch.as_tensor(..., dtype=torch.double)), got {kind}."
            )
    if train_X.dtype != train_Y.dtype:
        raise ValueError(
            f"`train_X` and `train_Y` must have one dtype, got {train_X.dtype} "
            f"and {train_Y.dtype}."
        )
    if train_X.dim() != 2 or train_Y.dim() != 2 or train_Y.shape[-1] != 1:
        raise ValueError(
            "`train_X` must be n x d and `train_Y` n x 1, got shapes "
            f"{tuple(train_X.shape)} and {tuple(train_Y.shape)}."
        )
    if train_X.shape[0] != train_Y.shape[0]:
        raise ValueError(
            f"`train_X` has {train_X.shape[0]} rows but `train_Y` has "
            f"{train_Y.shape[0]}."
        )
    for name, t in (("train_X", train_X), ("train_Y", train_Y)):
        if not bool(torch.isfinite(t).all()):
            bad = (~torch.isfinite(t)).nonzero()[0].tolist()
            raise ValueError(
                f"`{name}` must be finite; found {t[tuple(bad)]} at {bad}."
            )


def enforce_floor(module: gpytorch.Module, name: str) -> gpytorch.Module:
    r"""Enforce the ``GreaterThan`` floor of ``raw_{name}`` by a softplus transform.

    BoTorch's default likelihood and covariance leave their floors untransformed
    (``transform=None``): ``fit_gpytorch_mll`` keeps them with L-BFGS-B bounds,
    but minibatch Adam steps straight through them. This swaps in the same floor
    under GPyTorch's softplus transform and keeps the value.

    Example:
        >>> enforce_floor(likelihood.noise_covar, "noise")

    Args:
        module: The module holding ``raw_{name}``.
        name: The constrained parameter's name, e.g. ``"noise"``.

    Returns:
        ``module``, changed in place.
    """
    value = getattr(module, name).detach().clone()
    lower = getattr(module, f"raw_{name}_constraint").lower_bound
    module.register_constraint(f"raw_{name}", GreaterThan(lower), replace=True)
    module.initialize(**{name: value})
    return module


def fill_inducing_points(Z: Tensor, train_X: Tensor, m: int) -> Tensor:
    r"""Pad an allocator's points to ``m`` with Sobol points in the data's bounding box.

    Example:
        >>> Z = fill_inducing_points(Z, train_X, 100)

    Args:
        Z: ``k x d`` allocated points.
        train_X: ``n x d`` inputs (model space).
        m: The number of inducing points wanted.

    Returns:
        ``m x d`` inducing points (the first ``m`` of ``Z`` if it has more).
    """
    if Z.shape[-2] >= m:
        return Z[..., :m, :]
    box = torch.stack([train_X.min(dim=0).values, train_X.max(dim=0).values])
    box[1] = torch.maximum(box[1], box[0] + 1e-6)
    extra = draw_sobol_samples(bounds=box, n=m - Z.shape[-2], q=1, seed=0)
    return torch.cat([Z, extra.squeeze(-2).to(Z)], dim=-2)


def transform_training_data(
    train_X: Tensor,
    train_Y: Tensor,
    input_transform: InputTransform | None,
    outcome_transform: OutcomeTransform | None,
) -> tuple[Tensor, OutcomeTransform, Tensor]:
    r"""Train the transforms once on the whole data set, then apply them frozen.

    Outcomes are standardized once, on the whole data set, before minibatch
    training: a minibatch must not re-learn the transform. An input transform
    given in train mode (a new one, e.g. ``Normalize(d)`` without bounds) learns
    its coefficients once on ``train_X`` the same way; one given in eval mode
    (e.g. a fitted model's, carried to the next step) is used as it is.

    Example:
        >>> model_X, transform, Y_std = transform_training_data(X, Y, None, None)

    Args:
        train_X: ``n x d`` inputs.
        train_Y: ``n x 1`` outcomes.
        input_transform: Trained on ``train_X`` if in train mode, then applied
            in eval mode; or None.
        outcome_transform: Trained on ``train_Y`` then frozen; a
            ``Standardize(m=1)`` if None.

    Returns:
        ``(model_X, outcome_transform, Y_std)``.
    """
    if input_transform is not None:
        with torch.no_grad():
            if input_transform.training:
                input_transform(train_X)  # learns where it learns, in train mode
            input_transform.eval()
            model_X = input_transform(train_X)
    else:
        model_X = train_X
    if outcome_transform is None:
        outcome_transform = Standardize(m=1)
    outcome_transform.train()
    Y_std, _ = outcome_transform(train_Y)
    outcome_transform.eval()
    return model_X, outcome_transform, Y_std


def initial_kernel(
    covar_module: Kernel | None, previous: CarriedModel | None, train_X: Tensor
) -> Kernel:
    r"""The kernel a model starts with.

    The given ``covar_module``; else a copy of the previous ``EULBOModel``'s
    kernel; else the isotropic RBF kernel with BoTorch's dimension-scaled
    lengthscale prior in a ``ScaleKernel``.

    Example:
        >>> kernel = initial_kernel(None, None, train_X)

    Args:
        covar_module: A GPyTorch kernel, or None.
        previous: The previous ``EULBOModel``, or None.
        train_X: ``n x d`` inputs (for ``d``, dtype and device).

    Returns:
        The kernel, on ``train_X``'s dtype and device.
    """
    if covar_module is None and previous is not None:
        covar_module = copy.deepcopy(previous.model.covar_module)
    if covar_module is None:
        covar_module = get_isotropic_rbf_kernel_with_dim_scaled_prior(train_X.shape[-1])
    elif not isinstance(covar_module, Kernel):
        raise ValueError(
            "`covar_module` must be a GPyTorch kernel, got "
            f"{type(covar_module).__name__}."
        )
    return covar_module.to(train_X)


def floored_likelihood(train_X: Tensor) -> GaussianLikelihood:
    r"""BoTorch's Gaussian likelihood with its noise floor enforced by a transform.

    Example:
        >>> likelihood = floored_likelihood(train_X)

    Args:
        train_X: Inputs giving the dtype and device.

    Returns:
        The likelihood.
    """
    likelihood = get_gaussian_likelihood_with_lognormal_prior()
    enforce_floor(likelihood.noise_covar, "noise")
    return likelihood.to(train_X)


def load_previous_hyperparameters(
    previous: CarriedModel,
    model_X: Tensor,
    covar_module: Kernel,
    likelihood: GaussianLikelihood,
) -> None:
    r"""Start the kernel and likelihood from the previous ``EULBOModel``'s values.

    Example:
        >>> load_previous_hyperparameters(previous, model_X, kernel, likelihood)

    Args:
        previous: The previous ``EULBOModel``.
        model_X: ``n x d`` inputs in model space (checked against its ``d``).
        covar_module: The new kernel (of the same kind), changed in place.
        likelihood: The new likelihood, changed in place.
    """
    if previous.train_X_full.shape[-1] != model_X.shape[-1]:
        raise ValueError(
            "`previous_model` was fitted on "
            f"{previous.train_X_full.shape[-1]}-dimensional inputs, "
            f"`train_X` has {model_X.shape[-1]}."
        )
    try:
        covar_module.load_state_dict(previous.model.covar_module.state_dict())
    except RuntimeError as e:
        raise ValueError(
            "`covar_module` does not match the kernel of `previous_model` "
            f"({type(previous.model.covar_module).__name__}), whose "
            "fitted values start this model; pass the same kind of kernel "
            f"or none. ({e})"
        ) from e
    likelihood.load_state_dict(previous.likelihood.state_dict())


def initial_inducing_points(
    model_X: Tensor,
    covar_module: Kernel,
    m: int,
    previous_model: Model | None,
    previous: CarriedModel | None,
    carry: bool,
    allocator: InducingPointAllocator | None = None,
) -> Tensor:
    r"""The inducing points a model starts with.

    Carried (``carry`` and the previous ``EULBOModel`` had ``m`` points): its
    points. Grown (``carry`` and it had fewer, since ``n`` was smaller): its
    points plus the newest inputs, which it had not seen. Otherwise allocated by
    ``allocator``, by default BoTorch's ``GreedyImprovementReduction``
    [Moss2023ipa]_ given a previous model and ``GreedyVarianceReduction``
    without one, in their row-wise forms
    (``botorch_ext.eulbo.inducing``: the same points without the ``n x n``
    kernel matrix), padded by ``fill_inducing_points``.

    Example:
        >>> Z = initial_inducing_points(model_X, kernel, 100, None, None, True)

    Args:
        model_X: ``n x d`` inputs in model space.
        covar_module: The kernel the allocator uses.
        m: The number of inducing points.
        previous_model: The previous BO step's model (any BoTorch model), or None.
        previous: The same if it is an ``EULBOModel``, else None.
        carry: Whether to carry the previous ``EULBOModel``'s points.
        allocator: Overrides the default allocator.

    Returns:
        ``m x d`` inducing points.
    """
    m_previous = None if previous is None else previous.num_inducing_points
    if carry and m_previous is not None and m_previous <= m:
        assert previous is not None  # m_previous is its number of points
        Z = previous.model.variational_strategy.inducing_points.detach()
        Z = Z.clone().to(model_X)
        if m_previous < m:
            Z = torch.cat([Z, model_X[-(m - m_previous) :].detach().clone()])
        return cast(Tensor, Z)
    if allocator is None:
        allocator = (
            LowMemoryGreedyVarianceReduction()
            if previous_model is None
            else LowMemoryGreedyImprovementReduction(previous_model, maximize=True)
        )
    Z = allocator.allocate_inducing_points(
        inputs=model_X,
        covar_module=covar_module,
        num_inducing=m,
        input_batch_shape=torch.Size([]),
    )
    return fill_inducing_points(Z, model_X, m)


def rescale_carried_state(model: CarriedModel, previous: CarriedModel) -> None:
    r"""Map a carried ``q(u)``, constant mean and noise onto the new outcome scale.

    With standardizations ``(mu, s)`` before and ``(mu', s')`` after the new
    data arrived, a latent value ``f`` of the old scale is ``a f + b`` on the
    new one, ``a = s / s'`` and ``b = (mu - mu') / s'``: the constant mean
    becomes ``a c + b`` and the noise variance ``a^2`` times itself. With a
    ``ScaleKernel`` on the outside the map is exact: its outputscale scales by
    ``a^2``, so ``K_ZZ``'s Cholesky factor scales by ``a`` and the whitened
    ``q(u)`` stays as it is. Without one the whitened variational mean and
    Cholesky factor scale by ``a`` instead and the prior part of the predictive
    variance keeps its scale (``a`` is close to one from one BO step to the
    next). Nothing changes unless both outcome transforms are ``Standardize``.

    Example:
        >>> rescale_carried_state(model, previous)

    Args:
        model: The new ``EULBOModel``, changed in place.
        previous: The previous ``EULBOModel``.
    """
    old, new = previous.outcome_transform, model.outcome_transform
    if not (isinstance(old, Standardize) and isinstance(new, Standardize)):
        return
    a = (old.stdvs / new.stdvs).squeeze().to(model.train_Y_std)
    b = ((old.means - new.means) / new.stdvs).squeeze().to(model.train_Y_std)
    strategy = model.model.variational_strategy
    dist = strategy._variational_distribution
    covar = model.model.covar_module
    with torch.no_grad():
        if isinstance(covar, ScaleKernel):
            covar.outputscale = covar.outputscale * a**2
        else:
            dist.variational_mean.mul_(a)
            dist.chol_variational_covar.mul_(a)
        mean_module = model.model.mean_module
        mean_module.constant.copy_(a * mean_module.constant + b)
        floor = model.likelihood.noise_covar.raw_noise_constraint.lower_bound
        noise = (model.likelihood.noise * a**2).clamp_min(1.01 * floor)
        model.likelihood.noise = noise
    strategy._clear_cache()
