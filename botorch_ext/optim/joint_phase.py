r"""The joint phase of the EULBO: the objective and its two optimizers.

The EULBO of [Maus2024eulbo]_ over the candidates ``x`` and the SVGP parameters
``w``,

    L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)

(``eulbo``), is maximized from a warm start over ``x`` and the blocks of ``w``
that ``joint_parameters`` selects, by L-BFGS-B on its deterministic full-data
value (``lbfgs_joint_phase``, the default) or by Algorithm 1's alternating
minibatch Adam steps (``adam_joint_phase``). ``botorch_ext.optim.optimize_eulbo``
fits, warm-starts and calls one of them.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim.core import scipy_minimize
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from botorch_ext.models.eulbo_options import (
    joint_iterations,
    joint_parameter_blocks,
)
from botorch_ext.optim.fit import (
    StoppingRule,
    check_elbo,
    check_set,
    minibatch_stream,
    minibatches,
    w_step,
)

if TYPE_CHECKING:
    from botorch_ext.models.eulbo import EULBOModel


def joint_parameters(model: EULBOModel) -> list[Tensor]:
    r"""The parameters the joint EULBO phase updates (``model.options``).

    The blocks come from ``model.parameter_blocks()``, selected by module:
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
    blocks = joint_parameter_blocks(model.options.joint.parameters)
    by_block = model.parameter_blocks()
    selected = {id(p) for block in blocks for p in by_block[block]}
    # In ``parameters()`` order, whatever the selection.
    return [p for p in model.parameters() if id(p) in selected]


#: A joint phase's result replaces its warm start only if its EULBO is higher by more
#: than this many units of the dtype's eps (relative to ``max(|warm|, 1)``): the
#: EULBO is a sum over the data, and evaluating it again (another mode, another
#: order of the reductions) moves it by a few units of eps, so a smaller gain is
#: not a measured one.
IMPROVEMENT_EPS = 16


def exceeds(value: float, reference: float, dtype: torch.dtype) -> bool:
    r"""Whether ``value`` is above ``reference`` by more than the dtype resolves.

    ``value > reference + IMPROVEMENT_EPS * eps(dtype) * max(|reference|, 1)``; the
    rule by which the default joint phase keeps a result over its warm start.

    Example:
        >>> exceeds(1.0 + 1e-9, 1.0, torch.float32)
        False

    Args:
        value: The EULBO of the candidate result.
        reference: The EULBO it must beat (the warm start's, or the best so far).
        dtype: The precision both were computed in.

    Returns:
        True if the gain is larger than the tolerance.
    """
    eps = torch.finfo(dtype).eps
    return value > reference + IMPROVEMENT_EPS * eps * max(abs(reference), 1.0)


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
        >>> value = eulbo(model, torch.rand(1, 2))

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
        value = model.elbo(model.train_X_full, model.train_Y_std)
    finally:
        model.train(was_training)
    return value + model.utility_weight * model.expected_log_utility(
        X.unsqueeze(0), base_samples, utility
    ).squeeze(0)


