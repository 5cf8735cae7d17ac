r"""Representer points for ``qES``: a candidate pool and the schemes that pick from it.

``draw_representer_points`` draws a pool (scrambled Sobol points in the box plus
perturbations of the best training inputs) and keeps the points where the
maximiser plausibly is, by sampled maximisers (``"thompson"``) or EI-weighted
sampling (``"ei"``) [Hennig2012entropy]_.
"""

from __future__ import annotations

import numbers
from typing import cast

import torch
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import is_fully_bayesian
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from botorch_ext.validation import check_bounds, check_positive_int

#: Fixed diagonal jitter, relative to the mean prior variance, added before the
#: factorizations of posterior covariances over representer points (here and in
#: ``qES``): enough for clustered representers to factorize without
#: ``psd_safe_cholesky``'s adaptive (and discontinuous) jitter, and far below
#: ``tau^2``.
RELATIVE_JITTER = {torch.float32: 1e-5, torch.float64: 1e-8}


def draw_representer_points(
    model: Model,
    bounds: Tensor,
    num_points: int = 48,
    num_candidates: int | None = None,
    posterior_transform: PosteriorTransform | None = None,
    seed: int | None = None,
    uniform_fraction: float = 0.25,
    scheme: str = "thompson",
    num_around_best: int = 256,
    X_baseline: Tensor | None = None,
) -> Tensor:
    r"""Draw representer points for ``qES``.

    Draws ``num_candidates`` scrambled Sobol points in ``bounds``, plus
    ``num_around_best`` Gaussian perturbations (standard deviation 5% of the
    box) of the training inputs with the highest posterior means, and keeps
    ``num_points`` of this pool:

    - ``scheme="ei"``: sampled without replacement from the mixture
      ``(1 - uniform_fraction) * EI / sum(EI) + uniform_fraction / pool size``,
      where EI is the analytic expected improvement over the best posterior mean
      in the pool. The EI part concentrates representers where the maximiser
      plausibly is, as Entropy Search does with its EI-based measure
      [Hennig2012entropy]_; the uniform part keeps some coverage of the rest of
      the space.
    - ``scheme="thompson"``: the maximisers over the pool of ``num_points``
      joint posterior draws, i.e. draws from (the pool's discretization of)
      ``p_max`` itself, as predictive and joint entropy searches sample their
      optima; duplicates are dropped and the remaining slots are filled as in
      ``"ei"``.

    The defaults were chosen by measurement (see the qES page of the
    documentation). ``scheme="thompson"`` with points around the best inputs:
    they put the representers near the incumbent, where the EI-weighted Sobol
    draw spreads them over the whole space and the BO loop found worse values.
    ``num_points=48`` from a pool of 512 Sobol and 256 around-best points: a
    ``qES`` step costs about a third less than with 64 from 1,024 and 512 (a
    smaller pool to factorize, fewer softmax terms per evaluation), and the BO
    loops found equally good values.

    Example:
        >>> bounds = torch.tensor([[0.0], [1.0]], dtype=torch.double)  # model's
        >>> R = draw_representer_points(model, bounds=bounds)

    Args:
        model: A fitted single-output model (or scalarized with
            ``posterior_transform``).
        bounds: A ``2 x d``-dim tensor of lower and upper bounds.
        num_points: The number ``m`` of representer points to return.
        num_candidates: Number of Sobol candidates; ``max(512, 8 m)`` if None.
        posterior_transform: A ``PosteriorTransform`` (optional).
        seed: Seed for the Sobol candidates and the subsampling.
        uniform_fraction: Weight in ``[0, 1]`` of the uniform component.
        scheme: ``"thompson"`` (sampled maximisers, the default) or ``"ei"``
            (EI-weighted sampling); see above.
        num_around_best: Number of pool points perturbed around the best
            inputs of ``X_baseline`` (256 by default; 0 disables, which a model
            without ``train_inputs`` and no ``X_baseline`` needs).
        X_baseline: A ``n x d``-dim tensor of evaluated inputs, in the space of
            ``bounds``, for ``num_around_best``; if None, the model's
            ``train_inputs``, mapped back through its input transform if it has
            one (an input transform that cannot be undone needs ``X_baseline``).

    Returns:
        A ``num_points x d``-dim tensor of representer points.

    Raises:
        ValueError: For malformed ``bounds``, ``num_candidates < num_points``, an
            unknown ``scheme`` or a negative ``num_around_best``.
        UnsupportedError: For a fully Bayesian model (a mixture over
            hyperparameter draws).
    """
    if is_fully_bayesian(model):
        raise UnsupportedError(
            "draw_representer_points does not support fully Bayesian models "
            f"({type(model).__name__}); qES needs one posterior, not a mixture."
        )
    num_candidates = _check_arguments(
        bounds, num_points, num_candidates, uniform_fraction, scheme, num_around_best
    )
    # The pool takes the dtype and device of the model's inputs, so that bounds
    # in torch's default float32 work with a float64 model.
    bounds = torch.as_tensor(bounds)
    reference = X_baseline if X_baseline is not None else training_inputs(model)
    if reference is not None and reference.is_floating_point():
        bounds = bounds.to(reference)
    elif not bounds.is_floating_point():
        bounds = bounds.to(torch.get_default_dtype())
    generator = None
    if seed is not None:
        generator = torch.Generator(device=bounds.device).manual_seed(seed)
    pool = draw_sobol_samples(bounds=bounds, n=num_candidates, q=1, seed=seed)
    pool = pool.squeeze(-2)
    if num_around_best > 0:
        near_best = _around_best(
            model, bounds, num_around_best, generator, X_baseline, posterior_transform
        )
        pool = torch.cat([pool, near_best], dim=0)
    with torch.no_grad():
        chosen = _choose(
            model, pool, num_points, uniform_fraction, scheme, generator,
            posterior_transform,
        )  # fmt: skip
    return pool[chosen]


