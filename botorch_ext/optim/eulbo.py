r"""Joint EULBO optimization: choose the next query jointly with the SVGP fit.

[Maus2024eulbo]_ replace "fit the SVGP by its ELBO, then maximize an acquisition
function under it" by one problem over the candidates ``x`` and the SVGP
parameters ``w``,

    max_{x, w}  L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)

(``eulbo``). ``optimize_eulbo`` solves it for an ``EULBOModel``;
``EULBOModel.optimize_eulbo`` is a thin method over it.

Data path of one EULBO step: the model (its state ``w`` carried from the
previous BO step, ``EULBOModel.carry_over``) -> ELBO fit to convergence
(``model.fit_elbo``) -> warm start (``optimize_acqf`` on the matching
acquisition: ``qLogExpectedImprovement`` for ``"ei"``, the one-shot soft KG
``qLogSoftKG`` for ``"kg"``) -> alternate w-step (minibatch ELBO plus expected
log utility) and x-step (expected log utility) -> project ``x`` onto the bounds
-> the best state seen and its candidates (``model.last_optimization``).

References

.. [Maus2024eulbo]
    N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
    Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import TYPE_CHECKING

import torch
from botorch.acquisition import qLogExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import optimize_acqf
from botorch.optim.core import scipy_minimize
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from botorch_ext.acquisition.soft_kg import qLogSoftKG
from botorch_ext.optim.fit import (
    _check_elbo,
    _check_set,
    _minibatch_stream,
    _minibatches,
    _StoppingRule,
    _w_step,
)
from botorch_ext.optim.utils import ignore_optimize_acqf_retry_warnings
from botorch_ext.validation import check_bounds, check_positive_int

if TYPE_CHECKING:  # the model imports this module, not the other way round
    from botorch_ext.models.eulbo import EULBOModel

#: Utilities of the EULBO: soft improvement and one-shot soft KG.
UTILITIES = ("ei", "kg")
#: Alternation schemes of the w- and x-steps.
ALTERNATIONS = ("step", "epoch")
#: Optimizers of the joint EULBO phase (``EULBOOptions.joint_optimizer``).
JOINT_OPTIMIZERS = ("lbfgs", "adam")
#: Blocks of ``w`` that the joint EULBO phase can refine
#: (``EULBOOptions.joint_parameters``; Figure 3 of [Maus2024eulbo]_).
JOINT_PARAMETER_BLOCKS = ("variational", "inducing_points", "hyperparameters")


def joint_parameter_blocks(joint_parameters: str | tuple[str, ...]) -> tuple[str, ...]:
    r"""Resolve ``EULBOOptions.joint_parameters`` to a tuple of block names.

    ``"all"`` is every block of ``JOINT_PARAMETER_BLOCKS``; a single block name
    or a non-empty tuple (or list) of them is that subset.

    Example:
        >>> joint_parameter_blocks("all")
        ('variational', 'inducing_points', 'hyperparameters')
        >>> joint_parameter_blocks(("variational", "inducing_points"))
        ('variational', 'inducing_points')

    Args:
        joint_parameters: ``"all"``, a block name, or a sequence of block names.

    Returns:
        The selected blocks, in ``JOINT_PARAMETER_BLOCKS`` order.

    Raises:
        ValueError: For an unknown or empty selection, naming the value.
    """
    if isinstance(joint_parameters, str):
        names = (
            JOINT_PARAMETER_BLOCKS if joint_parameters == "all" else (joint_parameters,)
        )
    else:
        names = tuple(joint_parameters)
    bad = [b for b in names if b not in JOINT_PARAMETER_BLOCKS]
    if not names or bad:
        raise ValueError(
            "`joint_parameters` must be 'all' or a non-empty selection of "
            f"{JOINT_PARAMETER_BLOCKS}, got {joint_parameters!r}."
        )
    return tuple(b for b in JOINT_PARAMETER_BLOCKS if b in names)


def joint_parameters(model: EULBOModel) -> list[Tensor]:
    r"""The parameters the joint EULBO phase updates (``model.options``).

    ``"variational"`` is ``q(u)`` (mean and Cholesky factor),
    ``"inducing_points"`` is ``Z``, ``"hyperparameters"`` is everything else
    that is trained (constant mean, kernel, likelihood). Parameters outside the
    selection keep the values of the ELBO fit that starts ``optimize_eulbo``,
    as in the refinement ablation of [Maus2024eulbo]_ (Figure 3).

    Example:
        >>> params = joint_parameters(model)  # all of w by default

    Args:
        model: An ``EULBOModel``.

    Returns:
        The selected trainable parameters.
    """
    blocks = joint_parameter_blocks(model.options.joint_parameters)
    selected = []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if "_variational_distribution." in name:
            block = "variational"
        elif name.endswith("variational_strategy.inducing_points"):
            block = "inducing_points"
        else:
            block = "hyperparameters"
        if block in blocks:
            selected.append(p)
    return selected


def eulbo(
    model: EULBOModel,
    X: Tensor,
    base_samples: Tensor | None = None,
    utility: str = "ei",
) -> Tensor:
    r"""The full-data EULBO ``L_ELBO + utility_weight * E log u(X)``.

    The ELBO is on the model's ``elbo_scale`` (summed over the data or per
    datum), evaluated in train mode on all data; the utility is
    ``model.expected_log_utility``.

    Example:
        >>> value = eulbo(model, torch.rand(1, 2))  # or model.eulbo(X)

    Args:
        model: An ``EULBOModel``.
        X: ``q x d`` candidates (``(q + S) x d`` for ``"kg"``).
        base_samples: As for ``EULBOModel.expected_log_utility``.
        utility: ``"ei"`` or ``"kg"``.

    Returns:
        A scalar tensor.
    """
    was_training = model.training
    model.train()
    try:
        value = model._elbo(model.train_X_full, model.train_Y_std)
    finally:
        model.train(was_training)
    return value + model.utility_weight * model.expected_log_utility(
        X.unsqueeze(0), base_samples, utility
    ).squeeze(0)


def optimize_eulbo(
    model: EULBOModel,
    bounds: Tensor,
    q: int = 1,
    utility: str = "ei",
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""Choose ``q`` candidates jointly with the SVGP fit (Algorithm 1).

    Warm start: ``model.fit_elbo`` then ``optimize_acqf`` on the matching
    acquisition under the fitted SVGP (BoTorch's ``qLogExpectedImprovement``
    for ``"ei"``; the one-shot soft-KG ``qLogSoftKG`` with the SVGP held fixed
    for ``"kg"``, over the candidates and the free points ``x'_i``). Then
    block-coordinate ascent on the EULBO: w-steps (Adam, ``lr_w``, minibatch
    ELBO plus the expected log utility, over the blocks of ``w`` that
    ``options.joint_parameters`` selects: all of it by default, as in
    Algorithm 1) alternating with x-steps (Adam,
    ``lr_x``, the expected log utility), both clipped at ``grad_clip``, ``x``
    projected onto ``bounds`` after every step, stopping by the same rule as
    ``fit_elbo`` applied to the EULBO (the ELBO part on the check set for
    ``"steps"``, on all data for ``"epochs"``); with
    ``options.joint_optimizer="lbfgs"`` (or ``"auto"`` and ``n <=
    options.lbfgs_max_n``) the joint phase is instead full-batch L-BFGS-B on
    the full-data EULBO (the candidates on the box, the selected ``w``
    unconstrained). The model is left at the best
    state seen at the end of a round (the warm start included). A non-finite
    loss restores the last finite state, falls back to the warm-start
    candidates and warns. Settings come from ``model.options``
    (``EULBOOptions``), ``model.alternation`` and ``model.utility_weight``;
    ``model.last_optimization`` records the trace.

    Example:
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> candidates, value = optimize_eulbo(model, bounds, q=1, utility="ei")

    Args:
        model: An ``EULBOModel``; fitted in place.
        bounds: ``2 x d`` box (e.g. a TuRBO trust region).
        q: Number of candidates.
        utility: ``"ei"`` (soft improvement) or ``"kg"`` (one-shot soft
            knowledge gradient, ``options.num_fantasies`` free points).
        seed: Seed of the minibatches and base samples.

    Returns:
        ``(candidates, value)``: a ``q x d`` tensor inside ``bounds`` and the
        final EULBO (its ELBO part estimated on the check set, which is all
        data when ``n <= options.check_size``, for ``"epochs"`` and for the
        L-BFGS joint phase).
    """
    options = model.options
    d = model.train_X_full.shape[-1]
    check_bounds("bounds", bounds, d)
    check_positive_int("q", q)
    if utility not in UTILITIES:
        raise ValueError(f"unknown utility {utility!r}; choose from {UTILITIES}")
    bounds = bounds.to(model.train_X_full)
    gen = torch.Generator().manual_seed(seed)
    base_samples = None
    if q > 1 or utility == "kg":
        n_samples = options.num_fantasies if utility == "kg" else options.num_mc_samples
        base_samples = torch.randn(n_samples, q, generator=gen, dtype=bounds.dtype).to(
            bounds.device
        )

    model.fit_elbo(seed=seed)
    # For "kg", x holds the q candidates followed by the S free points x'_i.
    x0 = _warm_start(model, bounds, q, seed, utility, base_samples)
    n = model.train_X_full.shape[-2]
    if options.joint_optimizer == "lbfgs":
        return _optimize_eulbo_lbfgs(model, x0, bounds, q, utility, base_samples)
    x = x0.clone().requires_grad_(True)
    w_params = joint_parameters(model)
    opt_w = torch.optim.Adam(w_params, lr=options.lr_w)
    opt_x = torch.optim.Adam([x], lr=options.lr_x)
    epochs = options.convergence == "epochs"
    check = None if epochs else _check_set(model, gen)

    def criterion(X: Tensor) -> float:
        with torch.no_grad():
            if check is None:
                return model.eulbo(X, base_samples, utility).item()
            model.train()
            elbo = _check_elbo(model, check)
            util = model.expected_log_utility(X.unsqueeze(0), base_samples, utility)
            return (elbo + model.utility_weight * util.squeeze(0)).item()

    warm_value = criterion(x0)
    warm_utility = _utility_value(model, x0, base_samples, utility)
    # The returned state is the best EULBO seen at a round's end, starting
    # from the warm start: minibatch Adam is not monotone.
    best_state = copy.deepcopy(model.state_dict())
    best_x, best_value = x0.clone(), warm_value
    rule = _StoppingRule(options.patience, options.tol)
    rule.update(model._per_datum(warm_value))
    diverged = False
    trace = [warm_value]
    steps = 0

    def x_step() -> bool:
        opt_x.zero_grad()
        loss_x = -model.expected_log_utility(
            x.unsqueeze(0), base_samples, utility
        ).sum()
        if not torch.isfinite(loss_x):
            return False
        loss_x.backward()
        torch.nn.utils.clip_grad_norm_([x], options.grad_clip)
        opt_x.step()
        with torch.no_grad():
            x.copy_(torch.maximum(torch.minimum(x, bounds[1]), bounds[0]))
        return True

    def utility_term() -> Tensor:
        util = model.expected_log_utility(
            x.detach().unsqueeze(0), base_samples, utility
        )
        return model.utility_weight * util.sum()

    stream = _minibatch_stream(model, gen)
    steps_per_round = (
        math.ceil(n / options.batch_size) if epochs else options.check_every
    )
    max_rounds = (
        options.max_epochs
        if epochs
        else math.ceil(options.max_steps / options.check_every)
    )
    model.train()
    for _ in range(max_rounds):
        batches = (
            _minibatches(model, gen)
            if epochs
            else [next(stream) for _ in range(steps_per_round)]
        )
        for idx in batches:
            if _w_step(model, opt_w, w_params, idx, extra=utility_term) is None:
                diverged = True
                break
            steps += 1
            if model.alternation == "step" and not x_step():
                diverged = True
                break
        if not diverged and model.alternation == "epoch" and not x_step():
            diverged = True
        if diverged:
            break
        value = criterion(x.detach())
        trace.append(value)
        if not math.isfinite(value) or not bool(torch.isfinite(x).all()):
            diverged = True
            break
        if value > best_value:
            best_state = copy.deepcopy(model.state_dict())
            best_x, best_value = x.detach().clone(), value
        if rule.update(model._per_datum(value)):
            break
    model.load_state_dict(best_state)
    candidates = best_x
    if diverged:
        # best_state is finite by construction; the candidates fall back to
        # the warm start, whose EULBO is known to be finite.
        candidates = x0
        warnings.warn(
            "The EULBO became non-finite during optimize_eulbo; restored the "
            "best finite model state and returned the warm-start candidates.",
            OptimizationWarning,
            stacklevel=3,
        )
    model.eval()
    value = criterion(candidates)
    model.eval()
    return _finish(
        model,
        x0,
        candidates,
        value,
        q,
        utility,
        base_samples,
        bounds,
        warm_value=warm_value,
        warm_utility=warm_utility,
        trace=trace,
        steps=steps,
        diverged=diverged,
        optimizer="adam",
    )


