r"""Fitting an ``EULBOModel`` by its ELBO: L-BFGS on the collapsed bound, or Adam.

``fit_elbo(model, options=..., objective=...)`` is to ``EULBOModel`` what
BoTorch's ``fit_gpytorch_mll`` is to an MLL: it takes the model, its optimizer
settings (``EULBOOptions``) and the objective (``EULBO``, whose ELBO term it
maximizes), and reaches the model only through its public surface.

By default (``EULBOOptions.elbo.optimizer="auto"``) ``fit_elbo`` is
``fit_elbo_collapsed`` (``botorch_ext.eulbo.collapsed``): full-batch L-BFGS on
the collapsed bound, the ELBO with ``q(u)`` at its closed-form optimum
[Titsias2009]_, on all the data while ``n <= lbfgs_max_n`` and on
``lbfgs_max_n`` points drawn at random above (``lbfgs_rows``, with the budget
``lbfgs_budget``), then the closed-form ``q(u)`` of all the data, by BoTorch's
SciPy L-BFGS-B driver (the package's only L-BFGS driver). With ``"adam"``: Adam
steps on minibatch ELBOs (``botorch_ext.eulbo.adam.w_step``, gradient norm
clipped), every round (``stopping.check_every`` steps, or one epoch) the
objective on a fixed check set (or the epoch's mean), then a stopping rule.
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
import numbers

import torch
from torch import Tensor

from botorch_ext.eulbo.adam import (
    FailureCount,
    StoppingRule,
    check_elbo,
    check_set,
    minibatch_stream,
    minibatches,
    w_parameters,
    w_step,
)
from botorch_ext.eulbo.collapsed import fit_elbo_collapsed
from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.objective import EULBO
from botorch_ext.eulbo.options import EULBOOptions
from botorch_ext.eulbo.snapshot import Snapshot
from botorch_ext.optim.utils import preserved_global_rng


def uses_lbfgs(options: EULBOOptions) -> bool:
    r"""Whether ``fit_elbo`` with ``options`` fits by L-BFGS on the collapsed bound.

    ``"auto"`` and ``"lbfgs"``: yes (on the rows of ``lbfgs_rows``); ``"adam"``:
    no.

    Example:
        >>> uses_lbfgs(EULBOOptions())
        True
    """
    return options.elbo.optimizer != "adam"


def lbfgs_rows(
    model: EULBOModel, options: EULBOOptions, seed: int = 0
) -> Tensor | None:
    r"""The training points the L-BFGS ELBO fit of ``model`` uses.

    All (None) with ``"lbfgs"`` or while ``n <= options.lbfgs_max_n``; above,
    with ``"auto"``, ``lbfgs_max_n`` of them drawn without replacement from
    ``seed``. Reason: an L-BFGS iteration costs ``O(n m^2)``, so a subset keeps
    the fit's cost bounded in ``n``, and ``Z`` and the hyperparameters fitted on
    thousands of points are close to those of all of them, while minibatch Adam
    at that cost stops far below the optimum (the EULBO benchmark page).

    Example:
        >>> rows = lbfgs_rows(model, EULBOOptions(), seed=0)  # None, or indices

    Args:
        model: The model to fit.
        options: The fit's settings.
        seed: Seed of the draw.

    Returns:
        A tensor of ``lbfgs_max_n`` distinct row indices, or None for all rows.
    """
    n = model.train_X_full.shape[-2]
    size = options.lbfgs_max_n
    if options.elbo.optimizer != "auto" or n <= size:
        return None
    gen = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=gen)[:size].to(model.train_X_full.device)


def lbfgs_budget(options: EULBOOptions, rows: Tensor | None) -> int:
    r"""The iteration budget of the L-BFGS ELBO fit on ``rows``.

    ``options.elbo.subset_max_iter`` when the fit runs on a subset (``rows``
    from ``lbfgs_rows``) and that budget is set, else
    ``options.elbo.lbfgs_max_iter``.

    Example:
        >>> options = EULBOOptions(elbo=ELBOFitOptions(subset_max_iter=10))
        >>> lbfgs_budget(options, torch.arange(2000))
        10

    Args:
        options: The fit's settings.
        rows: The subset's row indices, or None for all rows.

    Returns:
        The number of L-BFGS iterations allowed.
    """
    if rows is not None and options.elbo.subset_max_iter is not None:
        return options.elbo.subset_max_iter
    return options.elbo.lbfgs_max_iter


def fit_elbo(
    model: EULBOModel,
    options: EULBOOptions | None = None,
    objective: EULBO | None = None,
    seed: int = 0,
) -> float:
    r"""Fit an ``EULBOModel`` by its ELBO.

    Where ``uses_lbfgs(options)`` (``options.elbo.optimizer`` is ``"auto"``,
    the default, or ``"lbfgs"``) this is ``fit_elbo_collapsed``: the ELBO
    maximized by L-BFGS, on all the data or, with ``"auto"`` above
    ``options.lbfgs_max_n`` points, on ``lbfgs_max_n`` of them drawn from
    ``seed`` (``lbfgs_rows``), with ``q(u)`` then at its closed form on all the
    data. With ``"adam"``: Adam with step size ``options.adam.lr_w``,
    minibatches of ``options.adam.batch_size`` reshuffled every epoch, gradient
    norm clipped at ``options.adam.grad_clip``, from the model's current state
    (a carried-over ``w`` or the closed-form ``q(u)``), on the ELBO term of
    ``objective`` (its ``elbo_scale``); stops by
    ``options.stopping.convergence`` (see ``EULBOOptions``). With the
    ``"steps"`` rule the fit ends at the parameters of its best check
    (a ``Snapshot`` of the parameters), so never below its start on the check
    set.
    ``model.last_fit`` records the number of steps, the final per-datum ELBO
    and whether the stopping rule (not the budget) ended the fit. The model is
    left in eval mode. With ``options.elbo.epochs`` it runs exactly that many
    Adam epochs, and with ``options.stopping.convergence="failures"`` it stops
    by that rule (``FailureCount``; the authors' code,
    ``EULBOOptions.authors``). The global random stream is left as it was
    (``preserved_global_rng``).

    Example:
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> elbo_per_datum = fit_elbo(model, seed=0)
        >>> fit_elbo(model, EULBOOptions.authors(), EULBO(elbo_scale="mean"))

    Args:
        model: The model to fit, in place.
        options: Optimizer settings; ``EULBOOptions()`` if None.
        objective: The objective whose ELBO term is fitted (its scale matters
            to Adam's steps only); ``EULBO()`` if None.
        seed: Seed of the L-BFGS subset, or of Adam's minibatch shuffling and
            check set.

    Returns:
        The final per-datum ELBO (the collapsed bound of all the data for
        L-BFGS; for Adam on the check set with ``"steps"``, the last epoch's
        mean with ``"epochs"``).

    Raises:
        RuntimeError: If the ELBO becomes non-finite during an Adam fit (the
            model is then back at the state the fit started from).
        TypeError: If ``model``, ``options`` or ``objective`` is of the wrong
            class.
        ValueError: For a ``seed`` that is not a non-negative integer or a
            setting out of range.
    """
    options = EULBOOptions() if options is None else options
    objective = EULBO() if objective is None else objective
    check_model_and_seed(model, seed)
    check_settings(options, objective)
    with preserved_global_rng(model.train_X_full):
        return _fit_elbo(model, options, objective, seed)


def check_model_and_seed(model: EULBOModel, seed: int) -> None:
    r"""Check the model and the seed of a fit or an EULBO search.

    Args:
        model: The model to fit.
        seed: The seed of its minibatches and samples.

    Raises:
        TypeError: If ``model`` is not an ``EULBOModel``.
        ValueError: If ``seed`` is not a non-negative integer.
    """
    if not isinstance(model, EULBOModel):
        raise TypeError(f"`model` must be an EULBOModel, got {type(model).__name__}.")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer, got {seed!r}.")


def check_settings(options: EULBOOptions, objective: EULBO) -> None:
    r"""Check the settings of a fit or an EULBO search before it starts.

    Args:
        options: The optimizer settings.
        objective: The objective.

    Raises:
        TypeError: If ``options`` is not an ``EULBOOptions`` or ``objective``
            not an ``EULBO``.
        ValueError: If a setting is out of range (``EULBOOptions.validate``).
    """
    if not isinstance(options, EULBOOptions):
        raise TypeError(
            f"`options` must be an EULBOOptions, got {type(options).__name__}."
        )
    if not isinstance(objective, EULBO):
        raise TypeError(
            f"`objective` must be an EULBO, got {type(objective).__name__}."
        )
    options.validate()


def _fit_elbo(
    model: EULBOModel, options: EULBOOptions, objective: EULBO, seed: int
) -> float:
    if uses_lbfgs(options):
        rows = lbfgs_rows(model, options, seed)
        return fit_elbo_collapsed(model, lbfgs_budget(options, rows), rows=rows)
    model.train()
    fit = _AdamFit(model, options, objective, seed)
    start = Snapshot(fit.params)
    counted = options.elbo.epochs is not None
    try:
        if counted or options.stopping.convergence == "failures":
            steps, converged, value = fit.counted_epochs()
        elif options.stopping.convergence == "epochs":
            steps, converged, value = fit.epochs()
        else:
            steps, converged, value = fit.steps()
    except RuntimeError:
        # A non-finite ELBO: the model goes back to where the fit started.
        start.restore()
        model.eval()
        raise
    model.eval()
    model.last_fit = {"steps": steps, "elbo": value, "converged": converged}
    return value


class _AdamFit:
    r"""Minibatch Adam on the ELBO, with the three stopping rules."""

    def __init__(
        self, model: EULBOModel, options: EULBOOptions, objective: EULBO, seed: int
    ) -> None:
        self.model, self.options, self.objective = model, options, objective
        self.params = w_parameters(model)
        self.opt = torch.optim.Adam(self.params, lr=options.adam.lr_w)
        self.gen = torch.Generator().manual_seed(seed)
        self.rule = StoppingRule(options.stopping.patience, options.stopping.tol)

    def step(self, idx: Tensor) -> float:
        r"""One w-step on the minibatch ``idx``; raise if the ELBO is not finite."""
        value = w_step(
            self.model,
            self.objective,
            self.opt,
            self.params,
            idx,
            self.options.adam.grad_clip,
        )
        if value is None:
            raise RuntimeError("The ELBO became non-finite during fit_elbo.")
        return value

    def per_datum(self, value: float) -> float:
        r"""``value`` on the objective's scale, per datum."""
        return self.objective.per_datum(self.model, value)

    def epochs(self) -> tuple[int, bool, float]:
        r"""The ``"epochs"`` rule: ``(steps, converged, per-datum value)``."""
        steps, value = 0, -math.inf
        n = self.model.train_X_full.shape[-2]
        for _ in range(self.options.stopping.max_epochs):
            total = 0.0
            for idx in minibatches(self.model, self.options.adam.batch_size, self.gen):
                step_value = self.step(idx)
                steps += 1
                # Weight by minibatch size: a small last minibatch would
                # otherwise make the epoch score noisy (and stop early).
                total += step_value * len(idx)
            value = self.per_datum(total / n)
            if self.rule.update(value):
                return steps, True, value
        return steps, False, value

    def counted_epochs(self) -> tuple[int, bool, float]:
        r"""``elbo.epochs`` epochs, or the ``"failures"`` rule.

        Returns ``(steps, converged, value)``, the value the last epoch's
        per-datum mean.
        """
        fixed = self.options.elbo.epochs
        rule = FailureCount(self.options.stopping.patience)
        steps, epochs, n = 0, 0, self.model.train_X_full.shape[-2]
        while True:
            loss = weighted = 0.0
            for idx in minibatches(self.model, self.options.adam.batch_size, self.gen):
                step_value = self.step(idx)
                steps += 1
                loss -= step_value
                weighted += step_value * len(idx)
            epochs += 1
            value = self.per_datum(weighted / n)
            if fixed is not None:
                if epochs >= fixed:
                    return steps, False, value
            elif rule.update(loss):
                return steps, True, value
            elif epochs > self.options.stopping.max_epochs:
                return steps, False, value

    def steps(self) -> tuple[int, bool, float]:
        r"""The ``"steps"`` rule: ``(steps, converged, per-datum value)``."""
        stopping, model, params = self.options.stopping, self.model, self.params
        steps = 0
        check = check_set(model, stopping.check_size, self.gen)
        stream = minibatch_stream(model, self.options.adam.batch_size, self.gen)
        value = self.per_datum(check_elbo(model, self.objective, check).item())
        self.rule.update(value)
        best = Snapshot(params, value)
        converged = False
        while steps < stopping.max_steps:
            for _ in range(min(stopping.check_every, stopping.max_steps - steps)):
                self.step(next(stream))
                steps += 1
            value = self.per_datum(check_elbo(model, self.objective, check).item())
            best.offer(value)
            if self.rule.update(value):
                converged = True
                break
        best.restore()
        return steps, converged, best.value