def _check_arguments(
    bounds: Tensor,
    num_points: int,
    num_candidates: int | None,
    uniform_fraction: float,
    scheme: str,
    num_around_best: int,
) -> int:
    r"""Validate ``draw_representer_points``'s arguments; the number of candidates."""
    check_positive_int("num_points", num_points)
    if not 0.0 <= uniform_fraction <= 1.0:
        raise ValueError(
            f"`uniform_fraction` must be in [0, 1], got {uniform_fraction!r}."
        )
    if scheme not in REPRESENTER_SCHEMES:
        raise ValueError(
            f"`scheme` must be one of {REPRESENTER_SCHEMES}, got {scheme!r}."
        )
    if (
        isinstance(num_around_best, bool)
        or not isinstance(num_around_best, numbers.Integral)
        or num_around_best < 0
    ):
        raise ValueError(
            f"`num_around_best` must be a non-negative integer, got "
            f"{num_around_best!r}."
        )
    check_bounds("bounds", torch.as_tensor(bounds))
    if num_candidates is None:
        num_candidates = max(512, 8 * num_points)
    else:
        check_positive_int("num_candidates", num_candidates)
    if num_candidates < num_points:
        raise ValueError(
            f"`num_candidates` ({num_candidates}) must be >= `num_points` "
            f"({num_points})."
        )
    return num_candidates


def training_inputs(model: Model) -> Tensor | None:
    r"""A model's first training input tensor, if it exposes one (``train_inputs``).

    Args:
        model: Any BoTorch model.

    Returns:
        ``model.train_inputs[0]``, or None for a model without training inputs.
    """
    train_inputs = getattr(model, "train_inputs", None)
    if isinstance(train_inputs, tuple) and len(train_inputs) > 0:
        return cast(Tensor, train_inputs[0])
    return None


