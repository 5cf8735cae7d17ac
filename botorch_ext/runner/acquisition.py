r"""The runner's acquisition-function methods.

``acquisition_method`` turns an acquisition class into a method, an
``AcquisitionMethod`` (fit the model, build the acquisition with BoTorch's input
constructor, maximize it with ``optimize_acqf``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.exceptions.warnings import OptimizationWarning
from botorch.models import SingleTaskGP
from botorch.optim.optimize import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from botorch_ext.optim import ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.fitting import KernelSpec, fit_model, gp_diagnostics
from botorch_ext.runner.initial_conditions import (
    INITIAL_CONDITIONS,
    bock_initial_conditions,
)
from botorch_ext.runner.options import MethodOptions, seeded_iteration
from botorch_ext.runner.protocol import Proposal

#: L-BFGS-B's ``ftol`` of the acquisition maximization in the runner's ``bock``
#: (SciPy's default is about 2.2e-9), passed as ``optimize_acqf``'s ``options``
#: ``{"ftol": BOCK_ACQF_FTOL, "factr": None}`` (BoTorch's batched L-BFGS-B takes
#: ``ftol`` only without ``factr``). Near the center BOCK's posterior mean has a
#: cusp (the warped radius grows as ``rho^alpha``), where restarts otherwise spend
#: tens of iterations on relative gains below this; measured with the same
#: regret on Rosenbrock-20 (the BOCK page of the documentation, under its cost).
BOCK_ACQF_FTOL = 1e-6


@dataclass
class _Spec:
    # What a method of ``acquisition_method`` proposes with (picklable, so that
    # a warm-started run's state can be saved).
    acqf_class: type[AcquisitionFunction]
    kernel: KernelSpec
    fully_bayesian: bool
    constructor_class: type[AcquisitionFunction] | None
    sequential: bool
    late_kwargs: Callable[[], dict[str, Any]] | None
    constructor_kwargs: dict[str, Any] = field(default_factory=dict)
    fit_options: dict[str, Any] | None = None
    acqf_options: dict[str, Any] | None = None


def acquisition_method(
    acqf_class: type[AcquisitionFunction],
    kernel: KernelSpec = "default",
    fully_bayesian: bool = False,
    constructor_class: type[AcquisitionFunction] | None = None,
    sequential: bool = False,
    late_kwargs: Callable[[], dict[str, Any]] | None = None,
    warm_start: bool = False,
    gaussian_posterior: bool = False,
    fit_options: dict[str, Any] | None = None,
    acqf_options: dict[str, Any] | None = None,
    **constructor_kwargs: Any,
) -> AcquisitionMethod:
    r"""A runner method: fit a ``SingleTaskGP``, maximize an acquisition function.

    The acquisition function is built by BoTorch's registered input constructor (as Ax
    builds it).

    Each proposal fits the model on the run's data (``fit_model``), builds the
    acquisition function and returns ``optimize_acqf``'s batch, with the model
    fit's seconds and the fitted model's state (``gp_diagnostics``) in its
    ``Proposal``.

    Example:
        >>> qlogei = acquisition_method(qLogNoisyExpectedImprovement, kernel="bock")
        >>> qlogei.new_run().propose(train_X, train_Y, bounds, 2, 0, MethodOptions())

    Args:
        acqf_class: The acquisition function's class.
        kernel: The model's covariance (see ``fit_model``): a name in
            ``KERNELS``, a kernel, or a function of the dimension returning
            ``(covar_module, input_transform)``.
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
            method's runs then carry state from one iteration to the next
            (``carries_state``). Not with ``fully_bayesian``.
        gaussian_posterior: The acquisition needs a Gaussian posterior (the
            entropy searches): the method's flag.
        fit_options: Options of the MAP fit's L-BFGS-B (see ``fit_model``), e.g.
            a looser ``ftol``; None for BoTorch's defaults. Not with
            ``fully_bayesian``.
        acqf_options: ``optimize_acqf``'s ``options`` (its L-BFGS-B's, e.g.
            ``{"ftol": 1e-6, "factr": None}``: BoTorch's batched L-BFGS-B takes
            ``ftol`` only with ``factr`` None); None for BoTorch's defaults.
        **constructor_kwargs: Further arguments of the input constructor.

    Returns:
        The method (see ``botorch_ext.runner.protocol``).

    Raises:
        ValueError: For ``warm_start`` or ``fit_options`` with ``fully_bayesian``.
    """
    # Resolved here too, so that a class without an input constructor fails
    # when the method is made, not at its first call.
    get_acqf_input_constructor(constructor_class or acqf_class)
    if warm_start and fully_bayesian:
        raise ValueError("`warm_start` applies to MAP fits, not `fully_bayesian`.")
    if fit_options is not None and fully_bayesian:
        raise ValueError("`fit_options` apply to MAP fits, not `fully_bayesian`.")
    spec = _Spec(
        acqf_class,
        kernel,
        fully_bayesian,
        constructor_class,
        sequential,
        late_kwargs,
        constructor_kwargs,
        None if fit_options is None else dict(fit_options),
        None if acqf_options is None else dict(acqf_options),
    )
    return AcquisitionMethod(spec, warm_start, gaussian_posterior)


def _propose(
    spec: _Spec,
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor,
    q: int,
    seed: int,
    options: MethodOptions,
    initial_hyperparameters: dict[str, Tensor] | None = None,
) -> tuple[Tensor, SingleTaskGP, float]:
    # One call of an ``acquisition_method`` method: the candidates, the fitted
    # model and the seconds its fit took.
    with seeded_iteration(seed, train_X) as seed_i:
        tic = time.monotonic()
        model = fit_model(
            train_X,
            train_Y,
            options,
            kernel=spec.kernel,
            fully_bayesian=spec.fully_bayesian,
            seed=seed_i,
            initial_hyperparameters=initial_hyperparameters,
            fit_options=spec.fit_options,
        )
        fit_seconds = time.monotonic() - tic
        data = SupervisedDataset(
            train_X,
            train_Y,
            feature_names=[f"x{i}" for i in range(train_X.shape[-1])],
            outcome_names=["y"],
        )
        pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
        constructor = get_acqf_input_constructor(
            spec.constructor_class or spec.acqf_class
        )
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
            if spec.acqf_options is not None:
                kwargs["options"] = dict(spec.acqf_options)
            candidates, _ = optimize_acqf(
                acqf, bounds=bounds, q=q, num_restarts=options.num_restarts, **kwargs
            )
        return candidates.detach(), model, fit_seconds


class AcquisitionMethod:
    r"""A method made by ``acquisition_method``: fit a GP, maximize an acquisition.

    Its runs are ``AcquisitionRun`` objects, or ``WarmStartRun`` ones (which
    start each MAP fit at the previous fit's hyperparameters) with
    ``warm_start``.

    Args:
        spec: What the method proposes with (see ``acquisition_method``).
        warm_start: Whether its runs warm-start their fits.
        gaussian_posterior: The method's flag (see ``botorch_ext.runner.protocol``).
    """

    model_based = True
    standardizes_outcomes = False

    def __init__(
        self, spec: _Spec, warm_start: bool = False, gaussian_posterior: bool = False
    ) -> None:
        r"""A method proposing as ``spec`` says; see the class docstring."""
        self.spec = spec
        self.sequential = spec.sequential
        self.gaussian_posterior = gaussian_posterior
        self.carries_state = warm_start

    def new_run(self) -> AcquisitionRun:
        r"""A fresh run (with no hyperparameters to start from yet)."""
        if self.carries_state:
            return WarmStartRun(self.spec)
        return AcquisitionRun(self.spec)


class AcquisitionRun:
    r"""One run of an ``AcquisitionMethod``: each proposal fits afresh."""

    def __init__(self, spec: _Spec) -> None:
        r"""A run proposing as ``spec`` says."""
        self.spec = spec

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        r"""Fit the model, maximize the acquisition: the batch and its fit."""
        candidates, model, fit_seconds = _propose(
            self.spec, train_X, train_Y, bounds, q, seed, options
        )
        return Proposal(candidates, fit_seconds, gp_diagnostics(model))


class WarmStartRun(AcquisitionRun):
    r"""A run of a warm-started ``AcquisitionMethod``: its last fit's hyperparameters.

    ``hyperparameters`` maps the model's parameter names to their fitted (raw)
    values after each proposal, None before the first.
    """

    def __init__(self, spec: _Spec) -> None:
        r"""A run proposing as ``spec`` says, with nothing to start from."""
        super().__init__(spec)
        self.hyperparameters: dict[str, Tensor] | None = None

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
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
        return Proposal(candidates, fit_seconds, gp_diagnostics(model))