class _AdamJointPhase:
    r"""The pieces of Algorithm 1's alternating minibatch Adam phase."""

    def __init__(
        self,
        model: EULBOModel,
        x0: Tensor,
        bounds: Tensor,
        utility: str,
        base_samples: Tensor | None,
        gen: torch.Generator,
    ) -> None:
        r"""Set up the optimizers and the fixed check set (drawn from ``gen``)."""
        options = model.options
        self.model, self.bounds, self.gen = model, bounds, gen
        self.utility, self.base_samples = utility, base_samples
        self.x = x0.clone().requires_grad_(True)
        self.w_params = joint_parameters(model)
        self.opt_w = torch.optim.Adam(self.w_params, lr=options.adam.lr_w)
        self.opt_x = torch.optim.Adam([self.x], lr=options.adam.lr_x)
        self.epochs = options.stopping.convergence == "epochs"
        self.check = None if self.epochs else check_set(model, gen)
        n = model.train_X_full.shape[-2]
        self.steps_per_round = (
            math.ceil(n / options.adam.batch_size)
            if self.epochs
            else options.stopping.check_every
        )
        self.max_rounds = (
            options.stopping.max_epochs
            if self.epochs
            else math.ceil(options.stopping.max_steps / options.stopping.check_every)
        )

    def criterion(self, X: Tensor) -> float:
        r"""The EULBO at ``X``, its ELBO part on the check set (or all data)."""
        model = self.model
        with torch.no_grad():
            if self.check is None:
                return eulbo(model, X, self.base_samples, self.utility).item()
            model.train()
            elbo = check_elbo(model, self.check)
            util = model.expected_log_utility(
                X.unsqueeze(0), self.base_samples, self.utility
            )
            return (elbo + model.utility_weight * util.squeeze(0)).item()

    def x_step(self) -> bool:
        r"""One Adam step of the candidates; False if the loss is not finite."""
        options = self.model.options
        self.opt_x.zero_grad()
        loss_x = -self.model.expected_log_utility(
            self.x.unsqueeze(0), self.base_samples, self.utility
        ).sum()
        if not torch.isfinite(loss_x):
            return False
        loss_x.backward()
        torch.nn.utils.clip_grad_norm_([self.x], options.adam.grad_clip)
        self.opt_x.step()
        with torch.no_grad():
            x = torch.minimum(self.x, self.bounds[1])
            self.x.copy_(torch.maximum(x, self.bounds[0]))
        return True

    def utility_term(self) -> Tensor:
        r"""The weighted utility at the current candidates, as a function of ``w``."""
        util = self.model.expected_log_utility(
            self.x.detach().unsqueeze(0), self.base_samples, self.utility
        )
        return self.model.utility_weight * util.sum()

    def batches(self, stream: Iterator[Tensor]) -> list[Tensor]:
        r"""The minibatches of one round: an epoch, or ``check_every`` steps."""
        if self.epochs:
            return minibatches(self.model, self.gen)
        return [next(stream) for _ in range(self.steps_per_round)]

    def run_round(self, batches: list[Tensor]) -> tuple[int, bool]:
        r"""One round of w- and x-steps: ``(w-steps taken, diverged)``."""
        model, steps = self.model, 0
        for idx in batches:
            if w_step(model, self.opt_w, self.w_params, idx, self.utility_term) is None:
                return steps, True
            steps += 1
            if model.alternation == "step" and not self.x_step():
                return steps, True
        if model.alternation == "epoch" and not self.x_step():
            return steps, True
        return steps, False


