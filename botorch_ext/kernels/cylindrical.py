# Longer than 500 lines for one class: the parameterization (warp boxes and
# starts, angular weights and their floor) and the two center rules all act on
# the same hyperparameters, and about 40% of the file is docstrings (the class's
# compares it with GPyTorch's kernel of the same paper). Pure helpers live in
# kernels/spherical.py, kernels/radial.py and kernels/cylindrical_gram.py.
r"""BOCK's cylindrical kernel: a radius kernel times an angular kernel about a center.

Data path: ``x -> (rho, a)`` polar split about ``center`` -> Kumaraswamy-warped
radius ``w(rho)`` -> ``K_r(w(rho1), w(rho2)) * K_a(a1, a2)``.

References:

.. [Oh2018bock]
    C. Oh, E. Gavves and M. Welling. BOCK: Bayesian Optimization with Cylindrical
    Kernels. ICML 2018 (PMLR 80).
.. [Jayasumana2014]
    S. Jayasumana, R. Hartley, M. Salzmann, H. Li and M. Harandi. Optimizing over
    radial kernels on compact manifolds. CVPR 2014.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, cast

import torch
from botorch.models.transforms.utils import kumaraswamy_warp
from gpytorch import settings
from gpytorch.constraints import Interval
from gpytorch.kernels import Kernel, MaternKernel
from gpytorch.priors import LogNormalPrior, Prior
from torch import Tensor

from botorch_ext.constraints import ReflectedInterval
from botorch_ext.kernels.cylindrical_gram import CylindricalGram
from botorch_ext.kernels.radial import Matern52Radial
from botorch_ext.kernels.spherical import horner, polar_split, sphere_moments
from botorch_ext.validation import check_positive

# Authors' box for the radius warp (concave and non-decreasing on [0, 1]).
ALPHA_BOUNDS = (0.5, 1.0)
BETA_BOUNDS = (1.0, 2.0)
# Box for the radial Matern lengthscale in warped-radius units; the upper end is
# twice the (unit) search radius, as in the authors' code.
RADIAL_LENGTHSCALE_BOUNDS = (0.01, 2.0)
# For a user's box enforced by a transform that never reaches the box's ends (e.g.
# GPyTorch's sigmoid): how far inside the identity warp (an end of the default
# boxes) the exponent starts, as a fraction of the box's width ...
WARP_START_INSET = 1e-3
# ... and the largest |raw| value a warp exponent is set to: an end of such a box
# is an infinite logit; +-40 gives the end itself after rounding (float32 and
# float64) and keeps the raw parameter finite.
_MAX_RAW_WARP = 40.0
# Relative slack on the out-of-ball check, in units of the dtype's epsilon: corners
# of the cube sit exactly on the default ball and round to either side of it.
_BALL_SLACK_EPS = 100.0
# BoTorch's kumaraswamy_warp squeezes its input into [eps, 1 - eps] with this eps.
_KUMARASWAMY_EPS = 1e-8
#: The two center rules of ``BOCKKernel``.
CENTER_RULES = ("continuous", "direction")
#: The two maps from ``raw_angular_weights`` to the normalised angular weights.
ANGULAR_WEIGHTS_PARAMETERIZATIONS = ("softmax", "square")
# Added to each square of the "square" parameterization: keeps the weights
# defined (uniform) when every raw value is 0, and changes nothing above 1e-14.
_SQUARE_FLOOR = 1e-30


class _Default:
    r"""Marker for "use the documented default prior" (``None`` means no prior)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


def default_alpha_prior() -> LogNormalPrior:
    r"""Prior on the warp's ``alpha``: ``log alpha ~ N(0, 0.5^2)`` (authors' choice)."""
    return LogNormalPrior(loc=0.0, scale=0.5)


def default_beta_prior() -> LogNormalPrior:
    r"""Prior on the warp's ``beta``: ``log beta ~ N(0.5, 0.5^2)`` (authors' choice)."""
    return LogNormalPrior(loc=0.5, scale=0.5)


def _warp_start(constraint: Interval) -> Tensor:
    r"""The starting value of a warp exponent under ``constraint``.

    The constraint's ``initial_value`` if it has one (GPyTorch stores it raw);
    else the identity warp (1) if the box holds it, moved ``WARP_START_INSET`` of
    the box's width (of 1 for a half-open box, e.g. ``Positive()``) inside when
    the box's transform cannot reach its ends (e.g. a sigmoid or a softplus);
    else the middle of the box.
    """
    if constraint.initial_value is not None:
        start: Tensor = constraint.transform(torch.as_tensor(constraint.initial_value))
        return start
    lower: Tensor = constraint.lower_bound
    upper: Tensor = constraint.upper_bound
    one = torch.tensor(1.0)
    if not bool(constraint.check(one)):
        return (lower + upper) / 2
    if constraint.enforced and not isinstance(constraint, ReflectedInterval):
        width = upper - lower
        inset = WARP_START_INSET * torch.where(torch.isfinite(width), width, one)
        return torch.minimum(torch.maximum(one, lower + inset), upper - inset)
    return one


