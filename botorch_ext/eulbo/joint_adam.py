r"""The joint EULBO phase by Algorithm 1's alternating minibatch Adam steps.

``JointOptions(optimizer="adam")``: w-steps (Adam on the minibatch ELBO plus the
weighted expected log utility) alternate with x-steps (Adam on the expected log
utility), per minibatch or per round (``JointOptions.alternation``), stopped by
the ELBO fit's rule applied to the EULBO; the model is left at the best state
seen at the end of a round (``botorch_ext.eulbo.joint.exceeds``).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import torch
from botorch.exceptions.warnings import OptimizationWarning
from torch import Tensor

from botorch_ext.eulbo.adam import (
    StoppingRule,
    check_elbo,
    check_set,
    minibatch_stream,
    minibatches,
    w_step,
)
from botorch_ext.eulbo.joint import (
    JointProblem,
    exceeds,
    finish_joint_phase,
    joint_parameters,
)
from botorch_ext.eulbo.snapshot import Snapshot


class _AdamJointPhase:
    r"""The pieces of Algorithm 1's alternating minibatch Adam phase."""

    def __init__(self, problem: JointProblem, x0: Tensor, gen: torch.Generator) -> None:
        r"""Set up the optimizers and the fixed check set (drawn from ``gen``)."""
        options, model = problem.options, problem.model
        self.problem, self.options = problem, options
        self.model, self.bounds, self.gen = model, problem.bounds, gen
        self.x = x0.clone().requires_grad_(True)
        self.w_params = joint_parameters(model, options)
        self.opt_w = torch.optim.Adam(self.w_params, lr=options.adam.lr_w)
        self.opt_x = torch.optim.Adam([self.x], lr=options.adam.lr_x)
        self.epochs = options.stopping.convergence == "epochs"
        self.check = (
            None if self.epochs else check_set(model, options.stopping.check_size, gen)
        )
        self.max_rounds = (
            options.stopping.max_epochs
            if self.epochs
            else math.ceil(options.stopping.max_steps / options.stopping.check_every)
        )

    def criterion(self, X: Tensor) -> float:
        r"""The EULBO at ``X``, its ELBO part on the check set (or all data)."""
        model, problem = self.model, self.problem
        with torch.no_grad():
            if self.check is None:
                return problem.eulbo(X).item()
            model.train()
            elbo = check_elbo(model, problem.objective, self.check)
            util = problem.expected_log_utility(X.unsqueeze(0))
            return (elbo + problem.objective.utility_weight * util.squeeze(0)).item()

    def x_step(self) -> bool:
        r"""One Adam step of the candidates; False if the loss is not finite."""
        options = self.options
        self.opt_x.zero_grad()
        loss_x = -self.problem.expected_log_utility(self.x.unsqueeze(0)).sum()
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
        util = self.problem.expected_log_utility(self.x.detach().unsqueeze(0))
        return self.problem.objective.utility_weight * util.sum()

    def batches(self, stream: Iterator[Tensor]) -> list[Tensor]:
        r"""The minibatches of one round: an epoch, or ``check_every`` steps."""
        if self.epochs:
            return minibatches(self.model, self.options.adam.batch_size, self.gen)
        return [next(stream) for _ in range(self.options.stopping.check_every)]

    def run_round(self, batches: list[Tensor]) -> tuple[int, bool]:
        r"""One round of w- and x-steps: ``(w-steps taken, diverged)``."""
        model, steps = self.model, 0
        alternation = self.options.joint.alternation
        objective, clip = self.problem.objective, self.options.adam.grad_clip
        for idx in batches:
            taken = w_step(
                model,
                objective,
                self.opt_w,
                self.w_params,
                idx,
                clip,
                self.utility_term,
            )
            if taken is None:
                return steps, True
            steps += 1
            if alternation == "step" and not self.x_step():
                return steps, True
        if alternation == "epoch" and not self.x_step():
            return steps, True
        return steps, False


def adam_joint_phase(
    problem: JointProblem, x0: Tensor, gen: torch.Generator
) -> tuple[Tensor, Tensor]:
    r"""The joint phase by Algorithm 1's alternating minibatch Adam steps.

    w-steps (Adam, ``lr_w``, minibatch ELBO plus the weighted expected log
    utility) alternate (``options.joint.alternation``) with x-steps (Adam, ``lr_x``,
    the expected log utility), both clipped at ``grad_clip``, ``x`` projected
    onto ``bounds``; stopped by ``fit_elbo``'s rule applied to the EULBO. The
    model is left at the best state seen at the end of a round, the warm start
    included; a non-finite EULBO restores the warm start (state and candidates,
    as the other joint phases do) and warns.

    Example:
        >>> cand, value = adam_joint_phase(problem, x0, gen)

    Args:
        problem: The ``JointProblem`` (its model is changed in place).
        x0: The warm-start candidates (``(q + S) x d`` for ``"kg"``).
        gen: The generator of the check set and the minibatches.

    Returns:
        ``(candidates[:q], value)`` as ``optimize_eulbo`` returns them.
    """
    model, stopping = problem.model, problem.options.stopping
    phase = _AdamJointPhase(problem, x0, gen)
    warm_value = phase.criterion(x0)
    warm_utility = problem.utility_value(x0)
    # The returned state is the best EULBO seen at a round's end, starting
    # from the warm start: minibatch Adam is not monotone.
    warm = Snapshot(model)
    best = Snapshot(model, warm_value)
    best_x = x0.clone()
    rule = StoppingRule(stopping.patience, stopping.tol)
    rule.update(problem.objective.per_datum(model, warm_value))
    diverged, trace, steps = False, [warm_value], 0
    stream = minibatch_stream(model, problem.options.adam.batch_size, gen)
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
        if best.offer(value, lambda v, b: exceeds(v, b, x0.dtype)):
            best_x = phase.x.detach().clone()
        if rule.update(problem.objective.per_datum(model, value)):
            break
    candidates = best_x
    if diverged:
        # The warm start, state and candidates together: its EULBO is known to
        # be finite, and a round's state never pairs with another round's x.
        warm.restore()
        candidates = x0
        warnings.warn(
            "The EULBO became non-finite during optimize_eulbo; restored the "
            "warm-start model state and returned the warm-start candidates.",
            OptimizationWarning,
            stacklevel=3,
        )
    else:
        best.restore()
    model.eval()
    value = phase.criterion(candidates)
    return finish_joint_phase(
        problem,
        x0,
        candidates,
        value,
        warm_value=warm_value,
        warm_utility=warm_utility,
        trace=trace,
        steps=steps,
        diverged=diverged,
        optimizer="adam",
    )