def _optimize_eulbo_lbfgs(
    model: EULBOModel,
    x0: Tensor,
    bounds: Tensor,
    q: int,
    utility: str,
    base_samples: Tensor | None,
) -> tuple[Tensor, Tensor]:
    r"""The joint phase by L-BFGS-B on the deterministic EULBO over ``(x, w)``.

    With the quadrature points or base samples fixed, the EULBO of ``eulbo`` is
    a deterministic function of the candidates and ``w``, so L-BFGS-B, which
    only accepts steps that increase it, can maximize it from the warm start
    without ever ending below it. The candidates are optimized on the unit
    cube of ``bounds``, the selected blocks of ``w`` unconstrained (their
    constraints are GPyTorch transforms).

    The budget is ``joint_iterations(options, n)``: ``options.joint_max_iter``
    iterations while ``n <= options.lbfgs_max_n``, and proportionally fewer
    above, so that an iteration's ``O(n m^2)`` cost times their number stays
    bounded in ``n``. The objective is always the full-data EULBO, so the
    returned state is never below the warm start, whatever the budget. A
    failure (a singular matrix at a trial point, a non-finite value) restores
    the warm start and warns.
    """
    options = model.options
    max_iter = joint_iterations(options, model.train_X_full.shape[-2])
    lower, span = bounds[0], (bounds[1] - bounds[0]).clamp_min(1e-12)
    unit = ((x0 - lower) / span).clamp(0.0, 1.0).clone().requires_grad_(True)
    w_params = joint_parameters(model)
    tensors = {"x": unit} | {f"w{i}": p for i, p in enumerate(w_params)}
    start_state = copy.deepcopy(model.state_dict())
    w_start = [p.detach().clone() for p in w_params]
    model.train()

    def full_value(X: Tensor) -> float:
        with torch.no_grad():
            return eulbo(model, X, base_samples, utility).item()

    def closure() -> tuple[Tensor, list[Tensor | None]]:
        for t in tensors.values():
            t.grad = None
        loss = -eulbo(model, lower + span * unit, base_samples, utility)
        loss.backward()
        return loss.detach(), [t.grad for t in tensors.values()]

    warm_value = full_value(x0)
    warm_utility = _utility_value(model, x0, base_samples, utility)
    grad_share = _utility_gradient_share(model, w_params, x0, base_samples, utility)
    failed, candidates, steps = None, x0, 0
    try:
        result = scipy_minimize(
            closure,
            tensors,
            bounds={"x": (0.0, 1.0)},
            options={"maxiter": max_iter},
        )
        steps = result.step
        candidates = (lower + span * unit).detach().clone()
        value = full_value(candidates)
    # A trial point with a singular K_ZZ or A, or one where it has NaNs (e.g. an
    # overflowing lengthscale or outputscale of a kernel without priors).
    except (NotPSDError, NanError) as e:
        failed, steps, value = str(e), 0, math.nan
    diverged = not math.isfinite(value) or not bool(torch.isfinite(candidates).all())
    if failed is not None or diverged:
        diverged = True
        warnings.warn(
            "optimize_eulbo (L-BFGS joint phase) reached a non-finite EULBO or a "
            f"singular matrix ({failed or 'non-finite value'}); restored the "
            "warm-start state and candidates.",
            OptimizationWarning,
            stacklevel=3,
        )
    if diverged or value < warm_value:
        model.load_state_dict(start_state)
        candidates, value = x0, warm_value
    w_moved = math.sqrt(
        sum(
            float((p.detach() - p0).pow(2).sum())
            for p, p0 in zip(w_params, w_start, strict=True)
        )
    )
    model.eval()
    return _finish(
        model,
        x0,
        candidates,
        value,
        q,
        utility,
        base_samples,
        bounds,
        warm_value=warm_value,
        warm_utility=warm_utility,
        trace=[warm_value, value],
        steps=steps,
        diverged=diverged,
        optimizer="lbfgs",
        w_moved=w_moved,
        utility_gradient_share=grad_share,
        max_iter=max_iter,
    )


