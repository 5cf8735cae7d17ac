r"""Approximation-aware SVGP: the model of the EULBO and its state across BO steps.

``EULBOModel`` is BoTorch's ``SingleTaskVariationalGP`` with floors that Adam
respects, outcomes standardized once on the whole data set, a closed-form start
for ``q(u)`` and a way to carry its state ``w`` (inducing points, ``q(u)``,
hyperparameters) from one BO step to the next (``carry_over``), as Algorithm 1
of [Maus2024eulbo]_ does. It holds data, state and posterior, and no settings
of its fit: as BoTorch's ``fit_gpytorch_mll`` takes an MLL, the rest of the
EULBO takes the model as an argument and reaches it through its public
BoTorch/GPyTorch surface (``model.model``, ``likelihood``,
``variational_strategy``, ``parameter_blocks``, ``whitened_regression``):

* ``botorch_ext.eulbo.objective.EULBO``: the objective (ELBO scale, utility
  weight, incumbent);
* ``botorch_ext.eulbo.fit.fit_elbo``: the ELBO fit;
* ``botorch_ext.eulbo.optimize.optimize_eulbo``: one BO step, the joint
  phase (``botorch_ext.eulbo.joint``) included;
* ``botorch_ext.eulbo.options.EULBOOptions``: their optimizer settings;
* ``botorch_ext.eulbo.state``: how a model starts, carried state included.

The model imports none of them.

This module is over 500 lines because it holds one class whose docstrings carry
the model's math, its choices with their reasons and its examples; its code is
about 250 lines.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
    .. [Titsias2009]
        M. Titsias. Variational Learning of Inducing Variables in Sparse Gaussian
        Processes. AISTATS 2009.
    .. [Moss2023ipa]
        H. B. Moss, S. W. Ober and V. Picheny. Inducing Point Allocation for Sparse
        Gaussian Processes in High-Throughput Bayesian Optimisation. AISTATS 2023.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any, cast

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.approximate_gp import SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.models.utils.inducing_point_allocators import InducingPointAllocator
from botorch.posteriors import GPyTorchPosterior, Posterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import GaussianLikelihood
from linear_operator.operators import DenseLinearOperator
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor
from torch.nn import Parameter
from torch.nn.modules.module import _IncompatibleKeys

from botorch_ext.eulbo.predictive import dense_predictive, supports_dense_predictive
from botorch_ext.eulbo.state import (
    check_training_data,
    floored_likelihood,
    initial_inducing_points,
    initial_kernel,
    load_previous_hyperparameters,
    rescale_carried_state,
    transform_training_data,
)
from botorch_ext.kernels.utils import kernel_lengthscale
from botorch_ext.validation import check_no_nan_inputs, check_positive_int

#: Blocks of ``w`` (``EULBOModel.parameter_blocks``; the joint EULBO phase can
#: refine any of them, ``JointOptions.parameters``, Figure 3 of [Maus2024eulbo]_).
JOINT_PARAMETER_BLOCKS = ("variational", "inducing_points", "hyperparameters")

#: Settings that ``EULBOModel`` took before 0.2.0, and where they live now.
MOVED_SETTINGS = {
    "elbo_scale": "EULBO(elbo_scale=...) (botorch_ext.eulbo.EULBO)",
    "utility_weight": "EULBO(utility_weight=...) (botorch_ext.eulbo.EULBO)",
    "incumbent": "EULBO(incumbent=...) (botorch_ext.eulbo.EULBO)",
    "alternation": "EULBOOptions(joint=JointOptions(alternation=...))",
    "options": "the `options` argument of fit_elbo and optimize_eulbo",
}


class EULBOModel(SingleTaskVariationalGP):
    r"""A sparse variational GP that can pick its next query jointly with its fit.

    [Maus2024eulbo]_ replace the two-step "fit the SVGP by its ELBO, then maximize
    an acquisition function under it" by one problem,

        max_{x, w}  L_ELBO(w) + E_{q_w(f)} log u(x, f),

    the expected-utility lower bound (EULBO) of ``log E_{p(f | D)} u(x, f)``, where
    ``w`` = (variational parameters, inducing points, hyperparameters). With the
    soft improvement ``u = softplus(f(x) - y*)`` (``utility="ei"``) the
    expectation is a 20-point Gauss-Hermite quadrature for ``q = 1`` and a
    fixed-base-sample Monte Carlo average of ``max_j u_j`` for ``q > 1``. With the
    one-shot soft knowledge gradient (``utility="kg"``, Sec. 3.3) the utility is
    ``softplus(E[f(x'_i) | D, (x, y_i)] - y+)`` with one free point ``x'_i`` per
    fantasy sample, optimized jointly with ``x``; the conditional mean is a
    differentiable rank-one update of the SVGP's predictive distribution
    (``botorch_ext.eulbo.utilities.fantasy_means``).

    The model is BoTorch's ``SingleTaskVariationalGP`` (Cholesky variational
    distribution, learned inducing points, BoTorch's likelihood with its noise
    floor enforced by a transform, which Adam respects). Outcomes are
    standardized once, on the whole data set, before minibatch training (or
    transformed by a given ``outcome_transform``), and ``posterior`` reports the
    original scale; the utility works on the transformed scale (``y*`` is the
    best transformed training outcome unless the objective names an incumbent,
    the softplus temperature 1 unit).

    **State across BO steps.** Algorithm 1 of [Maus2024eulbo]_ starts each BO
    step from the previous step's ``w``. ``model.carry_over(X, Y)`` (or
    ``previous_model=model``) builds the next step's model that way: inducing
    points, ``q(u)`` and hyperparameters are copied and mapped onto the new
    standardized scale, and the new data enter through the ELBO. A model
    without carried ``q(u)`` starts it at its closed-form optimum
    (``set_optimal_variational_distribution``), with inducing points from
    BoTorch's ``GreedyImprovementReduction`` [Moss2023ipa]_ given a previous
    model and ``GreedyVarianceReduction`` otherwise, computed one kernel row at
    a time (``botorch_ext.eulbo.inducing``: the same points in ``O(nm)``
    memory instead of the ``n x n`` training kernel).

    **What the model does not hold.** The settings of its fit are not model
    state: the EULBO's ELBO scale, utility weight and incumbent are held by the
    objective, ``botorch_ext.eulbo.EULBO`` (as GPyTorch's ``VariationalELBO``
    holds ``num_data`` and ``beta``), and the optimizer settings by
    ``EULBOOptions``; ``fit_elbo(model, options=..., objective=...)`` and
    ``optimize_eulbo(model, bounds, options=..., objective=...)`` take them, as
    BoTorch's ``fit_gpytorch_mll`` takes an MLL and its ``optimizer_kwargs``.
    The keywords ``elbo_scale``, ``utility_weight``, ``alternation``,
    ``options`` and ``incumbent`` of botorch_ext 0.1.0 raise a ``TypeError``
    that names their new home (``MOVED_SETTINGS``). ``carry_state`` stays: it
    says how this model starts from ``previous_model``.

    **The kernel.** The paper does not name one. The default is an isotropic
    RBF kernel with BoTorch's dimension-scaled lengthscale prior inside a
    ``ScaleKernel`` with BoTorch's Gamma(2, 0.15) outputscale prior
    (``botorch_ext.kernels.get_isotropic_rbf_kernel_with_dim_scaled_prior``):
    the ELBO of BoTorch's ARD kernel with ``m`` inducing points tends to switch
    input dimensions off, and the prior-free ``ScaleKernel(RBFKernel())`` of
    the authors' code can degenerate to a constant plus noise in high
    dimensions; the default did neither in the measurements of the docs' EULBO
    page. BoTorch's ARD kernel is
    ``covar_module=get_covar_module_with_dim_scaled_prior(ard_num_dims=d)``. A
    ``covar_module`` is used as given; ``carry_over`` copies the previous
    model's kernel with its fitted values.

    Example:
        >>> from botorch_ext.eulbo import EULBO, fit_elbo, optimize_eulbo
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> # or with the authors' kernel:
        >>> model = EULBOModel(train_X, train_Y, covar_module=ScaleKernel(RBFKernel()))
        >>> fit_elbo(model)
        >>> candidates, value = optimize_eulbo(model, bounds, q=1, utility="ei")
        >>> # the per-datum ELBO, as GPyTorch's VariationalELBO:
        >>> optimize_eulbo(model, bounds, objective=EULBO(elbo_scale="mean"))
        >>> acqf = qLogNoisyExpectedImprovement(model, X_baseline=train_X)
        >>> # next BO step: carry w over, then fit and propose again
        >>> model = model.carry_over(train_X_new, train_Y_new)
    """

    num_inducing_points: int

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        num_inducing_points: int = 100,
        previous_model: Model | None = None,
        inducing_point_allocator: InducingPointAllocator | None = None,
        carry_state: bool = True,
        outcome_transform: OutcomeTransform | None = None,
        input_transform: InputTransform | None = None,
        covar_module: Kernel | None = None,
        likelihood: GaussianLikelihood | None = None,
        **moved_settings: object,
    ) -> None:
        r"""An SVGP with EULBO-based acquisition.

        Args:
            train_X: ``n x d`` training inputs (finite).
            train_Y: ``n x 1`` training outcomes (finite, maximization).
            num_inducing_points: ``m``; at most ``n`` are used. The paper used 100.
            previous_model: The model of the previous BO step. An
                ``EULBOModel`` with the same number of inducing points hands
                over its state (``carry_state``); otherwise it drives
                ``GreedyImprovementReduction``.
            inducing_point_allocator: Overrides the default allocator (used
                when the inducing points are allocated, not carried).
            carry_state: Start from ``previous_model``'s inducing points,
                ``q(u)`` and hyperparameters (Algorithm 1). If False, only its
                hyperparameters are kept and the inducing points re-allocated.
            outcome_transform: Applied once to ``train_Y`` (trained on the whole
                data set, then frozen) and undone by ``posterior``; a
                ``Standardize(m=1)`` if omitted. Ax passes one to every model.
            input_transform: Applied to every input (training data, inducing
                point allocation, candidates). Given in train mode (a new
                transform, e.g. ``Normalize(d=d)``), it learns its coefficients
                once on ``train_X``, as BoTorch's models do; it is then used in
                eval mode, so that minibatches cannot re-learn it. Given in eval
                mode (a fitted model's), it is used as it is.
            covar_module: The SVGP's kernel, used as is (give its constraints
                transforms, as GPyTorch's defaults have: the Adam fits step
                through untransformed bounds). If omitted, the previous
                model's kernel (a copy, with its fitted values) or else
                the isotropic RBF kernel with BoTorch's dimension-scaled
                lengthscale prior in a ``ScaleKernel`` (see the class
                docstring). Given with an ``EULBOModel`` as
                ``previous_model``, it takes that model's fitted values (it
                must be the same kind of kernel).
            likelihood: The Gaussian likelihood, used as is (e.g. GPyTorch's
                prior-free ``GaussianLikelihood()``, as in the authors' code); if
                omitted, a copy of the previous ``EULBOModel``'s, else BoTorch's
                likelihood with its noise prior and floor.
            moved_settings: The settings of 0.1.0 (``MOVED_SETTINGS``); any
                raises a ``TypeError`` naming its new home.

        Raises:
            TypeError: For a setting of 0.1.0 or an unknown keyword.
            ValueError: For training data of the wrong shape or not finite, a
                ``previous_model`` that is not a BoTorch model, or a kernel or
                input dimension that does not match the previous model's.
        """
        _refuse_moved_settings(moved_settings)
        if not isinstance(carry_state, bool):
            # The sixth positional argument of 0.1.0 was `elbo_scale`.
            raise TypeError(f"`carry_state` must be a bool, got {carry_state!r}.")
        check_training_data(train_X, train_Y)
        check_positive_int("num_inducing_points", num_inducing_points)
        if previous_model is not None and not isinstance(previous_model, Model):
            raise ValueError(
                "`previous_model` must be a BoTorch model, got "
                f"{type(previous_model).__name__}."
            )
        model_X, outcome_transform, Y_std = transform_training_data(
            train_X, train_Y, input_transform, outcome_transform
        )
        previous = previous_model if isinstance(previous_model, EULBOModel) else None
        covar_module = initial_kernel(covar_module, previous, train_X)
        if likelihood is None:
            likelihood = (
                copy.deepcopy(previous.likelihood)
                if previous is not None
                else floored_likelihood(train_X)
            )
        m = min(num_inducing_points, train_X.shape[-2])
        m_previous = None if previous is None else previous.num_inducing_points
        carried = carry_state and m_previous == m
        # Fewer inducing points than asked for (n was smaller): keep them and
        # add the newest inputs, which the previous model had not seen.
        grown = carry_state and m_previous is not None and m_previous < m
        if previous is not None:
            # Its hyperparameters start the allocation and the fit in any case.
            load_previous_hyperparameters(previous, model_X, covar_module, likelihood)
        Z = initial_inducing_points(
            model_X,
            covar_module,
            m,
            previous_model,
            previous,
            carry=carried or grown,
            allocator=inducing_point_allocator,
        )
        with warnings.catch_warnings():
            # The allocator warning is about fixed inducing points; ours are
            # initialized by the allocator above and then learned, as intended.
            warnings.simplefilter("ignore", UserWarning)
            super().__init__(
                model_X,
                Y_std,
                likelihood=likelihood,
                covar_module=covar_module,
                inducing_points=Z,
                learn_inducing_points=True,
            )
        self.outcome_transform = outcome_transform
        if input_transform is not None:
            self.input_transform = input_transform
        self.train_X_full = model_X
        self.train_Y_std = Y_std
        self.num_inducing_points = m
        self.requested_inducing_points = num_inducing_points
        self.carried_state = carried
        self.last_fit: dict[str, Any] = {}
        self.last_optimization: dict[str, Any] = {}
        self.to(train_X)
        self._start_variational_state(previous, carried, grown)

    def _start_variational_state(
        self, previous: EULBOModel | None, carried: bool, grown: bool
    ) -> None:
        r"""Carry ``previous``'s SVGP state over, or start ``q(u)`` at its optimum."""
        if carried:
            assert previous is not None  # carried only from a previous EULBOModel
            self.model.load_state_dict(previous.model.state_dict())
            rescale_carried_state(self, previous)
            return
        if grown:
            assert previous is not None  # grown only from a previous EULBOModel
            mean_state = previous.model.mean_module.state_dict()
            self.model.mean_module.load_state_dict(mean_state)
            rescale_carried_state(self, previous)
        self.set_optimal_variational_distribution()

    def carry_over(self, train_X: Tensor, train_Y: Tensor) -> EULBOModel:
        r"""The model of the next BO step: new data, this model's ``w`` as start.

        Algorithm 1 of [Maus2024eulbo]_ initializes the SVGP parameters of BO step
        ``t + 1`` with those of step ``t``; this returns an unfitted
        ``EULBOModel`` on ``(train_X, train_Y)`` (normally this model's data
        plus the new observations) with this model's transforms, inducing
        points, ``q(u)`` and hyperparameters. Fit it with
        ``botorch_ext.eulbo.fit_elbo`` or ``botorch_ext.eulbo.optimize_eulbo``.

        Example:
            >>> model = model.carry_over(torch.cat([X, X_new]), torch.cat([Y, Y_new]))
            >>> candidates, _ = optimize_eulbo(model, bounds)

        Args:
            train_X: ``n' x d`` training inputs of the next step.
            train_Y: ``n' x 1`` training outcomes of the next step.

        Returns:
            The new model.
        """
        # A plain Standardize is re-fitted on the new data (and the carried state
        # mapped onto its scale); any other transform is kept as it is.
        outcome_transform = None
        if type(self.outcome_transform) is not Standardize:
            outcome_transform = copy.deepcopy(self.outcome_transform)
        input_transform = getattr(self, "input_transform", None)
        return EULBOModel(
            train_X,
            train_Y,
            # Models pickled before `requested_inducing_points` existed.
            num_inducing_points=getattr(
                self, "requested_inducing_points", self.num_inducing_points
            ),
            previous_model=self,
            outcome_transform=outcome_transform,
            input_transform=copy.deepcopy(input_transform),
        )

    def whitened_regression(
        self, rows: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        r"""The whitened linear regression behind the optimal ``q(u)``.

        Returns ``(Phi, r, s2, L_A)`` of the training data (or of its ``rows``):
        the features ``Phi = L^{-1} K_ZX``
        (``L L^T = K_ZZ`` with the strategy's jitter), the residual
        ``r = y - mu_X`` of the standardized targets, the noise variance ``s2``
        and the Cholesky factor of ``A = I + Phi Phi^T / s2``. Shared by
        ``set_optimal_variational_distribution`` and
        ``botorch_ext.eulbo.collapsed.collapsed_elbo`` so that the closed-form
        ``q(u)`` and the collapsed bound cannot drift apart; differentiable in
        ``Z`` and the hyperparameters.

        Example:
            >>> phi, residual, noise, L_A = model.whitened_regression()

        Args:
            rows: Indices of the training points to use; None for all.

        Returns:
            The tuple ``(Phi, r, s2, L_A)``.
        """
        gp = self.model
        strategy = gp.variational_strategy
        X, y = self.train_X_full, self.train_Y_std.squeeze(-1)
        if rows is not None:
            X, y = X[rows], y[rows]
        Z = strategy.inducing_points
        Kzz = gp.covar_module(Z).add_jitter(strategy.jitter_val).to_dense()
        L = psd_safe_cholesky(Kzz)
        phi = torch.linalg.solve_triangular(
            L, gp.covar_module(Z, X).to_dense(), upper=False
        )
        residual = y - gp.mean_module(X)
        noise = self.likelihood.noise.reshape(-1)[0]
        eye = torch.eye(phi.shape[-2], dtype=phi.dtype, device=phi.device)
        L_A = psd_safe_cholesky(eye + phi @ phi.mT / noise)
        return phi, residual, noise, L_A

    def set_optimal_variational_distribution(self) -> None:
        r"""Set ``q(u)`` to its ELBO optimum at the current ``Z`` and hyperparameters.

        With a Gaussian likelihood the optimal ``q(u)`` of the (uncollapsed)
        SVGP ELBO is available in closed form [Titsias2009]_. In the whitened
        parameterization ``u = mu_Z + L v`` (``L L^T = K_ZZ`` with GPyTorch's
        jitter) the ELBO's data term is a Bayesian linear regression of
        ``y - mu_X`` on the features ``Phi = L^{-1} K_ZX`` with prior
        ``v ~ N(0, I)`` and noise variance ``s2``, so

            S = (I + Phi Phi^T / s2)^{-1},    m = S Phi (y - mu_X) / s2,

        which is where the ELBO's gradient in ``(m, S)`` vanishes. Costs
        ``O(n m^2)``. Reason for this start of a new model: a ``q(u)`` at the
        prior explains the data as noise and the fit then inflates the noise.

        Example:
            >>> model.set_optimal_variational_distribution()
        """
        strategy = self.model.variational_strategy
        with torch.no_grad():
            phi, residual, noise, L_A = self.whitened_regression()
            S = torch.cholesky_inverse(L_A)
            mean = S @ (phi @ residual) / noise
            chol_S = psd_safe_cholesky(S)
            dist = strategy._variational_distribution
            dist.variational_mean.copy_(mean)
            dist.chol_variational_covar.copy_(chol_S)
            strategy.variational_params_initialized.fill_(1)
        strategy._clear_cache()

    # BoTorch's keep_transforms and assign arrive (ignored) as keywords only.
    def load_state_dict(  # type: ignore[override]
        self, state_dict: Mapping[str, Tensor], strict: bool = True, **kwargs: Any
    ) -> _IncompatibleKeys:
        r"""Load parameters and buffers (the outcome standardization included).

        BoTorch's ``Model.load_state_dict`` re-derives the transformed training
        targets, which this model keeps itself (standardized once, on the whole
        data set); a plain ``torch.nn.Module`` load is what is meant.

        A state with another number of inducing points resizes this model's
        inducing points and ``q(u)`` to it first. Reason: an SVGP's posterior
        is defined by ``Z``, ``q(u)`` and the hyperparameters alone, for any
        number of points, and this model uses at most ``n`` inducing points when
        it is built, so a model on fewer data (a cross-validation fold, as Ax's
        ``cross_validate`` builds them from the full model's state) would
        otherwise refuse the state of one on more.

        Example:
            >>> fold = EULBOModel(train_X[1:], train_Y[1:], num_inducing_points=100)
            >>> fold.load_state_dict(model.state_dict())  # model: all the data

        Args:
            state_dict: As for ``torch.nn.Module.load_state_dict``.
            strict: As for ``torch.nn.Module.load_state_dict``.
            kwargs: Ignored (BoTorch's signature).

        Returns:
            The missing and unexpected keys.
        """
        self._resize_inducing_points(state_dict)
        keys = torch.nn.Module.load_state_dict(self, state_dict, strict=strict)
        return cast(_IncompatibleKeys, keys)

    def _resize_inducing_points(self, state_dict: Mapping[str, Tensor]) -> None:
        r"""Give ``Z`` and ``q(u)`` the shapes of ``state_dict``'s (values follow)."""
        prefix = "model.variational_strategy."
        Z = state_dict.get(prefix + "inducing_points")
        if Z is None or Z.shape[-2] == self.num_inducing_points:
            return
        strategy = self.model.variational_strategy
        dist = strategy._variational_distribution
        own = strategy.inducing_points
        tensors = {
            "inducing_points": own,
            "_variational_distribution.variational_mean": dist.variational_mean,
            "_variational_distribution.chol_variational_covar": (
                dist.chol_variational_covar
            ),
        }
        for key, param in tensors.items():
            stored = state_dict.get(prefix + key)
            if stored is not None:
                param.data = own.new_zeros(stored.shape)
        dist.num_inducing_points = Z.shape[-2]
        # (GPyTorch's load clears the strategy's caches.)
        self.num_inducing_points = Z.shape[-2]

    def to_model_space(self, X: Tensor) -> Tensor:
        r"""Apply the input transform in eval mode (minibatches must not re-learn it).

        Example:
            >>> Z = model.to_model_space(torch.rand(5, 2))

        Args:
            X: ``... x d`` inputs in the original space.

        Returns:
            ``X`` in the model's space (``X`` itself without an input transform).
        """
        transform = getattr(self, "input_transform", None)
        if transform is None:
            return X
        was_training = transform.training
        transform.eval()
        try:
            return cast(Tensor, transform(X))
        finally:
            transform.train(was_training)

    # ------------------------------------------------- interface of the fits
    def parameter_blocks(self) -> dict[str, list[Parameter]]:
        r"""The trained parameters of ``w``, by block, selected by module.

        ``"variational"``: the parameters of the variational distribution
        module (``q(u)``'s mean and Cholesky factor); ``"inducing_points"``: the
        variational strategy's ``inducing_points``; ``"hyperparameters"``:
        every other trained parameter (constant mean, kernel, likelihood). Each
        list is in ``parameters()`` order.

        Example:
            >>> blocks = model.parameter_blocks()
            >>> [p.shape for p in blocks["inducing_points"]]

        Returns:
            A dict keyed by ``JOINT_PARAMETER_BLOCKS``.
        """
        strategy = self.model.variational_strategy
        variational = {id(p) for p in strategy._variational_distribution.parameters()}
        blocks: dict[str, list[Parameter]] = {
            block: [] for block in JOINT_PARAMETER_BLOCKS
        }
        for p in self.parameters():
            if not p.requires_grad:
                continue
            if id(p) in variational:
                blocks["variational"].append(p)
            elif p is strategy.inducing_points:
                blocks["inducing_points"].append(p)
            else:
                blocks["hyperparameters"].append(p)
        return blocks

    def posterior(  # type: ignore[override]
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool = False,
        posterior_transform: PosteriorTransform | None = None,
    ) -> Posterior:
        r"""The posterior at ``X``, computed in dense tensors where possible.

        The same posterior as ``SingleTaskVariationalGP.posterior`` (the
        latent GP's, or with ``observation_noise=True`` the Gaussian
        likelihood's predictive, untransformed to the outcome scale), from
        ``botorch_ext.eulbo.predictive.dense_predictive``: dense tensors, and
        the terms that do not depend on ``X`` kept until the model's state
        changes. Reason: an acquisition optimizer calls it hundreds of times
        per BO step at a fixed state. Other cases (``output_indices``, a
        non-Gaussian likelihood with ``observation_noise``, another
        variational strategy) take BoTorch's path.

        Example:
            >>> post = model.posterior(X)  # X: batch x q x d
            >>> post.mean.shape  # batch x q x 1

        Args:
            X: A ``batch x q x d`` tensor of inputs.
            output_indices: Must be None (one output), as in BoTorch.
            observation_noise: Whether to add the likelihood's noise.
            posterior_transform: An optional ``PosteriorTransform``.

        Returns:
            A ``GPyTorchPosterior`` (or the ``posterior_transform``'s result).

        Raises:
            ValueError: If ``X`` has a NaN or infinite entry.
        """
        check_no_nan_inputs(X)
        gaussian = isinstance(self.likelihood, GaussianLikelihood)
        if (
            output_indices is not None
            or not isinstance(observation_noise, bool)
            or (observation_noise and not gaussian)
            or not supports_dense_predictive(self)
        ):
            return super().posterior(
                X,
                output_indices=output_indices,
                observation_noise=observation_noise,
                posterior_transform=posterior_transform,
            )
        self.eval()
        X = self.transform_inputs(X)
        dist = dense_predictive(self, X)
        if observation_noise:
            noise = self.likelihood.noise.reshape(-1)[0]
            eye = torch.eye(X.shape[-2], dtype=X.dtype, device=X.device)
            covar = DenseLinearOperator(dist.covariance_matrix + noise * eye)
            dist = MultivariateNormal(dist.mean, covar)
        posterior: Posterior = GPyTorchPosterior(distribution=dist)
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            posterior = posterior_transform(posterior=posterior, X=X)
        return posterior

    def diagnostics(self) -> dict[str, Any]:
        r"""The fitted state a BO loop should log at every step.

        Example:
            >>> model.diagnostics()["noise"]

        Returns:
            A dict with ``noise`` (the likelihood's noise variance on the
            transformed scale), ``lengthscales`` (a list), ``elbo`` (the
            per-datum ELBO at the end of the last ``fit_elbo``), ``fit_steps``,
            and, after ``optimize_eulbo``, ``utility`` (the expected log utility
            of the returned candidates), ``warm_start_utility``, ``eulbo_steps``
            ``moved`` (the largest distance a candidate moved from its warm
            start), ``w_moved`` (the Euclidean norm of the change of the
            refined ``w``), ``utility_gradient_share`` (the utility term's
            share of the EULBO's gradient in ``w`` at the warm start),
            ``warm_start_eulbo`` and ``eulbo``; ``None`` where not available.
        """
        opt = self.last_optimization
        lengthscale = kernel_lengthscale(self.model.covar_module)
        if lengthscale is not None:
            lengthscale = lengthscale.detach().reshape(-1)
        return {
            "noise": self.likelihood.noise.detach().reshape(-1)[0].item(),
            "lengthscales": None if lengthscale is None else lengthscale.tolist(),
            "elbo": self.last_fit.get("elbo"),
            "fit_steps": self.last_fit.get("steps"),
            "utility": opt.get("utility"),
            "warm_start_utility": opt.get("warm_start_utility"),
            "eulbo_steps": opt.get("steps"),
            "moved": opt.get("moved"),
            "w_moved": opt.get("w_moved"),
            "utility_gradient_share": opt.get("utility_gradient_share"),
            "warm_start_eulbo": opt.get("warm_start_value"),
            "eulbo": opt.get("trace", [None])[-1],
        }


def _refuse_moved_settings(settings: dict[str, object]) -> None:
    r"""Raise a ``TypeError`` that names the new home of each setting of 0.1.0."""
    if not settings:
        return
    moved = [name for name in settings if name in MOVED_SETTINGS]
    unknown = sorted(set(settings) - set(moved))
    if unknown:
        raise TypeError(
            f"EULBOModel.__init__() got unexpected keyword arguments {unknown}."
        )
    homes = "; ".join(f"`{name}`: {MOVED_SETTINGS[name]}" for name in moved)
    raise TypeError(
        "EULBOModel holds no fit settings since botorch_ext 0.2.0 (see "
        f"docs/migration.md); pass them where they live now: {homes}."
    )