def _choose(
    model: Model,
    pool: Tensor,
    num_points: int,
    uniform_fraction: float,
    scheme: str,
    generator: torch.Generator | None,
    posterior_transform: PosteriorTransform | None,
) -> Tensor:
    r"""The indices of the ``num_points`` pool points kept (see the schemes above)."""
    posterior = model.posterior(pool, posterior_transform=posterior_transform)
    # The stubs' Posterior declares no mean; BoTorch's posteriors have one.
    mean = posterior.mean  # type: ignore[attr-defined]
    log_ei = LogExpectedImprovement(
        model=model, best_f=mean.max(), posterior_transform=posterior_transform
    )(pool.unsqueeze(-2))
    probs = (1.0 - uniform_fraction) * torch.softmax(log_ei.flatten().double(), 0)
    probs = probs + uniform_fraction / probs.numel()
    chosen = torch.zeros(0, dtype=torch.long, device=pool.device)
    if scheme == "thompson":
        covariance = cast(GPyTorchPosterior, posterior).distribution.covariance_matrix
        chosen = _sampled_maximizers(
            mean.squeeze(-1), covariance, pool, num_points, generator
        )
        probs[chosen] = 0.0
    num_rest = num_points - chosen.numel()
    if num_rest > 0:
        rest = torch.multinomial(
            probs, num_rest, replacement=False, generator=generator
        )
        chosen = torch.cat([chosen, rest])
    return chosen


def _sampled_maximizers(
    mean: Tensor,
    covariance: Tensor,
    pool: Tensor,
    num_draws: int,
    generator: torch.Generator | None,
) -> Tensor:
    r"""The distinct argmaxes of ``num_draws`` joint posterior draws over ``pool``.

    ``mean`` and ``covariance`` are the posterior's over the pool's points.
    """
    z = torch.randn(
        num_draws,
        pool.shape[0],
        generator=generator,
        dtype=pool.dtype,
        device=pool.device,
    )
    jitter = RELATIVE_JITTER[pool.dtype] * covariance.diagonal().mean()
    # The jitter added to the diagonal of a copy, as ``covariance + jitter * I``
    # without the identity matrix (the same numbers).
    jittered = covariance.clone()
    jittered.diagonal().add_(jitter)
    L = psd_safe_cholesky(jittered)
    draws = mean + z @ L.transpose(-1, -2)
    maximizers: Tensor = draws.argmax(dim=-1).unique()
    return maximizers


#: The representer-point schemes of ``draw_representer_points``.
REPRESENTER_SCHEMES = ("ei", "thompson")


def _around_best(
    model: Model,
    bounds: Tensor,
    n: int,
    generator: torch.Generator | None,
    X_baseline: Tensor | None,
    posterior_transform: PosteriorTransform | None = None,
) -> Tensor:
    r"""``n`` Gaussian perturbations (5% of the box) of the best training inputs.

    The best are the top 5% (at least one) of the training inputs by posterior
    mean, as BoTorch's ``sample_points_around_best`` picks them.
    """
    if X_baseline is None:
        train_inputs = getattr(model, "train_inputs", None)
        if not isinstance(train_inputs, tuple) or len(train_inputs) == 0:
            raise ValueError(
                "`num_around_best` > 0 (256 by default) needs `X_baseline` or a "
                f"model with `train_inputs`, got a {type(model).__name__}; pass "
                "`X_baseline` or `num_around_best=0`."
            )
        X_baseline = train_inputs[0]
        input_transform = getattr(model, "input_transform", None)
        if input_transform is not None:
            # BoTorch models keep transformed training inputs; the pool is in
            # the space of `bounds`, the model's own inputs.
            try:
                X_baseline = input_transform.untransform(X_baseline)
            except NotImplementedError as e:
                raise ValueError(
                    "`num_around_best` > 0 needs `X_baseline` (the evaluated "
                    "inputs in the space of `bounds`) for a model whose input "
                    f"transform ({type(input_transform).__name__}) cannot be "
                    "undone; pass `X_baseline` or `num_around_best=0`."
                ) from e
    X = X_baseline.to(bounds).reshape(-1, X_baseline.shape[-1])
    with torch.no_grad():
        posterior = model.posterior(X, posterior_transform=posterior_transform)
        mean = posterior.mean  # type: ignore[attr-defined]  # as in the caller
        mean = mean.reshape(X.shape[0], -1).mean(-1)
    k = max(1, int(0.05 * X.shape[0]))
    best = X[mean.topk(k).indices]
    idx = torch.randint(k, (n,), generator=generator, device=X.device)
    noise = torch.randn(
        n, X.shape[-1], generator=generator, dtype=X.dtype, device=X.device
    )
    scale = 0.05 * (bounds[1] - bounds[0])
    return torch.minimum(torch.maximum(best[idx] + scale * noise, bounds[0]), bounds[1])
