r"""The runner's acquisition-function methods.

``acquisition_method`` turns an acquisition class into a method (fit the model, build
the acquisition with BoTorch's input constructor, maximize it with ``optimize_acqf``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from botorch_ext.optim import ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.fitting import fit_model, gp_diagnostics
from botorch_ext.runner.initial_conditions import (
    INITIAL_CONDITIONS,
    bock_initial_conditions,
)
from botorch_ext.runner.options import Method, iteration_seed


@dataclass
class _Spec:
    # What a method of ``acquisition_method`` proposes with (picklable, so that
    # a warm-started run's state can be saved).
    acqf_class: Any
    kernel: str
    fully_bayesian: bool
    constructor_class: Any
    sequential: bool
    late_kwargs: Callable[[], dict] | None
    constructor_kwargs: dict[str, Any] = field(default_factory=dict)


def acquisition_method(
    acqf_class,
    kernel: str = "default",
    fully_bayesian: bool = False,
    constructor_class=None,
    sequential: bool = False,
    late_kwargs: Callable[[], dict] | None = None,
    warm_start: bool = False,
    **constructor_kwargs,
) -> Method:
    r"""A runner method: fit a ``SingleTaskGP``, maximize an acquisition function.

    The acquisition function is built by BoTorch's registered input constructor (as Ax
    builds it).

    Each call fits the model on the run's data (``fit_model``), builds the
    acquisition function and returns ``optimize_acqf``'s batch. After a call,
    ``method.timings["fit_seconds"]`` is the model fit's share of it and
    ``method.diagnostics`` the fitted model's state (``gp_diagnostics``).

    Example:
        >>> qlogei = acquisition_method(qLogNoisyExpectedImprovement, kernel="bock")
        >>> X_next = qlogei(train_X, train_Y, bounds, 2, 0, MethodOptions())

    Args:
        acqf_class: The acquisition function's class.
        kernel: The model's covariance (see ``fit_model``).
        fully_bayesian: Average over SGLD hyperparameter draws (see ``fit_model``).
        constructor_class: The class whose input constructor builds the
            arguments (GIBBON has none of its own and takes qMES's); None for
            ``acqf_class``'s.
        sequential: The acquisition scores one point at a time, so a batch is
            built greedily with the earlier points pending (as BoTorch's MES and
            GIBBON tutorials do).
        late_kwargs: Returns constructor arguments read at each call (from module
            constants that tests shorten).
        warm_start: Start each MAP fit of a run at the hyperparameters of the
            run's previous fit (the first at the kernel's initial values). The
            method then carries state from one iteration to the next: a
            ``WarmStartMethod``, whose ``new_run()`` gives each run its own.
            Not with ``fully_bayesian``.
        **constructor_kwargs: Further arguments of the input constructor.

    Returns:
        The method, a callable ``(train_X, train_Y, bounds, q, seed, options)``.

    Raises:
        ValueError: For ``warm_start`` with ``fully_bayesian``.
    """
    # Resolved here too, so that a class without an input constructor fails
    # when the method is made, not at its first call.
    get_acqf_input_constructor(constructor_class or acqf_class)
    spec = _Spec(
        acqf_class,
        kernel,
        fully_bayesian,
        constructor_class,
        sequential,
        late_kwargs,
        constructor_kwargs,
    )
    if warm_start:
        if fully_bayesian:
            raise ValueError("`warm_start` applies to MAP fits, not `fully_bayesian`.")
        return cast(Method, WarmStartMethod(spec))

    def method(train_X, train_Y, bounds, q, seed, options) -> Tensor:
        candidates, model, fit_seconds = _propose(
            spec, train_X, train_Y, bounds, q, seed, options
        )
        cast(Any, method).timings = {"fit_seconds": fit_seconds}
        cast(Any, method).diagnostics = gp_diagnostics(model)
        return candidates

    # The attributes the loop reads (typed Any: mypy has no function attributes).
    info = cast(Any, method)
    info.diagnostics = {}
    info.timings = {}
    info.sequential = sequential
    return method


def _propose(
    spec: _Spec,
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor,
    q: int,
    seed: int,
    options: Any,
    initial_hyperparameters: dict[str, Tensor] | None = None,
) -> tuple[Tensor, Any, float]:
    # One call of an ``acquisition_method`` method: the candidates, the fitted
    # model and the seconds its fit took.
    seed_i = iteration_seed(seed, train_X)
    torch.manual_seed(seed_i)
    tic = time.monotonic()
    model = fit_model(
        train_X,
        train_Y,
        options,
        kernel=spec.kernel,
        fully_bayesian=spec.fully_bayesian,
        seed=seed_i,
        initial_hyperparameters=initial_hyperparameters,
    )
    fit_seconds = time.monotonic() - tic
    data = SupervisedDataset(
        train_X,
        train_Y,
        feature_names=[f"x{i}" for i in range(train_X.shape[-1])],
        outcome_names=["y"],
    )
    pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
    constructor = get_acqf_input_constructor(spec.constructor_class or spec.acqf_class)
    kwargs = constructor(
        model=model,
        training_data=data,
        bounds=pairs,
        **spec.constructor_kwargs,
        **(spec.late_kwargs() if spec.late_kwargs is not None else {}),
    )
    acqf = spec.acqf_class(**kwargs)
    kwargs = {"raw_samples": options.raw_samples, "sequential": spec.sequential}
    if options.initial_conditions == "bock":
        kwargs = {
            "batch_initial_conditions": bock_initial_conditions(
                acqf, bounds, q, train_X, train_Y, options, seed_i
            )
        }
    elif options.initial_conditions != "botorch":
        choices = ", ".join(INITIAL_CONDITIONS)
        raise ValueError(
            f"unknown initial conditions {options.initial_conditions!r}; "
            f"choose from {choices}"
        )
    with warnings.catch_warnings():
        # L-BFGS-B's occasional "ABNORMAL" line-search exits are retried by
        # optimize_acqf itself; they are not worth a warning per iteration.
        warnings.simplefilter("ignore", OptimizationWarning)
        ignore_optimize_acqf_retry_warnings()
        candidates, _ = optimize_acqf(
            acqf, bounds=bounds, q=q, num_restarts=options.num_restarts, **kwargs
        )
    return candidates.detach(), model, fit_seconds


class WarmStartMethod:
    r"""An ``acquisition_method`` method whose runs warm-start their MAP fits.

    Made by ``acquisition_method(..., warm_start=True)``. Each run
    (``new_run()``) remembers the hyperparameters of its last fit and starts the
    next fit there; the first fit starts at the kernel's initial values, as
    without a warm start. Calling the method itself proposes with a fresh run.

    Example:
        >>> method = acquisition_method(qLogNoisyExpectedImprovement, warm_start=True)
        >>> run = method.new_run()
        >>> X_next = run(train_X, train_Y, bounds, 1, 0, MethodOptions())
    """

    def __init__(self, spec: _Spec) -> None:
        r"""A method proposing as ``spec`` says (see ``acquisition_method``)."""
        self.spec = spec
        self.sequential = spec.sequential
        self.diagnostics: dict = {}
        self.timings: dict = {}

    def new_run(self) -> WarmStartRun:
        r"""A fresh run, with no hyperparameters to start from yet."""
        return WarmStartRun(self.spec)

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        r"""Propose ``q`` points with a fresh run (no warm start)."""
        run = self.new_run()
        candidates = run(train_X, train_Y, bounds, q, seed, options)
        self.diagnostics, self.timings = run.diagnostics, run.timings
        return candidates


class WarmStartRun:
    r"""One run of a ``WarmStartMethod``: its last fit's hyperparameters.

    ``hyperparameters`` maps the model's parameter names to their fitted (raw)
    values after each call, None before the first.
    """

    def __init__(self, spec: _Spec) -> None:
        r"""A run proposing as ``spec`` says, with nothing to start from."""
        self.spec = spec
        self.sequential = spec.sequential
        self.hyperparameters: dict[str, Tensor] | None = None
        self.diagnostics: dict = {}
        self.timings: dict = {}

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        r"""Propose ``q`` points, starting the fit at the previous fit's values."""
        candidates, model, fit_seconds = _propose(
            self.spec,
            train_X,
            train_Y,
            bounds,
            q,
            seed,
            options,
            initial_hyperparameters=self.hyperparameters,
        )
        self.hyperparameters = {
            name: p.detach().clone() for name, p in model.named_parameters()
        }
        self.timings = {"fit_seconds": fit_seconds}
        self.diagnostics = gp_diagnostics(model)
        return candidates