def adam_joint_phase(
    model: EULBOModel,
    x0: Tensor,
    bounds: Tensor,
    q: int,
    utility: str,
    base_samples: Tensor | None,
    gen: torch.Generator,
) -> tuple[Tensor, Tensor]:
    r"""The joint phase by Algorithm 1's alternating minibatch Adam steps.

    w-steps (Adam, ``lr_w``, minibatch ELBO plus the weighted expected log
    utility) alternate (``model.alternation``) with x-steps (Adam, ``lr_x``,
    the expected log utility), both clipped at ``grad_clip``, ``x`` projected
    onto ``bounds``; stopped by ``fit_elbo``'s rule applied to the EULBO. The
    model is left at the best state seen at the end of a round, the warm start
    included; a non-finite EULBO returns the warm-start candidates and warns.

    Example:
        >>> cand, value = adam_joint_phase(model, x0, bounds, 1, "ei", None, gen)

    Args:
        model: A fitted ``EULBOModel``, changed in place.
        x0: The warm-start candidates (``(q + S) x d`` for ``"kg"``).
        bounds: ``2 x d`` box.
        q: Number of candidates.
        utility: ``"ei"`` or ``"kg"``.
        base_samples: Fixed standard normal draws, or None (``q = 1``, ``"ei"``).
        gen: The generator of the check set and the minibatches.

    Returns:
        ``(candidates[:q], value)`` as ``optimize_eulbo`` returns them.
    """
    phase = _AdamJointPhase(model, x0, bounds, utility, base_samples, gen)
    warm_value = phase.criterion(x0)
    warm_utility = utility_value(model, x0, base_samples, utility)
    # The returned state is the best EULBO seen at a round's end, starting
    # from the warm start: minibatch Adam is not monotone.
    best_state = copy.deepcopy(model.state_dict())
    best_x, best_value = x0.clone(), warm_value
    rule = StoppingRule(model.options.stopping.patience, model.options.stopping.tol)
    rule.update(model.per_datum(warm_value))
    diverged, trace, steps = False, [warm_value], 0
    stream = minibatch_stream(model, gen)
    model.train()
    for _ in range(phase.max_rounds):
        taken, diverged = phase.run_round(phase.batches(stream))
        steps += taken
        if diverged:
            break
        value = phase.criterion(phase.x.detach())
        trace.append(value)
        if not math.isfinite(value) or not bool(torch.isfinite(phase.x).all()):
            diverged = True
            break
        if exceeds(value, best_value, x0.dtype):
            best_state = copy.deepcopy(model.state_dict())
            best_x, best_value = phase.x.detach().clone(), value
        if rule.update(model.per_datum(value)):
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
    value = phase.criterion(candidates)
    return finish_joint_phase(
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


def lbfgs_joint_phase(
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

    The budget is ``joint_iterations(options, n)``: ``options.joint.max_iter``
    iterations while ``n <= options.lbfgs_max_n``, and proportionally fewer
    above, so that an iteration's ``O(n m^2)`` cost times their number stays
    bounded in ``n``. The objective is always the full-data EULBO, and the result
    replaces the warm start only if it ``exceeds`` it by more than the dtype
    resolves, so the returned state is never below the warm start, whatever the
    budget (``last_optimization["rolled_back"]`` says which was returned). A
    failure (a singular matrix at a trial point, a non-finite value) restores
    the warm start and warns.

    Example:
        >>> cand, value = lbfgs_joint_phase(model, x0, bounds, 1, "ei", None)

    Args:
        model: A fitted ``EULBOModel``, changed in place.
        x0: The warm-start candidates (``(q + S) x d`` for ``"kg"``).
        bounds: ``2 x d`` box.
        q: Number of candidates.
        utility: ``"ei"`` or ``"kg"``.
        base_samples: Fixed standard normal draws, or None (``q = 1``, ``"ei"``).

    Returns:
        ``(candidates[:q], value)`` as ``optimize_eulbo`` returns them.
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
    warm_utility = utility_value(model, x0, base_samples, utility)
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
    rolled_back = diverged or not exceeds(value, warm_value, x0.dtype)
    if rolled_back:
        model.load_state_dict(start_state)
        candidates, value = x0, warm_value
    w_moved = math.sqrt(
        sum(
            float((p.detach() - p0).pow(2).sum())
            for p, p0 in zip(w_params, w_start, strict=True)
        )
    )
    model.eval()
    return finish_joint_phase(
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
        rolled_back=rolled_back,
        w_moved=w_moved,
        utility_gradient_share=grad_share,
        max_iter=max_iter,
    )


def _utility_gradient_share(
    model: EULBOModel,
    w_params: list[Tensor],
    X: Tensor,
    base_samples: Tensor | None,
    utility: str,
) -> float:
    r"""``|g_u| / (|g_u| + |g_elbo|)``, a diagnostic of the joint phase.

    The utility term's share of the EULBO's gradient with respect to the
    selected ``w`` at ``X``.
    """
    model.train()
    elbo = model.elbo(model.train_X_full, model.train_Y_std)
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


def finish_joint_phase(
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
        "utility": utility_value(model, candidates, base_samples, utility),
        "moved": (candidates - x0).norm(dim=-1).max().item(),
        "base_samples": base_samples,
        **record,
    }
    return candidates[:q], torch.tensor(value, dtype=bounds.dtype, device=bounds.device)


def utility_value(
    model: EULBOModel, X: Tensor, base_samples: Tensor | None, utility: str
) -> float:
    r"""The expected log utility of ``X`` under the model, without gradient.

    Example:
        >>> utility_value(model, torch.rand(1, 2), None, "ei")
    """
    with torch.no_grad():
        return model.expected_log_utility(X.unsqueeze(0), base_samples, utility).item()