def joint_iterations(options, n: int) -> int:
    r"""The L-BFGS-B iteration budget of the joint EULBO phase at ``n`` points.

    ``options.joint_max_iter`` while ``n <= options.lbfgs_max_n``; above,
    ``joint_max_iter * lbfgs_max_n / n`` (at least ``_MIN_JOINT_ITERATIONS``),
    which keeps the phase's cost, ``O(iterations * n * m^2)``, bounded in ``n``.

    Example:
        >>> joint_iterations(EULBOOptions(), 10_000)
        20

    Args:
        options: An ``EULBOOptions``.
        n: Number of training points.

    Returns:
        The iteration budget.
    """
    if n <= options.lbfgs_max_n:
        return options.joint_max_iter
    scaled = options.joint_max_iter * options.lbfgs_max_n // n
    return max(_MIN_JOINT_ITERATIONS, scaled)


#: The smallest iteration budget of the joint phase at large ``n``.
_MIN_JOINT_ITERATIONS = 5


def _utility_gradient_share(
    model: EULBOModel,
    w_params: list[Tensor],
    X: Tensor,
    base_samples: Tensor | None,
    utility: str,
) -> float:
    r"""``|g_u| / (|g_u| + |g_elbo|)``: the utility term's share of the EULBO's
    gradient with respect to the selected ``w`` at ``X`` (a diagnostic)."""
    model.train()
    elbo = model._elbo(model.train_X_full, model.train_Y_std)
    g_elbo = torch.autograd.grad(elbo, w_params, allow_unused=True)
    util = (
        model.utility_weight
        * model.expected_log_utility(X.unsqueeze(0), base_samples, utility).sum()
    )
    g_util = torch.autograd.grad(util, w_params, allow_unused=True)

    def norm(grads) -> float:
        return math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))

    total = norm(g_util) + norm(g_elbo)
    return norm(g_util) / total if total > 0 else 0.0


