r"""The runner's acquisition-function methods.

``acquisition_method`` turns an acquisition class into a method (fit the model, build
the acquisition with BoTorch's input constructor, maximize it with ``optimize_acqf``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
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


def acquisition_method(
    acqf_class,
    kernel: str = "default",
    fully_bayesian: bool = False,
    constructor_class=None,
    sequential: bool = False,
    late_kwargs: Callable[[], dict] | None = None,
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
        **constructor_kwargs: Further arguments of the input constructor.

    Returns:
        The method, a callable ``(train_X, train_Y, bounds, q, seed, options)``.
    """
    constructor = get_acqf_input_constructor(constructor_class or acqf_class)

    def method(train_X, train_Y, bounds, q, seed, options) -> Tensor:
        seed_i = iteration_seed(seed, train_X)
        torch.manual_seed(seed_i)
        tic = time.monotonic()
        model = fit_model(
            train_X,
            train_Y,
            options,
            kernel=kernel,
            fully_bayesian=fully_bayesian,
            seed=seed_i,
        )
        cast(Any, method).timings = {"fit_seconds": time.monotonic() - tic}
        data = SupervisedDataset(
            train_X,
            train_Y,
            feature_names=[f"x{i}" for i in range(train_X.shape[-1])],
            outcome_names=["y"],
        )
        pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
        kwargs = constructor(
            model=model,
            training_data=data,
            bounds=pairs,
            **constructor_kwargs,
            **(late_kwargs() if late_kwargs is not None else {}),
        )
        acqf = acqf_class(**kwargs)
        kwargs = {"raw_samples": options.raw_samples, "sequential": sequential}
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
        cast(Any, method).diagnostics = gp_diagnostics(model)
        return candidates.detach()

    # The attributes the loop reads (typed Any: mypy has no function attributes).
    info = cast(Any, method)
    info.diagnostics = {}
    info.timings = {}
    info.sequential = sequential
    return method
