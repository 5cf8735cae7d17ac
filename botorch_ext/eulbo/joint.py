r"""The joint phase of the EULBO: its problem, its records and its L-BFGS-B optimizer.

The EULBO of [Maus2024eulbo]_ over the candidates ``x`` and the SVGP parameters
``w``,

    L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)

(``botorch_ext.eulbo.objective.EULBO``), is maximized from a warm start over
``x`` and the blocks of ``w`` that ``joint_parameters`` selects. A
``JointProblem`` holds what every joint phase needs (the model, the objective,
the options, the box, ``q``, the utility and its fixed base samples). The
phases: L-BFGS-B on the deterministic full-data EULBO (``lbfgs_joint_phase``,
the default, here), Algorithm 1's alternating minibatch Adam steps
(``botorch_ext.eulbo.joint_adam``) and the authors' epoch alternation
(``botorch_ext.eulbo.joint_epochs``). ``botorch_ext.eulbo.optimize_eulbo``
fits, warm-starts and calls one of them.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim.core import scipy_minimize
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.objective import EULBO
from botorch_ext.eulbo.options import (
    EULBOOptions,
    joint_iterations,
    joint_parameter_blocks,
)
from botorch_ext.eulbo.snapshot import Snapshot


@dataclass(frozen=True)
class JointProblem:
    r"""One joint EULBO phase's problem: what every joint optimizer needs.

    Example:
        >>> problem = JointProblem(model, EULBO(), EULBOOptions(), bounds, 1, "ei")
        >>> value = problem.eulbo(torch.rand(1, 2))

    Args:
        model: A fitted ``EULBOModel``, changed in place by the phase.
        objective: The ``EULBO``.
        options: The optimizer settings.
        bounds: ``2 x d`` box.
        q: Number of candidates.
        utility: ``"ei"`` or ``"kg"``.
        base_samples: Fixed standard normal draws, or None (``q = 1``, ``"ei"``).
    """

    model: EULBOModel
    objective: EULBO
    options: EULBOOptions
    bounds: Tensor
    q: int
    utility: str
    base_samples: Tensor | None = None

    def eulbo(self, X: Tensor) -> Tensor:
        r"""The full-data EULBO at the ``q x d`` (or ``(q + S) x d``) points ``X``."""
        return self.objective(
            self.model,
            X,
            self.base_samples,
            self.utility,
            self.options.utility.num_quadrature_points,
        )

    def expected_log_utility(self, X: Tensor) -> Tensor:
        r"""The (unweighted) expected log utility at the ``b x q x d`` points ``X``."""
        return self.objective.expected_log_utility(
            self.model,
            X,
            self.base_samples,
            self.utility,
            self.options.utility.num_quadrature_points,
        )

    def utility_value(self, X: Tensor) -> float:
        r"""The expected log utility of the ``q x d`` points ``X``, without gradient."""
        with torch.no_grad():
            return self.expected_log_utility(X.unsqueeze(0)).item()


def joint_parameters(model: EULBOModel, options: EULBOOptions) -> list[Tensor]:
    r"""The parameters the joint EULBO phase updates (``options.joint.parameters``).

    The blocks come from ``model.parameter_blocks()``, selected by module:
    ``"variational"`` is ``q(u)`` (mean and Cholesky factor),
    ``"inducing_points"`` is ``Z``, ``"hyperparameters"`` is everything else
    that is trained (constant mean, kernel, likelihood). Parameters outside the
    selection keep the values of the ELBO fit that starts ``optimize_eulbo``,
    as in the refinement ablation of [Maus2024eulbo]_ (Figure 3).

    Example:
        >>> params = joint_parameters(model, EULBOOptions())  # all of w

    Args:
        model: An ``EULBOModel``.
        options: The settings whose ``joint.parameters`` select the blocks.

    Returns:
        The selected trainable parameters.
    """
    blocks = joint_parameter_blocks(options.joint.parameters)
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


def lbfgs_joint_phase(problem: JointProblem, x0: Tensor) -> tuple[Tensor, Tensor]:
    r"""The joint phase by L-BFGS-B on the deterministic EULBO over ``(x, w)``.

    With the quadrature points or base samples fixed, the EULBO is
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
        >>> cand, value = lbfgs_joint_phase(problem, x0)

    Args:
        problem: The ``JointProblem`` (its model is changed in place).
        x0: The warm-start candidates (``(q + S) x d`` for ``"kg"``).

    Returns:
        ``(candidates[:q], value)`` as ``optimize_eulbo`` returns them.
    """
    model, bounds = problem.model, problem.bounds
    max_iter = joint_iterations(problem.options, model.train_X_full.shape[-2])
    lower, span = bounds[0], (bounds[1] - bounds[0]).clamp_min(1e-12)
    unit = ((x0 - lower) / span).clamp(0.0, 1.0).clone().requires_grad_(True)
    w_params = joint_parameters(model, problem.options)
    tensors = {"x": unit} | {f"w{i}": p for i, p in enumerate(w_params)}
    start = Snapshot(model)
    w_start = Snapshot(w_params)
    model.train()

    def full_value(X: Tensor) -> float:
        with torch.no_grad():
            return problem.eulbo(X).item()

    def closure() -> tuple[Tensor, list[Tensor | None]]:
        for t in tensors.values():
            t.grad = None
        loss = -problem.eulbo(lower + span * unit)
        loss.backward()
        return loss.detach(), [t.grad for t in tensors.values()]

    warm_value = full_value(x0)
    warm_utility = problem.utility_value(x0)
    grad_share = _utility_gradient_share(problem, w_params, x0)
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
        start.restore()
        candidates, value = x0, warm_value
    w_moved = w_start.distance()
    model.eval()
    return finish_joint_phase(
        problem,
        x0,
        candidates,
        value,
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
    problem: JointProblem, w_params: list[Tensor], X: Tensor
) -> float:
    r"""``|g_u| / (|g_u| + |g_elbo|)``, a diagnostic of the joint phase.

    The utility term's share of the EULBO's gradient with respect to the
    selected ``w`` at ``X``.
    """
    model, objective = problem.model, problem.objective
    model.train()
    elbo = objective.elbo(model, model.train_X_full, model.train_Y_std)
    g_elbo = torch.autograd.grad(elbo, w_params, allow_unused=True)
    util = objective.utility_weight * problem.expected_log_utility(X.unsqueeze(0)).sum()
    g_util = torch.autograd.grad(util, w_params, allow_unused=True)

    def norm(grads: tuple[Tensor | None, ...]) -> float:
        return math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))

    total = norm(g_util) + norm(g_elbo)
    return norm(g_util) / total if total > 0 else 0.0


def finish_joint_phase(
    problem: JointProblem,
    x0: Tensor,
    candidates: Tensor,
    value: float,
    **record: Any,
) -> tuple[Tensor, Tensor]:
    r"""Record ``model.last_optimization`` and return ``(candidates[:q], value)``.

    Example:
        >>> finish_joint_phase(problem, x0, x0, value, warm_value=value, ...)
    """
    q, bounds = problem.q, problem.bounds
    problem.model.last_optimization = {
        "fantasy_points": candidates[q:] if problem.utility == "kg" else None,
        "warm_start_candidates": x0,
        "warm_start_value": record.pop("warm_value"),
        "warm_start_utility": record.pop("warm_utility"),
        "utility": problem.utility_value(candidates),
        "moved": (candidates - x0).norm(dim=-1).max().item(),
        "base_samples": problem.base_samples,
        **record,
    }
    return candidates[:q], torch.tensor(value, dtype=bounds.dtype, device=bounds.device)