def _finish(
    model: EULBOModel,
    x0: Tensor,
    candidates: Tensor,
    value: float,
    q: int,
    utility: str,
    base_samples: Tensor | None,
    bounds: Tensor,
    **record,
) -> tuple[Tensor, Tensor]:
    r"""Record ``model.last_optimization`` and return ``(candidates[:q], value)``."""
    model.last_optimization = {
        "fantasy_points": candidates[q:] if utility == "kg" else None,
        "warm_start_candidates": x0,
        "warm_start_value": record.pop("warm_value"),
        "warm_start_utility": record.pop("warm_utility"),
        "utility": _utility_value(model, candidates, base_samples, utility),
        "moved": (candidates - x0).norm(dim=-1).max().item(),
        "base_samples": base_samples,
        **record,
    }
    return candidates[:q], torch.tensor(value, dtype=bounds.dtype, device=bounds.device)


def _utility_value(
    model: EULBOModel, X: Tensor, base_samples: Tensor | None, utility: str
) -> float:
    with torch.no_grad():
        return model.expected_log_utility(X.unsqueeze(0), base_samples, utility).item()


class _OneShotSoftKG(qLogSoftKG):
    r"""``qLogSoftKG`` on an ``EULBOModel``'s own scale, for the EULBO warm start.

    The EULBO's soft-KG term is defined on the model's transformed (standardized)
    outcomes with ``c+ = y+`` and temperature 1 (``EULBOModel.fantasy_means``,
    on the latent SVGP); this keeps the warm start on exactly that objective
    for any outcome transform. Inputs are ``batch x (q + S) x d``: candidates,
    then the free points.
    """

    def __init__(self, model: EULBOModel, base_samples: Tensor) -> None:
        super().__init__(model=model, best_f=model._best_f(), base_samples=base_samples)

    def fantasy_means(self, X: Tensor) -> Tensor:
        return self.model.fantasy_means(X, self.base_samples)