class BOCKKernel(Kernel):  # type: ignore[misc]  # GPyTorch ships no type information
    r"""BOCK's cylindrical kernel: a radius kernel times an angular kernel.

    Named after the method rather than the kernel's shape: GPyTorch's
    ``gpytorch.kernels.CylindricalKernel`` implements the same paper, and this
    class was called ``CylindricalKernel`` before botorch_ext 0.2.0 (that name
    remains a deprecated alias for one release). This one is BOCK as its authors
    run it; GPyTorch's differs in that

    - its ball is the unit ball about the origin (here a center ``c`` and radius
      ``R``, by default the ball about the unit cube's center that holds it);
    - its angular weights are positive but not normalized, so they carry the
      amplitude (here ``sum_p c_p = 1``, with an optional floor);
    - its warp exponents are positive and unbounded, with no prior (here the
      authors' boxes and priors, below);
    - its radius kernel is a required argument (here a default Matern-5/2);
    - at the center a zero direction gives ``K_a = c_0``, and exact zeros of each
      coordinate are jittered by ``eps`` (here the positive semi-definite
      ``"continuous"`` center rule, or ``"direction"``);
    - a point outside the ball raises ``RuntimeError`` (here ``ValueError``).

    With ``rho = ||x - c|| / R`` and ``a = (x - c) / ||x - c||`` [Oh2018bock]_:

        K(x1, x2) = K_r(w(rho1), w(rho2)) * K_a(a1, a2),
        K_a(a1, a2) = sum_{p=0}^{P} c_p (a1 . a2)^p,  c_p >= 0,  sum_p c_p = 1,
        w(rho) = 1 - (1 - rho^alpha)^beta  (Kumaraswamy CDF).

    ``K_a`` is a continuous radial kernel on the sphere [Jayasumana2014]_ whose
    weights are normalized (a softmax, or normalized squares, of
    ``raw_angular_weights``), so ``K(x, x) = K_r(w, w)``; wrap the kernel in a
    ``ScaleKernel`` for an amplitude. The number of hyperparameters does not
    grow with the dimension.

    Choices:

    - The warp's box ``alpha in [0.5, 1]``, ``beta in [1, 2]``, starting at the
      identity, with priors ``log alpha ~ N(0, 0.5^2)`` and ``log beta ~ N(0.5,
      0.5^2)``: the authors', keeping the warp concave and non-decreasing.
    - The boxes are ``ReflectedInterval`` constraints: Adam and samplers stay
      inside, and ``fit_gpytorch_mll`` passes them to L-BFGS-B as bounds, so the
      identity warp (a corner) is reachable with a non-zero gradient.
    - ``K_r`` defaults to a Matern-5/2 on the warped radius with lengthscale in
      ``[0.01, 2]`` starting at 1: the authors' bounds and start, in units of the
      search radius.
    - ``center_rule="continuous"`` (default) applies the polynomial to the warped
      offset ``u = w(rho) a``, normalized::

          K_a(x1, x2) = sum_p c_p (u1 . u2)^p / sqrt(N(x1) N(x2)),
          N(x) = sum_p c_p w(rho)^(2p).

      It is positive semi-definite, continuous at the center (where the
      direction is undefined) and the ``"direction"`` kernel on the boundary;
      near the center its linear term is a local gradient model, so BO can
      leave the center.
    - ``center_rule="direction"`` applies it to unit directions and gives the
      center the similarity ``sqrt(sum_p c_p m_p)`` to every direction (``m_p``
      the sphere moments), the largest one that keeps Gram matrices positive
      semi-definite. Kept for comparison: near the center a new direction looks
      unexplored, which can trap BO there.
    - The paper's own treatment of the center (it takes each test point's
      direction) does not give a positive semi-definite Gram matrix, so it is
      not offered.
    - ``angular_weights_floor`` keeps chosen weights above a floor, ``c_p = f_p
      + (1 - sum_q f_q) s(raw)_p`` (``s`` the map of the next item): MAP fits
      tend to put all weight on one power, and at ``c = e_0`` the model is
      blind to direction. Use it with the ``"continuous"`` rule (under
      ``"direction"`` interior weights bring back the center trap).
    - ``angular_weights_parameterization="softmax"`` (default) maps the raw
      values to the weights by a softmax, whose zero weights lie at logits of
      ``-inf``; MAP fits often put weights there and L-BFGS-B then approaches
      them one unit of logit per iteration. ``"square"`` uses ``raw_p^2 /
      sum_q raw_q^2``, where a zero weight is the finite point ``raw_p = 0``:
      the same family of kernels and the same starting weights, with fewer
      L-BFGS-B evaluations per fit (about a fifth fewer at ``ftol`` 1e-6 on
      Rosenbrock-20 data, mostly to higher fitted likelihoods; the BOCK page
      of the documentation). The default stays the softmax: existing fits and
      stored ``raw_angular_weights`` keep their meaning, and BO runs with
      square weights were no better there.
    - Inputs must lie in the closed ball of radius ``R`` about ``c``: a point
      outside raises ``ValueError`` rather than being clamped. The default ball
      holds the unit cube; with BoTorch's ``Normalize``, pass the search box as
      its ``bounds``.
    - ``fit_gpytorch_mll`` fits the kernel by MAP; the authors slice-sampled the
      hyperparameters (``SGMCMCFullyBayesianSingleTaskGP`` averages over draws).

    Args:
        angular_degree: ``P``, the largest power in ``K_a`` (``P + 1`` weights).
            The authors used 3.
        radial_base_kernel: ``K_r``, a kernel on the 1-d warped radius. Default:
            Matern-5/2 with lengthscale in ``[0.01, 2]`` starting at 1.
        center: ``c``: a scalar (the same in every coordinate) or a
            ``d``-vector. Default 0.5, the center of the unit cube.
        radius: ``R``. ``None`` means the smallest ball about ``c`` that holds
            the unit cube, ``sqrt(sum_i max(c_i, 1 - c_i)^2)``.
        batch_shape: Batch shape of the hyperparameters.
        active_dims: Input dimensions the kernel acts on.
        angular_weights_prior: Optional prior on the normalized weights ``c_p``.
        alpha_prior: Prior on ``alpha``; default ``LogNormalPrior(0, 0.5)``,
            ``None`` for none.
        alpha_constraint: Constraint on ``alpha``; default the box
            ``ReflectedInterval(0.5, 1)``, starting at 1. A box whose transform
            never reaches its ends (GPyTorch's sigmoid) starts
            ``WARP_START_INSET`` of its width inside 1.
        beta_prior: Prior on ``beta``; default ``LogNormalPrior(0.5, 0.5)``,
            ``None`` for none.
        beta_constraint: Constraint on ``beta``; default the box
            ``ReflectedInterval(1, 2)``, starting at 1 (as for ``alpha``).
        center_rule: ``"continuous"`` or ``"direction"`` (see above).
        angular_weights_floor: Lower bounds ``f_p`` on the normalized weights:
            ``P + 1`` non-negative floats with sum below 1, or a float ``f`` for
            ``f_p = f`` on the weights ``p >= 1`` (``f_0 = 0``). ``None`` for no
            floor.
        angular_weights_parameterization: ``"softmax"`` or ``"square"``, the map
            from ``raw_angular_weights`` to the weights (see above).
        **kwargs: Passed to ``gpytorch.kernels.Kernel``.

    Example:
        >>> model = SingleTaskGP(train_X, train_Y, covar_module=BOCKKernel())
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> acqf = qLogNoisyExpectedImprovement(model, X_baseline=train_X)
        >>> candidates, _ = optimize_acqf(
        ...     acqf, bounds=bounds, q=1, num_restarts=10, raw_samples=512
        ... )
    """

    has_lengthscale = False
    # Class default for kernels pickled before the argument existed.
    angular_weights_parameterization = "softmax"

    def __init__(
        self,
        angular_degree: int = 3,
        radial_base_kernel: Kernel | None = None,
        center: float | Sequence[float] | Tensor = 0.5,
        radius: float | None = None,
        batch_shape: torch.Size = torch.Size([]),  # noqa: B008
        active_dims: Sequence[int] | None = None,
        angular_weights_prior: Prior | None = None,
        alpha_prior: Prior | None | _Default = DEFAULT,
        alpha_constraint: Interval | None = None,
        beta_prior: Prior | None | _Default = DEFAULT,
        beta_constraint: Interval | None = None,
        center_rule: str = "continuous",
        angular_weights_floor: float | Sequence[float] | None = None,
        angular_weights_parameterization: str = "softmax",
        **kwargs: Any,
    ) -> None:
        floor = _check_floor(angular_weights_floor, angular_degree)
        center_vector = _check_ball(center, radius, center_rule)
        if angular_weights_parameterization not in ANGULAR_WEIGHTS_PARAMETERIZATIONS:
            raise ValueError(
                "`angular_weights_parameterization` must be one of "
                f"{ANGULAR_WEIGHTS_PARAMETERIZATIONS}, got "
                f"{angular_weights_parameterization!r}."
            )
        super().__init__(batch_shape=batch_shape, active_dims=active_dims, **kwargs)
        self.angular_degree = angular_degree
        self.center_rule = center_rule
        self.angular_weights_parameterization = angular_weights_parameterization
        # Plain attributes, not buffers: Kernel.__getitem__ indexes every buffer
        # by the batch index, and neither the floor nor the center has a batch
        # dimension.
        self.angular_weights_floor = floor
        self.center = center_vector
        self.radius = None if radius is None else float(radius)
        # The last polar split of an input that needs no gradient (see _polar).
        self._polar_cache: tuple[Any, ...] | None = None
        if radial_base_kernel is None:
            radial_base_kernel = MaternKernel(
                nu=2.5,
                batch_shape=self.batch_shape,
                lengthscale_constraint=ReflectedInterval(
                    *RADIAL_LENGTHSCALE_BOUNDS, initial_value=1.0
                ),
            )
        self.radial_base_kernel = radial_base_kernel
        self._init_angular_weights(angular_weights_prior)
        self._init_warp(
            "alpha", ALPHA_BOUNDS, alpha_prior, alpha_constraint, default_alpha_prior
        )
        self._init_warp(
            "beta", BETA_BOUNDS, beta_prior, beta_constraint, default_beta_prior
        )

    def _init_angular_weights(self, prior: Prior | None) -> None:
        # Start near the authors' initialisation: almost no constant term, the
        # powers 1..P equally weighted.
        degree = self.angular_degree
        logits = [-math.log(max(degree, 1))] * (degree + 1)
        if degree > 0:
            logits[0] = -5.0
        if self.angular_weights_parameterization == "square":
            # The same weights: raw = sqrt(softmax(logits)).
            init = torch.softmax(torch.tensor(logits, dtype=torch.float64), -1)
            init = init.sqrt().to(torch.get_default_dtype())
        else:
            init = torch.tensor(logits)
        self.register_parameter(
            "raw_angular_weights",
            torch.nn.Parameter(init.expand(*self.batch_shape, -1).clone()),
        )
        if prior is not None:
            self.register_prior(
                "angular_weights_prior",
                prior,
                self._angular_weights_param,
                self._angular_weights_closure,
            )

    def _init_warp(
        self,
        name: str,
        bounds: tuple[float, float],
        prior: Prior | None | _Default,
        constraint: Interval | None,
        default_prior: Callable[[], Prior],
    ) -> None:
        if constraint is None:
            constraint = ReflectedInterval(*bounds, initial_value=1.0)
        self.register_parameter(
            f"raw_{name}", torch.nn.Parameter(torch.zeros(*self.batch_shape, 1))
        )
        self.register_constraint(f"raw_{name}", constraint)
        setattr(self, name, _warp_start(constraint))
        if isinstance(prior, _Default):
            prior = default_prior()
        if prior is not None:
            self.register_prior(
                f"{name}_prior",
                prior,
                getattr(self, f"_{name}_param"),
                getattr(self, f"_{name}_closure"),
            )

    # Prior closures are bound methods, not lambdas, so the kernel pickles.
    def _angular_weights_param(self, m: BOCKKernel) -> Tensor:
        return m.angular_weights

    def _angular_weights_closure(self, m: BOCKKernel, v: Tensor) -> None:
        m.angular_weights = v

    def _alpha_param(self, m: BOCKKernel) -> Tensor:
        return m.alpha

    def _alpha_closure(self, m: BOCKKernel, v: Tensor) -> None:
        m._set_warp_from_prior("alpha", v)

    def _beta_param(self, m: BOCKKernel) -> Tensor:
        return m.beta

    def _beta_closure(self, m: BOCKKernel, v: Tensor) -> None:
        m._set_warp_from_prior("beta", v)

    @property
    def angular_weights(self) -> Tensor:
        r"""The normalised angular weights ``c_0..c_P`` (``batch_shape x (P + 1)``).

        ``c = f + (1 - sum f) s(raw)`` with ``f`` the floor (zero without one)
        and ``s`` the softmax, or ``s(raw)_p = raw_p^2 / sum_q raw_q^2`` under
        the ``"square"`` parameterization, so ``c_p >= f_p`` and ``sum_p c_p =
        1``.
        """
        raw: Tensor = self.raw_angular_weights
        weights: Tensor
        if self.angular_weights_parameterization == "square":
            squares = raw.square() + _SQUARE_FLOOR
            weights = squares / squares.sum(dim=-1, keepdim=True)
        else:
            weights = torch.softmax(raw, dim=-1)
        floor = self.angular_weights_floor
        if floor is None:
            return weights
        floor = floor.to(weights)
        return floor + (1 - floor.sum()) * weights

    @angular_weights.setter
    def angular_weights(self, value: Tensor | Sequence[float]) -> None:
        value = torch.as_tensor(value).to(self.raw_angular_weights)
        if not bool((value > 0).all()) or not bool(torch.isfinite(value).all()):
            raise ValueError(
                f"`angular_weights` must be finite and positive, got {value}."
            )
        floor = self.angular_weights_floor
        if floor is not None:
            floor = floor.to(value)
            value = value / value.sum(dim=-1, keepdim=True)
            if not bool((value > floor).all()):
                raise ValueError(
                    f"`angular_weights` must lie above `angular_weights_floor` "
                    f"{floor.tolist()} after normalisation, got {value.tolist()}."
                )
            value = value - floor
        # Softmax is invariant to a shift of the logits and the squares' ratios
        # to a scaling of the raw values; the weights are normalised.
        raw = (
            value.sqrt()
            if self.angular_weights_parameterization == "square"
            else value.log()
        )
        self.initialize(raw_angular_weights=raw.expand_as(self.raw_angular_weights))

    @property
    def alpha(self) -> Tensor:
        r"""The warp's inner exponent ``alpha`` (``batch_shape x 1``)."""
        alpha: Tensor = self.raw_alpha_constraint.transform(self.raw_alpha)
        return alpha

    @alpha.setter
    def alpha(self, value: float | Tensor) -> None:
        self._set_warp("alpha", value)

    @property
    def beta(self) -> Tensor:
        r"""The warp's outer exponent ``beta`` (``batch_shape x 1``)."""
        beta: Tensor = self.raw_beta_constraint.transform(self.raw_beta)
        return beta

    @beta.setter
    def beta(self, value: float | Tensor) -> None:
        self._set_warp("beta", value)

    def _set_warp_from_prior(self, name: str, value: Tensor) -> None:
        r"""The warp's prior closure: a value outside the box is a rejected draw.

        BoTorch's ``sample_all_priors`` (the fallback of ``fit_gpytorch_mll`` after
        a failed fit) draws again when the closure raises GPyTorch's "out of
        bounds of its current constraints" ``RuntimeError``; the priors put mass
        outside the boxes, so a draw can land there.
        """
        constraint = getattr(self, f"raw_{name}_constraint")
        if not bool(constraint.check(value.to(constraint.lower_bound))):
            raise RuntimeError(
                f"A sample of `{name}`'s prior, {value.tolist()}, is out of bounds "
                f"of its current constraints [{constraint.lower_bound.item():g}, "
                f"{constraint.upper_bound.item():g}]."
            )
        self._set_warp(name, value)

    def _set_warp(self, name: str, value: float | Tensor) -> None:
        raw = getattr(self, f"raw_{name}")
        value = torch.as_tensor(value).to(raw)
        constraint = getattr(self, f"raw_{name}_constraint")
        if not bool(constraint.check(value)):
            raise ValueError(
                f"`{name}` must lie in [{constraint.lower_bound.item():g}, "
                f"{constraint.upper_bound.item():g}], got {value.tolist()}."
            )
        raw_value = constraint.inverse_transform(value)
        if not bool(torch.isfinite(raw_value).all()):
            # The ends of a sigmoid box are infinite logits.
            raw_value = raw_value.clamp(-_MAX_RAW_WARP, _MAX_RAW_WARP)
        self.initialize(**{f"raw_{name}": raw_value})

    def ball(self, dim: int) -> tuple[Tensor, float]:
        r"""The center (a ``dim``-vector, float64) and radius used for ``dim``-d inputs.

        Args:
            dim: The number of (active) input dimensions.

        Returns:
            A tuple ``(center, radius)``.

        Raises:
            ValueError: If a vector ``center`` does not have ``dim`` entries.
        """
        center = self.center.expand(dim) if self.center.dim() == 0 else self.center
        if center.shape[-1] != dim:
            raise ValueError(
                f"`center` has {center.shape[-1]} entries but the inputs have "
                f"{dim} (active) dimensions."
            )
        if self.radius is not None:
            return center, self.radius
        return center, float(torch.maximum(center, 1 - center).pow(2).sum().sqrt())

    def cylindrical(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        r"""The polar split of ``x`` about the center, radius scaled to ``[0, 1]``.

        Args:
            x: A ``batch_shape x n x d`` tensor of inputs.

        Returns:
            ``rho`` (``batch_shape x n x 1``), the unit directions ``a``
            (``batch_shape x n x d``, zero at the center) and the center mask.

        Raises:
            ValueError: If an input is NaN or lies outside the ball.
        """
        rho, a, at_center, _ = self._polar(x)
        return rho, a, at_center

    def _polar(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        # ``cylindrical(x)`` and the warp's squeezed radius. They depend on x and
        # the ball only, so for an input that needs no gradient they are kept
        # for the next call with the same, unmodified tensor: a MAP fit passes
        # the training inputs' tensor to every evaluation of the marginal
        # likelihood.
        cache = getattr(self, "_polar_cache", None)
        if (
            cache is not None
            and cache[0] is x
            and cache[1] is self.center
            and cache[2] == self._polar_key(x)
        ):
            hit: tuple[Tensor, Tensor, Tensor, Tensor] = cache[3]
            return hit
        center, radius = self.ball(x.shape[-1])
        norm, a, at_center = polar_split(x - center.to(x))
        rho = norm / radius
        slack = _BALL_SLACK_EPS * torch.finfo(x.dtype).eps
        outside = ~(rho <= 1 + slack)  # also catches NaN
        if bool(outside.any()):
            if bool(torch.isnan(x).any()):
                raise ValueError(
                    f"BOCKKernel inputs contain NaN ({int(torch.isnan(x).sum())} of "
                    f"{x.numel()} entries)."
                )
            worst = norm.detach().max().item()
            raise ValueError(
                f"BOCKKernel inputs must lie in the ball of radius {radius:.6g} "
                f"about the center; found a point at radius {worst:.6g} "
                f"({worst / radius:.6g} radii). Map the inputs into the ball (e.g. "
                "normalize them to the unit cube) or pass a larger `radius`."
            )
        # BoTorch's kumaraswamy_warp's first step, on rho clamped to [0, 1].
        squeezed = torch.clamp(
            rho.clamp(0.0, 1.0) * (1 - 2 * _KUMARASWAMY_EPS) + _KUMARASWAMY_EPS,
            _KUMARASWAMY_EPS,
            1.0 - _KUMARASWAMY_EPS,
        )
        out = (rho, a, at_center, squeezed)
        cacheable = not (
            x.requires_grad or x.is_inference() or torch.is_inference_mode_enabled()
        )
        if cacheable:
            self._polar_cache = (x, self.center, self._polar_key(x), out)
        return out

    def _polar_key(self, x: Tensor) -> tuple[int, int, float | None]:
        # What a cached polar split of the tensor x depends on besides the
        # identities of x and the center: their version counters (in-place
        # changes) and the radius.
        return (x._version, self.center._version, self.radius)

    def __getstate__(self) -> dict[str, Any]:
        r"""The module's state without the cached polar split (not pickled)."""
        state = dict(self.__dict__)
        state["_polar_cache"] = None
        return state

    def warp(self, rho: Tensor) -> Tensor:
        r"""The Kumaraswamy warp ``w(rho) = 1 - (1 - rho^alpha)^beta``.

        The arithmetic of BoTorch's ``kumaraswamy_warp``, which squeezes ``rho``
        into ``[1e-8, 1 - 1e-8]`` so that neither power sees 0 (finite gradients
        at the center and on the ball's boundary).

        Args:
            rho: A ``batch_shape x n x 1`` tensor of scaled radii in ``[0, 1]``.

        Returns:
            The warped radii, same shape.
        """
        return self._warp(rho, self.alpha, self.beta)

    def _warp(self, rho: Tensor, alpha: Tensor, beta: Tensor) -> Tensor:
        shape = (*self.batch_shape, 1, 1)
        return kumaraswamy_warp(
            rho.clamp(0.0, 1.0), c0=beta.view(shape), c1=alpha.view(shape)
        )

    def _warp_squeezed(self, squeezed: Tensor, alpha: Tensor, beta: Tensor) -> Tensor:
        # kumaraswamy_warp's remaining steps on its squeezed input (the same
        # operations, so the same values and gradients); alpha and beta shaped
        # batch_shape x 1 x 1.
        inner = 1 - torch.pow(squeezed, alpha)
        return 1 - torch.pow(inner, beta)

    def center_similarity(self, dim: int) -> Tensor:
        r"""``K_a(center, a) = sqrt(sum_p c_p m_p)`` of the ``"direction"`` rule.

        The same for every direction. Under the ``"continuous"`` rule the center's
        similarity is ``sqrt(c_0 / N(x))`` instead and depends on ``x``'s radius.

        Args:
            dim: The number of (active) input dimensions.

        Returns:
            A ``batch_shape`` tensor.
        """
        weights = self.angular_weights
        moments = torch.tensor(
            sphere_moments(dim, self.angular_degree),
            dtype=weights.dtype,
            device=weights.device,
        )
        # m_0 = 1 and softmax weights are positive, so the sum is > 0.
        return (weights * moments).sum(dim=-1).sqrt()

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any
    ) -> Tensor:
        r"""``K(x1, x2)`` (``batch_shape x n x m``, or ``batch_shape x n`` if ``diag``).

        Raises:
            ValueError: If an input lies outside the ball.
        """
        # The warp's exponents once per call (each is a constraint transform),
        # the polar split and warp once when x2 is x1 (a Gram matrix), and the
        # polar split not at all when the input is the last call's (a fit).
        alpha, beta = self.alpha, self.beta
        # (GPyTorch's batch_shape walks the sub-kernels: read it once.)
        shape = (*self.batch_shape, 1, 1)
        alpha, beta = alpha.view(shape), beta.view(shape)
        rho1, a1, at_center1, squeezed1 = self._polar(x1)
        w1 = self._warp_squeezed(squeezed1, alpha, beta)
        if x2 is x1:
            rho2, a2, at_center2, w2 = rho1, a1, at_center1, w1
        else:
            rho2, a2, at_center2, squeezed2 = self._polar(x2)
            w2 = self._warp_squeezed(squeezed2, alpha, beta)
        if self._fused_gram_applies(x1, x2, diag, params, len(shape) == 2):
            return self._fused_gram(rho1, rho2, w1, w2, a1, a2)
        weights = self.angular_weights
        if diag:
            dot = (a1 * a2).sum(dim=-1)
            weights = weights.unsqueeze(-2)  # batch x 1 x (P + 1)
        else:
            dot = a1 @ a2.transpose(-1, -2)
            weights = weights[..., None, None, :]
        if self.center_rule == "continuous":
            angular = self._continuous_angular(rho1, rho2, w1, w2, dot, weights, diag)
        else:
            angular = horner(weights, dot)
        # Batched hyperparameters may broadcast against inputs without that batch
        # dimension (e.g. the draws of a fully Bayesian model): expand to both.
        shape = torch.broadcast_shapes(angular.shape, dot.shape)
        angular = angular.expand(shape) if angular.shape != shape else angular
        if self.center_rule == "direction":
            angular = self._fix_center(
                angular, at_center1, at_center2, x1.shape[-1], diag
            )
        return self._radial(w1, w2, diag, **params) * angular

    def _fused_gram_applies(
        self,
        x1: Tensor,
        x2: Tensor,
        diag: bool,
        params: dict[str, Any],
        unbatched: bool | None = None,
    ) -> bool:
        # CylindricalGram covers the default configuration on unbatched inputs:
        # the "continuous" rule and the default radius kernel's Matern-5/2.
        # `unbatched`: whether batch_shape is empty, if the caller knows.
        k = self.radial_base_kernel
        if unbatched is None:
            unbatched = len(self.batch_shape) == 0
        return (
            not diag
            and not params.get("last_dim_is_batch", False)
            and self.center_rule == "continuous"
            and unbatched
            and x1.dim() == 2
            and x2.dim() == 2
            and type(k) is MaternKernel
            and k.nu == 2.5
            and k.raw_lengthscale.numel() == 1
        )

    def _fused_gram(
        self, rho1: Tensor, rho2: Tensor, w1: Tensor, w2: Tensor, a1: Tensor, a2: Tensor
    ) -> Tensor:
        # The "continuous" Gram matrix, M(s1 - s2) H(u1 . u2) / sqrt(N1 N2), with
        # the n x m work in CylindricalGram; the per-point terms here.
        weights = self.angular_weights.clamp_min(
            torch.finfo(self.raw_angular_weights.dtype).eps ** 2
        )
        r1 = self._offset_norm(rho1, w1).squeeze(-1)
        r2 = self._offset_norm(rho2, w2).squeeze(-1)
        # (Horner's rule returns the weight itself for angular_degree 0.)
        g1 = horner(weights, r1.square()).expand_as(r1).rsqrt()
        g2 = horner(weights, r2.square()).expand_as(r2).rsqrt()
        scale = math.sqrt(5) / self.radial_base_kernel.lengthscale.reshape(())
        s1, s2 = (w1.squeeze(-1) * scale), (w2.squeeze(-1) * scale)
        # Function.apply is unannotated in PyTorch.
        gram: Tensor = CylindricalGram.apply(  # type: ignore[no-untyped-call]
            a1, a2, r1, r2, s1, s2, g1, g2, weights
        )
        return gram

    def _offset_norm(self, rho: Tensor, w: Tensor) -> Tensor:
        # |u| = w(rho) rho / (rho + eps): BoTorch's warp maps rho = 0 to
        # w(eps) > 0, and the factor takes |u| smoothly to 0 at the center (a
        # relative change below eps / rho elsewhere).
        return w * rho / (rho + _KUMARASWAMY_EPS)

    def _continuous_angular(
        self,
        rho1: Tensor,
        rho2: Tensor,
        w1: Tensor,
        w2: Tensor,
        dot: Tensor,
        weights: Tensor,
        diag: bool,
    ) -> Tensor:
        # K_a = sum_p c_p (u1 . u2)^p / sqrt(N1 N2) with u = |u| a. The weights are
        # defined up to scale here, so raising tiny ones to eps^2 changes nothing
        # but keeps N >= c_0 > 0 (no 0 / 0 between two centers).
        weights = weights.clamp_min(torch.finfo(weights.dtype).eps ** 2)
        r1, r2 = self._offset_norm(rho1, w1), self._offset_norm(rho2, w2)
        if diag:
            r1, r2 = r1.squeeze(-1), r2.squeeze(-1)
            udot = dot * r1 * r2
            w_norm = weights
        else:
            udot = dot * (r1 * r2.mT)
            w_norm = weights.squeeze(-2)  # batch x 1 x (P + 1)
        # N(x) = sum_p c_p |u|^(2p) per point, by Horner's rule in |u|^2.
        if diag:
            n1 = horner(w_norm, r1.square())
            n2 = horner(w_norm, r2.square())
            norm = (n1 * n2).sqrt()
        else:
            n1 = horner(w_norm, r1.square().squeeze(-1)).unsqueeze(-1)
            n2 = horner(w_norm, r2.square().squeeze(-1)).unsqueeze(-2)
            norm = (n1 * n2).sqrt()
        return horner(weights, udot) / norm

    def _fix_center(
        self,
        angular: Tensor,
        at_center1: Tensor,
        at_center2: Tensor,
        dim: int,
        diag: bool,
    ) -> Tensor:
        # The polynomial gave c_0 wherever a direction is zero (a center); replace
        # it by the center rule's values: s against a direction, 1 between centers.
        if not (bool(at_center1.any()) or bool(at_center2.any())):
            return angular
        s = self.center_similarity(dim)
        if diag:
            mask1, mask2 = at_center1.squeeze(-1), at_center2.squeeze(-1)
            s = s.unsqueeze(-1)
        else:
            mask1, mask2 = at_center1, at_center2.transpose(-1, -2)
            s = s[..., None, None]
        either, both = mask1 | mask2, mask1 & mask2
        if s.dim() == 0 and self.angular_degree > 0:
            # In place on Horner's last sum (its backward does not need it): two
            # masked fills cost about half of the two nested n x n `where`s.
            return angular.masked_fill_(either, s).masked_fill_(both, 1.0)
        one = torch.ones((), dtype=angular.dtype, device=angular.device)
        return torch.where(both, one, torch.where(either, s, angular))

    def _radial(self, w1: Tensor, w2: Tensor, diag: bool, **params: Any) -> Tensor:
        k = self.radial_base_kernel
        if type(k) is MaternKernel and k.nu == 2.5 and k.lengthscale.shape[-1] == 1:
            # Same function as GPyTorch's Matern-5/2, written for 1-d inputs: GPyTorch
            # takes its generic distance path whenever the inputs need gradients
            # (they do: the warp is learned), which costs about twice as many
            # n x n passes. Tested against GPyTorch's value.
            scale = math.sqrt(5) / k.lengthscale  # batch x 1 x 1
            u1, u2 = w1 * scale, w2 * scale
            if diag:
                u1, u2 = u1.squeeze(-1), u2.squeeze(-1)
            else:
                u2 = u2.mT
            # Function.apply is unannotated in PyTorch.
            matern: Tensor = Matern52Radial.apply(u1, u2)  # type: ignore[no-untyped-call]
            return matern
        with settings.lazily_evaluate_kernels(False):
            radial = k(w1, w2, diag=diag, **params)
        dense: Tensor = radial if diag else radial.to_dense()
        return dense


def _check_ball(
    center: float | Sequence[float] | Tensor, radius: float | None, center_rule: str
) -> Tensor:
    r"""Validate the ball and the center rule; returns the center as float64."""
    if radius is not None:
        check_positive("radius", radius)
    if center_rule not in CENTER_RULES:
        raise ValueError(
            f"`center_rule` must be one of {', '.join(map(repr, CENTER_RULES))}, "
            f"got {center_rule!r}."
        )
    center_vector = torch.as_tensor(center, dtype=torch.float64)
    if center_vector.dim() > 1:
        raise ValueError(
            f"`center` must be a scalar or a 1-d tensor, got shape "
            f"{tuple(center_vector.shape)}."
        )
    if not bool(torch.isfinite(center_vector).all()):
        raise ValueError(f"`center` must be finite, got {center}.")
    return center_vector


def _check_floor(
    floor: float | Sequence[float] | None, angular_degree: int
) -> Tensor | None:
    r"""Validate ``angular_degree`` and ``angular_weights_floor``.

    Returns:
        The floor as a float64 ``(P + 1)`` vector, or None.
    """
    if isinstance(angular_degree, bool) or not isinstance(angular_degree, int):
        raise ValueError(
            f"`angular_degree` must be a non-negative int, got {angular_degree!r}."
        )
    if angular_degree < 0:
        raise ValueError(
            f"`angular_degree` must be a non-negative int, got {angular_degree}."
        )
    if floor is None:
        return None
    if isinstance(floor, int | float) and not isinstance(floor, bool):
        if angular_degree == 0:
            raise ValueError(
                "`angular_weights_floor` as a float floors the non-constant weights, "
                "but `angular_degree` is 0."
            )
        values = [0.0] + [float(floor)] * angular_degree
    else:
        values = [float(v) for v in cast(Sequence[float], floor)]
        if len(values) != angular_degree + 1:
            raise ValueError(
                f"`angular_weights_floor` needs {angular_degree + 1} entries "
                f"(`angular_degree` + 1), got {len(values)}: {floor!r}."
            )
    t = torch.tensor(values, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()) or t.sum() >= 1:
        raise ValueError(
            "`angular_weights_floor` must be non-negative with a sum below 1, "
            f"got {floor!r}."
        )
    return t


def __getattr__(name: str) -> type[BOCKKernel]:
    # The name before 0.2.0, as `botorch_ext.kernels.cylindrical.CylindricalKernel`.
    if name == "CylindricalKernel":
        return deprecated_kernel_alias()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def deprecated_kernel_alias() -> type[BOCKKernel]:
    r"""``BOCKKernel`` for its old name ``CylindricalKernel``, with a warning.

    The modules that keep the old name (``botorch_ext``, ``botorch_ext.kernels``
    and this one) return it from their ``__getattr__``. The warning names the
    first caller outside Python's import machinery and those ``__getattr__``
    functions; a caller inside ``botorch_ext`` gets no warning, and neither does
    the import machinery's look-up of a ``from ... import`` (the statement's own
    look-up that follows warns).
    """
    frame: FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("importlib"):
            return BOCKKernel
        alias_frame = module.startswith("botorch_ext") and frame.f_code.co_name in (
            "__getattr__",
            "deprecated_kernel_alias",
        )
        if not alias_frame:
            break
        frame, level = frame.f_back, level + 1
    if frame is None or module.startswith("botorch_ext"):
        return BOCKKernel
    warnings.warn(
        "`CylindricalKernel` is renamed `BOCKKernel` (GPyTorch's "
        "`gpytorch.kernels.CylindricalKernel` is another kernel); the old name "
        "will be removed in the next release.",
        DeprecationWarning,
        stacklevel=level,
    )
    return BOCKKernel
