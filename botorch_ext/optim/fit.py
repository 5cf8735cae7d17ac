r"""Fitting an ``EULBOModel`` by its ELBO: L-BFGS on the collapsed bound, or Adam.

This module is to ``EULBOModel`` what ``botorch.optim.fit`` is to BoTorch's
models: the function that fits the model, kept beside the model, which never
imports it. The joint EULBO optimization (``botorch_ext.optim.joint_phase``) reuses
its minibatch, check-set and w-step helpers and its stopping rule.

By default (``EULBOOptions.elbo.optimizer="auto"``) ``fit_elbo`` is
``fit_elbo_collapsed``: full-batch L-BFGS on ``collapsed_elbo``, the ELBO with
``q(u)`` at its closed-form optimum [Titsias2009]_, on all the data while
``n <= lbfgs_max_n`` and on ``lbfgs_max_n`` points drawn at random above
(``lbfgs_rows``), then the closed-form ``q(u)`` of all the data. With
``"adam"``: Adam steps on minibatch ELBOs (``w_step``, gradient norm clipped),
every round (``stopping.check_every`` steps, or one epoch) the objective on a
fixed check set (or the epoch's mean), then ``StoppingRule``.
``model.last_fit`` records the fit.

References:
    .. [Titsias2009]
        M. Titsias. Variational Learning of Inducing Variables in Sparse Gaussian
        Processes. AISTATS 2009.
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import torch
from botorch.optim.core import OptimizationStatus, scipy_minimize
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from botorch_ext.optim.utils import preserved_global_rng

if TYPE_CHECKING:
    from botorch_ext.models.eulbo import EULBOModel


class StoppingRule:
    r"""Stop after ``patience`` rounds without an improvement larger than ``tol``.

    The first value always counts as an improvement.

    Example:
        >>> rule = StoppingRule(patience=2, tol=0.1)
        >>> [rule.update(v) for v in (1.0, 1.05, 1.08)]
        [False, False, True]

    Args:
        patience: Rounds in a row without progress before stopping.
        tol: Smallest improvement that counts as progress.
    """

    def __init__(self, patience: int, tol: float) -> None:
        r"""Start with no value seen."""
        self.patience, self.tol = patience, tol
        self.best, self.stale = -math.inf, 0

    def update(self, value: float) -> bool:
        r"""Record a round's value.

        Args:
            value: The round's objective (per datum).

        Returns:
            True when the fit should stop.
        """
        if value > self.best + self.tol or self.best == -math.inf:
            self.best, self.stale = max(value, self.best), 0
        else:
            self.stale += 1
        return self.stale >= self.patience


def minibatches(model: EULBOModel, generator: torch.Generator) -> list[Tensor]:
    r"""One epoch of shuffled minibatch indices of ``options.adam.batch_size``.

    Example:
        >>> batches = minibatches(model, torch.Generator().manual_seed(0))

    Args:
        model: An ``EULBOModel``.
        generator: The generator of the shuffle.

    Returns:
        Index tensors covering all training points once.
    """
    n = model.train_X_full.shape[-2]
    perm = torch.randperm(n, generator=generator)
    return list(perm.split(model.options.adam.batch_size))


def minibatch_stream(model: EULBOModel, generator: torch.Generator) -> Iterator[Tensor]:
    r"""Reshuffled minibatches, epoch after epoch (Appendix A of [Maus2024eulbo]_).

    Example:
        >>> idx = next(minibatch_stream(model, torch.Generator().manual_seed(0)))

    Args:
        model: An ``EULBOModel``.
        generator: The generator of the shuffles (drawn from lazily).

    Yields:
        Index tensors of minibatches.
    """
    while True:
        yield from minibatches(model, generator)


def check_set(model: EULBOModel, generator: torch.Generator) -> Tensor:
    r"""The fixed check set: all data, or ``options.stopping.check_size`` random points.

    Reason: a fixed set makes the stopping criterion a deterministic function
    of the parameters rather than minibatch noise.

    Example:
        >>> idx = check_set(model, torch.Generator().manual_seed(0))

    Args:
        model: An ``EULBOModel``.
        generator: The generator of the random subset.

    Returns:
        Indices of the check set.
    """
    n = model.train_X_full.shape[-2]
    if n <= model.options.stopping.check_size:
        return torch.arange(n)
    return torch.randperm(n, generator=generator)[: model.options.stopping.check_size]


def check_elbo(model: EULBOModel, idx: Tensor) -> Tensor:
    r"""The ELBO (on ``elbo_scale``) estimated on the fixed check set, no gradient.

    Example:
        >>> value = check_elbo(model, check_set(model, generator))

    Args:
        model: An ``EULBOModel``.
        idx: Indices of the check set.

    Returns:
        A scalar tensor.
    """
    with torch.no_grad():
        return model.elbo(model.train_X_full[idx], model.train_Y_std[idx])


def _w_parameters(model: EULBOModel) -> list[Tensor]:
    r"""``w``: the variational parameters, inducing points and hyperparameters."""
    return [p for p in model.parameters() if p.requires_grad]


def w_step(
    model: EULBOModel,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    idx: Tensor,
    extra: Callable[[], Tensor] | None = None,
) -> float | None:
    r"""One optimizer step on the minibatch ELBO (plus ``extra()``), clipped.

    The gradient norm of ``params`` is clipped at ``options.adam.grad_clip``.

    Example:
        >>> value = w_step(model, torch.optim.Adam(params), params, idx)

    Args:
        model: An ``EULBOModel``.
        opt: The optimizer of ``params``.
        params: The parameters stepped.
        idx: Indices of the minibatch.
        extra: A differentiable term added to the objective (the EULBO's
            utility), or None.

    Returns:
        The objective before the step, or None (and no step) if it is not
        finite.
    """
    opt.zero_grad()
    objective = model.elbo(model.train_X_full[idx], model.train_Y_std[idx])
    if extra is not None:
        objective = objective + extra()
    loss = -objective
    if not torch.isfinite(loss):
        return None
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, model.options.adam.grad_clip)
    opt.step()
    return -loss.item()


def uses_lbfgs(model: EULBOModel) -> bool:
    r"""Whether ``fit_elbo`` fits ``model`` by L-BFGS on the collapsed bound.

    ``"auto"`` and ``"lbfgs"``: yes (on the rows of ``lbfgs_rows``); ``"adam"``:
    no.

    Example:
        >>> uses_lbfgs(model)
        True
    """
    return model.options.elbo.optimizer != "adam"


def lbfgs_rows(model: EULBOModel, seed: int = 0) -> Tensor | None:
    r"""The training points the L-BFGS ELBO fit of ``model`` uses.

    All (None) with ``"lbfgs"`` or while ``n <= options.lbfgs_max_n``; above,
    with ``"auto"``, ``lbfgs_max_n`` of them drawn without replacement from
    ``seed``. Reason: an L-BFGS iteration costs ``O(n m^2)``, so a subset keeps
    the fit's cost bounded in ``n``, and ``Z`` and the hyperparameters fitted on
    thousands of points are close to those of all of them, while minibatch Adam
    at that cost stops far below the optimum (the EULBO benchmark page).

    Example:
        >>> rows = lbfgs_rows(model, seed=0)  # None, or lbfgs_max_n indices

    Args:
        model: The model to fit.
        seed: Seed of the draw.

    Returns:
        A tensor of ``lbfgs_max_n`` distinct row indices, or None for all rows.
    """
    n = model.train_X_full.shape[-2]
    size = model.options.lbfgs_max_n
    if model.options.elbo.optimizer != "auto" or n <= size:
        return None
    gen = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=gen)[:size].to(model.train_X_full.device)


def fit_elbo(model: EULBOModel, seed: int = 0) -> float:
    r"""Fit an ``EULBOModel`` by its ELBO.

    Where ``uses_lbfgs(model)`` (``options.elbo.optimizer`` is ``"auto"``, the
    default, or ``"lbfgs"``) this is ``fit_elbo_collapsed``: the ELBO maximized
    by L-BFGS, on all the data or, with ``"auto"`` above
    ``options.lbfgs_max_n`` points, on ``lbfgs_max_n`` of them drawn from
    ``seed`` (``lbfgs_rows``), with ``q(u)`` then at its closed form on all the
    data. With ``"adam"``: Adam with step
    size ``options.adam.lr_w``, minibatches of ``options.adam.batch_size`` reshuffled
    every epoch, gradient norm clipped at ``options.adam.grad_clip``,
    from the model's current state (a carried-over ``w`` or the closed-form
    ``q(u)``); stops by ``options.stopping.convergence`` (see ``EULBOOptions``), where
    ``options`` is ``model.options``. With the ``"steps"`` rule the fit ends at
    the parameters of its best check (``BestState``), so never below its start
    on the check set. ``model.last_fit`` records the number of
    steps, the final per-datum ELBO and whether the stopping rule (not the
    budget) ended the fit. The model is left in eval mode. With
    ``options.elbo.epochs`` it runs exactly that many Adam epochs, and with
    ``options.stopping.convergence="failures"`` it stops by that rule
    (``FailureCount``; the authors' code, ``EULBOOptions.authors``). The global
    random stream is left as it was (``preserved_global_rng``).

    Example:
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> elbo_per_datum = fit_elbo(model, seed=0)

    Args:
        model: The model to fit, in place.
        seed: Seed of the L-BFGS subset, or of Adam's minibatch shuffling and
            check set.

    Returns:
        The final per-datum ELBO (the collapsed bound of all the data for
        L-BFGS; for Adam on the check set with ``"steps"``, the last epoch's
        mean with ``"epochs"``).

    Raises:
        RuntimeError: If the ELBO becomes non-finite.
    """
    with preserved_global_rng(model.train_X_full):
        return _fit_elbo(model, seed)


def _fit_elbo(model: EULBOModel, seed: int) -> float:
    options = model.options
    if uses_lbfgs(model):
        return fit_elbo_collapsed(
            model, options.elbo.lbfgs_max_iter, rows=lbfgs_rows(model, seed)
        )
    model.train()
    params = _w_parameters(model)
    opt = torch.optim.Adam(params, lr=options.adam.lr_w)
    gen = torch.Generator().manual_seed(seed)
    rule = StoppingRule(options.stopping.patience, options.stopping.tol)
    if options.elbo.epochs is not None or options.stopping.convergence == "failures":
        steps, converged, value = _adam_counted_epochs(model, opt, params, gen)
    elif options.stopping.convergence == "epochs":
        steps, converged, value = _adam_epochs(model, opt, params, gen, rule)
    else:
        steps, converged, value = _adam_steps(model, opt, params, gen, rule)
    model.eval()
    model.last_fit = {"steps": steps, "elbo": value, "converged": converged}
    return value


def _adam_epochs(
    model: EULBOModel,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    gen: torch.Generator,
    rule: StoppingRule,
) -> tuple[int, bool, float]:
    r"""The ``"epochs"`` rule: ``(steps, converged, per-datum value)``."""
    steps, value = 0, -math.inf
    n = model.train_X_full.shape[-2]
    for _ in range(model.options.stopping.max_epochs):
        total = 0.0
        for idx in minibatches(model, gen):
            step_value = w_step(model, opt, params, idx)
            if step_value is None:
                raise RuntimeError("The ELBO became non-finite during fit_elbo.")
            steps += 1
            # Weight by minibatch size: a small last minibatch would
            # otherwise make the epoch score noisy (and stop early).
            total += step_value * len(idx)
        value = model.per_datum(total / n)
        if rule.update(value):
            return steps, True, value
    return steps, False, value


def _adam_counted_epochs(
    model: EULBOModel,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    gen: torch.Generator,
) -> tuple[int, bool, float]:
    r"""``elbo.epochs`` epochs, or the ``"failures"`` rule.

    Returns ``(steps, converged, value)``, the value the last epoch's per-datum
    mean.
    """
    options = model.options
    fixed = options.elbo.epochs
    rule = FailureCount(options.stopping.patience)
    steps, epochs, n = 0, 0, model.train_X_full.shape[-2]
    while True:
        loss = weighted = 0.0
        for idx in minibatches(model, gen):
            step_value = w_step(model, opt, params, idx)
            if step_value is None:
                raise RuntimeError("The ELBO became non-finite during fit_elbo.")
            steps += 1
            loss -= step_value
            weighted += step_value * len(idx)
        epochs += 1
        value = model.per_datum(weighted / n)
        if fixed is not None:
            if epochs >= fixed:
                return steps, False, value
        elif rule.update(loss):
            return steps, True, value
        elif epochs > options.stopping.max_epochs:
            return steps, False, value


class FailureCount:
    r"""The ``"failures"`` rule: stop at the ``patience``-th failure, counted in total.

    A value fails when it is not below the lowest value seen so far (the first
    never fails); the rule of the authors' released code for an epoch's summed
    minibatch loss.

    Example:
        >>> rule = FailureCount(patience=2)
        >>> [rule.update(v) for v in (3.0, 2.0, 2.5, 1.0, 1.0)]
        [False, False, False, False, True]

    Args:
        patience: Failures in total before stopping.
    """

    def __init__(self, patience: int) -> None:
        r"""Start with no value seen."""
        self.patience, self.lowest, self.failures = patience, math.inf, 0

    def update(self, loss: float) -> bool:
        r"""Record a loss; True when the fit should stop.

        Args:
            loss: The epoch's loss (lower is better).

        Returns:
            True at the ``patience``-th failure.
        """
        if loss < self.lowest:
            self.lowest = loss
        else:
            self.failures += 1
        return self.failures >= self.patience


def _adam_steps(
    model: EULBOModel,
    opt: torch.optim.Optimizer,
    params: list[Tensor],
    gen: torch.Generator,
    rule: StoppingRule,
) -> tuple[int, bool, float]:
    r"""The ``"steps"`` rule: ``(steps, converged, per-datum value)``."""
    options = model.options
    steps = 0
    check = check_set(model, gen)
    stream = minibatch_stream(model, gen)
    value = model.per_datum(check_elbo(model, check).item())
    rule.update(value)
    best = BestState(params, value)
    while steps < options.stopping.max_steps:
        for _ in range(
            min(options.stopping.check_every, options.stopping.max_steps - steps)
        ):
            if w_step(model, opt, params, next(stream)) is None:
                raise RuntimeError("The ELBO became non-finite during fit_elbo.")
            steps += 1
        value = model.per_datum(check_elbo(model, check).item())
        best.offer(params, value)
        if rule.update(value):
            return steps, True, best.restore(params)
    return steps, False, best.restore(params)


class BestState:
    r"""The parameters at the best check of a fit, to end the fit there.

    Reason: minibatch Adam started from a good state (a carried-over ``w``
    after a joint phase, a converged fit) first moves away from it; a fit
    that stops because its check value stopped improving would otherwise
    return a state below the one it started from.

    Example:
        >>> best = BestState(params, check_value)
        >>> best.offer(params, new_check_value)  # after some steps
        >>> value = best.restore(params)

    Args:
        params: The parameters being fitted.
        value: Their check value now.
    """

    def __init__(self, params: list[Tensor], value: float) -> None:
        r"""Save ``params`` as the best so far."""
        self.value = value
        self.saved = [p.detach().clone() for p in params]

    def offer(self, params: list[Tensor], value: float) -> None:
        r"""Save ``params`` if ``value`` beats the best so far."""
        if value > self.value:
            self.value = value
            self.saved = [p.detach().clone() for p in params]

    def restore(self, params: list[Tensor]) -> float:
        r"""Copy the best parameters back into ``params``; return their value."""
        with torch.no_grad():
            for p, saved in zip(params, self.saved, strict=True):
                p.copy_(saved)
        return self.value


def collapsed_elbo(model: EULBOModel, rows: Tensor | None = None) -> Tensor:
    r"""The SVGP's ELBO at the optimal ``q(u)``, per datum, priors included.

    With a Gaussian likelihood the ELBO maximized over ``q(u)`` has the closed
    form of [Titsias2009]_ (the "collapsed" bound), a function of the inducing
    points and hyperparameters only:

        L* = log N(y | mu_X, Q + s2 I) - tr(K_XX - Q) / (2 s2),
        Q = K_XZ K_ZZ^{-1} K_ZX,

    computed with ``Phi = L^{-1} K_ZX`` (``L L^T = K_ZZ`` with the variational
    strategy's jitter) and ``A = I + Phi Phi^T / s2`` by the matrix
    determinant lemma and Woodbury's identity, in ``O(n m^2)``. It equals
    ``model``'s (uncollapsed) full-data ELBO at the ``q(u)`` that
    ``EULBOModel.set_optimal_variational_distribution`` sets. As GPyTorch's
    ``VariationalELBO`` does, the hyperparameters' log priors are added and
    the total is divided by ``n``. With ``rows`` it is the bound of those
    training points alone (``n`` their number), the data of an SVGP fitted to
    a subset.

    Example:
        >>> value = collapsed_elbo(model)  # differentiable in Z and theta

    Args:
        model: An ``EULBOModel`` (its training data, inducing points, kernel,
            mean and Gaussian likelihood are used; its ``q(u)`` is not).
        rows: Indices of the training points to use; None for all.

    Returns:
        A scalar tensor, the per-datum bound.
    """
    gp = model.model
    strategy = gp.variational_strategy
    X = model.train_X_full if rows is None else model.train_X_full[rows]
    n = X.shape[-2]
    phi, r, s2, L_A = model.whitened_regression(rows)
    c = torch.linalg.solve_triangular(L_A, (phi @ r).unsqueeze(-1), upper=False)
    quad = (r @ r) / s2 - (c.squeeze(-1) @ c.squeeze(-1)) / s2**2
    logdet = n * torch.log(s2) + 2 * torch.log(torch.diagonal(L_A)).sum()
    # GPyTorch adds the jitter to the predictive variance too.
    k_diag = gp.covar_module(X, diag=True) + strategy.jitter_val
    trace = (k_diag.sum() - (phi**2).sum()) / s2
    total = -0.5 * (n * math.log(2 * math.pi) + logdet + quad + trace)
    log_prior = sum(
        prior.log_prob(closure(module)).sum()
        for modules in (gp, model.likelihood)
        for _, module, prior, closure, _ in modules.named_priors()
    )
    return (total + log_prior) / n


def _exact_hyperparameter_search(
    model: EULBOModel, params: list[Tensor], max_iter: int
) -> tuple[int, bool]:
    r"""L-BFGS-B (SciPy, as ``fit_gpytorch_mll``) on the exact bound.

    Returns its iterations and whether SciPy reported success (a trial point
    where the bound is not finite ends the search early, at the last finite one).

    Reason: with ``Z = X`` the search is the exact GP's hyperparameter fit, which
    BoTorch's SciPy driver does in few iterations and without the first-use cost
    of ``torch.optim``.
    """

    def closure() -> tuple[Tensor, list[Tensor | None]]:
        for p in params:
            p.grad = None
        loss = -collapsed_elbo(model)
        loss.backward()
        return loss.detach(), [p.grad for p in params]

    tensors = {f"w{i}": p for i, p in enumerate(params)}
    result = scipy_minimize(closure, tensors, options={"maxiter": max_iter})
    return result.step, result.status == OptimizationStatus.SUCCESS


def _lbfgs_search(
    model: EULBOModel, params: list[Tensor], max_iter: int, rows: Tensor | None
) -> int:
    r"""PyTorch's L-BFGS (strong Wolfe) on the collapsed bound; its iterations."""
    opt = torch.optim.LBFGS(
        params,
        lr=1.0,
        max_iter=max_iter,
        history_size=20,
        line_search_fn="strong_wolfe",
        tolerance_grad=1e-6,
        tolerance_change=1e-9,
    )

    def closure() -> Tensor:
        opt.zero_grad()
        loss = -collapsed_elbo(model, rows)
        loss.backward()
        return loss

    opt.step(closure)
    return int(opt.state[params[0]].get("n_iter", 0))


def holds_every_input(model: EULBOModel, rows: Tensor | None = None) -> bool:
    r"""Whether the collapsed fit can place one inducing point on each input.

    True when the fit uses all the data (``rows`` is None) and the model has as
    many inducing points as training points (``n <= m``: ``EULBOModel`` then
    has ``m = n``). With ``Z = X``, ``Q = K_XX``, so the collapsed bound is the
    exact GP's log marginal likelihood, and no other ``Z`` gives more
    (the bound is a lower bound of it): ``fit_elbo_collapsed`` then fixes ``Z``
    at ``X`` and searches the hyperparameters only, which is the exact GP's fit.

    Example:
        >>> holds_every_input(EULBOModel(X[:20], Y[:20], num_inducing_points=100))
        True
    """
    Z = model.model.variational_strategy.inducing_points
    return rows is None and Z.shape[-2] == model.train_X_full.shape[-2]


def fit_elbo_collapsed(
    model: EULBOModel, max_iter: int = 500, rows: Tensor | None = None
) -> float:
    r"""Fit an ``EULBOModel`` by its ELBO to convergence: L-BFGS on the collapsed bound.

    Maximizes ``collapsed_elbo`` (the ELBO with ``q(u)`` at its optimum) over
    the inducing points and hyperparameters by full-batch L-BFGS with a strong
    Wolfe line search, from the model's current state, then sets ``q(u)`` to
    its closed-form optimum (``set_optimal_variational_distribution``). The
    optimum is the ELBO's optimum over all of ``w``, the objective of
    ``fit_elbo``, reached without minibatch noise and without ``q(u)``'s
    ``O(m^2)`` parameters in the search. Each iteration costs ``O(n m^2)``.
    With ``rows`` the search maximizes the bound of those points only (an
    iteration then costs ``O(|rows| m^2)``); ``q(u)`` is still set to the
    optimum of all the data. Where the model has an inducing point per input
    (``holds_every_input``: ``n <= m``) the inducing points are set to the
    inputs and only the hyperparameters are searched: the bound is then the
    exact GP's log marginal likelihood, and this is the exact GP's fit.

    Example:
        >>> elbo_per_datum = fit_elbo_collapsed(model)

    Args:
        model: The model to fit, in place.
        max_iter: L-BFGS iteration budget.
        rows: Indices of the training points the search uses; None for all.

    Returns:
        The final per-datum ELBO of all the data (``collapsed_elbo``).

    Raises:
        ValueError: If ``rows`` is empty or names a point the model lacks.
    """
    n = model.train_X_full.shape[-2]
    if rows is not None and (
        rows.numel() == 0 or int(rows.min()) < 0 or int(rows.max()) >= n
    ):
        raise ValueError(
            f"`rows` must be a non-empty set of indices in [0, {n}), got "
            f"{rows.tolist() if rows.numel() <= 10 else rows}"
        )
    model.train()
    blocks = model.parameter_blocks()
    skip = {id(p) for p in blocks["variational"]}
    exact = holds_every_input(model, rows)
    if exact:
        # Z = X makes the bound the exact marginal likelihood, its maximum over
        # Z: only the hyperparameters are searched.
        Z = model.model.variational_strategy.inducing_points
        with torch.no_grad():
            Z.copy_(model.train_X_full)
        skip |= {id(p) for p in blocks["inducing_points"]}
    params = [p for p in _w_parameters(model) if id(p) not in skip]
    start = [p.detach().clone() for p in params]
    value, failed, steps, success = math.nan, None, 0, True
    try:
        if exact:
            steps, success = _exact_hyperparameter_search(model, params, max_iter)
        else:
            steps = _lbfgs_search(model, params, max_iter, rows)
        model.set_optimal_variational_distribution()
        with torch.no_grad():
            value = collapsed_elbo(model).item()
    # A trial point with a singular K_ZZ or A, or one where it has NaNs (e.g. an
    # overflowing lengthscale or outputscale of a kernel without priors).
    except (NotPSDError, NanError) as e:
        failed = str(e)
    if not math.isfinite(value):
        # Keep the state the fit started from rather than a broken one.
        with torch.no_grad():
            for p, p0 in zip(params, start, strict=True):
                p.copy_(p0)
        model.set_optimal_variational_distribution()
        with torch.no_grad():
            value = collapsed_elbo(model).item()
        if not math.isfinite(value):
            raise RuntimeError(
                "The ELBO is non-finite at the start of fit_elbo_collapsed."
            )
        warnings.warn(
            "fit_elbo_collapsed: L-BFGS reached a non-finite ELBO or a singular "
            f"K_ZZ ({failed or 'non-finite value'}); the starting state is kept.",
            RuntimeWarning,
            stacklevel=2,
        )
        steps, failed = 0, failed or "non-finite"
    model.eval()
    converged = failed is None and success and steps < max_iter
    model.last_fit = {
        "steps": steps,
        "elbo": value,
        "converged": converged,
        "rows": model.train_X_full.shape[-2] if rows is None else len(rows),
    }
    return value
