r"""The joint EULBO phase as the authors' released code runs it (``"adam-epochs"``).

``JointOptions(optimizer="adam-epochs")``, part of ``EULBOOptions.authors()``: from
the warm start ``(x0, w0)``, whole epochs of minibatch Adam steps alternate between
``w`` (step ``adam.lr_w``) and the candidates ``x`` (step ``adam.lr_x``), starting
with ``w``. Every minibatch step computes the same loss,

    - ELBO_minibatch(w) - utility_weight * E_{q_w(f)} log u(x, f),

clips the gradient norms of ``w`` and of ``x`` at ``adam.grad_clip`` each, steps
one of the two, and projects ``x`` onto the box. An epoch's loss is the sum of its
minibatch losses; the phase stops at the ``stopping.patience``-th epoch whose loss
is not the lowest so far (counted in total) or after ``stopping.max_epochs + 1``
epochs, and returns the state it ends in: there is **no rollback** to the warm
start, unlike the package's default L-BFGS phase
(``botorch_ext.eulbo.joint``).

A non-finite loss or gradient restarts the phase from the warm start with both step
sizes divided by 10, ``joint.retries`` times at most; if every attempt fails, the
warm start is returned with a warning. The authors' code gets there through
PyTorch's anomaly detection, which raises on a NaN in the backward pass; checking
the loss and the leaf gradients after each backward pass triggers on the same
steps without anomaly detection's cost (an infinite gradient, which anomaly
detection lets through, makes the next step's loss NaN, so it triggers one step
later there), and if every attempt fails their code raises where this warns.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.exceptions.warnings import OptimizationWarning
from torch import Tensor

from botorch_ext.eulbo.adam import FailureCount, minibatches
from botorch_ext.eulbo.joint import (
    JointProblem,
    finish_joint_phase,
    joint_parameters,
)
from botorch_ext.eulbo.snapshot import Snapshot


def epoch_joint_phase(
    problem: JointProblem, x0: Tensor, gen: torch.Generator
) -> tuple[Tensor, Tensor]:
    r"""The ``"adam-epochs"`` joint phase (see the module docstring).

    Example:
        >>> options, objective = EULBOOptions.authors(), EULBO(elbo_scale="mean")
        >>> fit_elbo(model, options, objective)
        >>> x0 = warm_start(model, bounds, q=1, seed=0, options=options)
        >>> problem = JointProblem(model, objective, options, bounds, 1, "ei")
        >>> cand, value = epoch_joint_phase(problem, x0, gen)

    Args:
        problem: The ``JointProblem`` (its model is changed in place).
        x0: The warm-start candidates (``(q + S) x d`` for ``"kg"``).
        gen: The generator of the minibatch shuffles.

    Returns:
        ``(candidates[:q], value)``: the final candidates and the EULBO of the
        final state on all of the model's training data.
    """
    model, options = problem.model, problem.options
    warm_value = problem.eulbo(x0).item()
    warm_utility = problem.utility_value(x0)
    warm_noise = float(model.likelihood.noise.detach().reshape(-1)[0])
    start = Snapshot(model)
    lr_w, lr_x = options.adam.lr_w, options.adam.lr_x
    candidates, epochs, attempts = None, 0, 0
    while candidates is None and attempts <= options.joint.retries:
        attempts += 1
        candidates, epochs = _alternating_epochs(problem, x0, gen, lr_w, lr_x)
        if candidates is not None:
            break
        start.restore()
        lr_w, lr_x = lr_w / 10, lr_x / 10
    diverged = candidates is None
    if candidates is None:
        candidates = x0
        warnings.warn(
            f"optimize_eulbo (adam-epochs joint phase) met a non-finite gradient in "
            f"all {attempts} attempts; returned the warm-start state and candidates.",
            OptimizationWarning,
            stacklevel=3,
        )
    model.eval()
    value = problem.eulbo(candidates).item()
    return finish_joint_phase(
        problem,
        x0,
        candidates,
        value,
        warm_value=warm_value,
        warm_utility=warm_utility,
        trace=[warm_value, value],
        steps=epochs,
        diverged=diverged,
        optimizer="adam-epochs",
        rolled_back=diverged,
        attempts=attempts,
        warm_start_noise=warm_noise,
    )


def _alternating_epochs(
    problem: JointProblem, x0: Tensor, gen: torch.Generator, lr_w: float, lr_x: float
) -> tuple[Tensor | None, int]:
    r"""One attempt: ``(candidates, epochs)``, candidates None on a non-finite step."""
    model, options, bounds = problem.model, problem.options, problem.bounds
    objective = problem.objective
    x = x0.clone().requires_grad_(True)
    w_params = joint_parameters(model, options)
    opt_w = torch.optim.Adam(w_params, lr=lr_w)
    opt_x = torch.optim.Adam([x], lr=lr_x)
    rule = FailureCount(options.stopping.patience)
    X, Y = model.train_X_full, model.train_Y_std
    epochs, train_w = 0, True
    model.train()
    while True:
        total = 0.0
        for idx in minibatches(model, options.adam.batch_size, gen):
            opt_w.zero_grad()
            opt_x.zero_grad()
            util = problem.expected_log_utility(x.unsqueeze(0))
            elbo = objective.elbo(model, X[idx], Y[idx])
            loss = -(elbo + objective.utility_weight * util.sum())
            if not torch.isfinite(loss):
                return None, epochs
            loss.backward()
            grads = [p.grad for p in [*w_params, x] if p.grad is not None]
            if not all(bool(torch.isfinite(g).all()) for g in grads):
                return None, epochs
            torch.nn.utils.clip_grad_norm_(w_params, options.adam.grad_clip)
            torch.nn.utils.clip_grad_norm_([x], options.adam.grad_clip)
            (opt_w if train_w else opt_x).step()
            with torch.no_grad():
                x.copy_(torch.maximum(torch.minimum(x, bounds[1]), bounds[0]))
            total += loss.item()
        epochs += 1
        train_w = not train_w
        if not math.isfinite(total):
            return None, epochs
        if rule.update(total) or epochs > options.stopping.max_epochs:
            return x.detach().clone(), epochs