def _warm_start(
    model: EULBOModel,
    bounds: Tensor,
    q: int,
    seed: int,
    utility: str = "ei",
    base_samples: Tensor | None = None,
) -> Tensor:
    r"""Algorithm 1, line 3: the conventional acquisition under the ELBO fit.

    ``"ei"``: BoTorch's ``qLogExpectedImprovement``. ``"kg"``: the one-shot
    soft-KG itself with the SVGP fixed (``_OneShotSoftKG``), optimized over the
    ``q`` candidates and the ``S`` free points jointly by ``optimize_acqf``, like
    BoTorch's one-shot ``qKnowledgeGradient``; all ``q + S`` points are
    returned.
    """
    if utility == "kg":
        acqf = _OneShotSoftKG(model, base_samples)
        n_points = acqf.get_augmented_q_batch_size(q)
    else:
        best_f = model.outcome_transform.untransform(model._best_f().reshape(1, 1))
        acqf = qLogExpectedImprovement(model, best_f=best_f[0].squeeze())
        n_points = q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        ignore_optimize_acqf_retry_warnings()
        torch.manual_seed(seed)
        candidates, _ = optimize_acqf(
            acqf,
            bounds=bounds,
            q=n_points,
            num_restarts=model.options.num_restarts,
            raw_samples=model.options.raw_samples,
            return_full_tree=True,
        )
    return candidates.detach()
