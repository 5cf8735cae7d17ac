r"""The SVGP methods of [Maus2024eulbo]_ in the runner (``SVGPMethod``).

EULBO or ELBO fitting of an ``EULBOModel`` carried from one iteration to the
next, optionally in a TuRBO trust region.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.exceptions.warnings import OptimizationWarning
from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from botorch_ext.eulbo import (
    AUTHORS_WINDOW,
    EULBO,
    EULBOModel,
    EULBOOptions,
    fit_elbo,
    optimize_eulbo,
    warm_start,
)
from botorch_ext.eulbo.model import MOVED_SETTINGS
from botorch_ext.kernels.utils import kernel_lengthscale
from botorch_ext.optim import ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.options import MethodOptions, seeded_iteration
from botorch_ext.runner.protocol import Proposal
from botorch_ext.runner.transforms import StandardizeOnce
from botorch_ext.runner.turbo import TrustRegion, maximize_qlogei

#: The TuRBO failure tolerance of the authors' released code (``utils/turbo.py``).
AUTHORS_TURBO_FAILURE_TOLERANCE = 32


class SVGPMethod:
    r"""The SVGP methods of [Maus2024eulbo]_: EULBO or ELBO fitting.

    Optionally in a TuRBO trust region.

    A registered object, not a plain function, because these methods carry state
    from one BO iteration to the next: ``new_run()`` returns a fresh run per run (an
    object with ``propose``; ``run_bo`` asks for one), which keeps the previous
    iteration's model and the ``TurboState``. As in Algorithm 1 (Appendix A) of the
    paper, each iteration's SVGP starts from the previous iteration's ``w``
    (inducing points, ``q(u)``, hyperparameters; ``EULBOModel.carry_over``), so the
    new observations enter through the ELBO; the first iteration's ``q(u)`` starts
    at its closed-form optimum. The ELBO is fitted as ``EULBOOptions``'s defaults
    say (``elbo.optimizer="auto"``: L-BFGS on the collapsed bound, on
    ``lbfgs_max_n`` points drawn at random beyond that ``n``). A collapsed trust
    region restarts at its initial length (the data and the model state are kept).
    Each proposal's ``diagnostics`` hold the fitted noise, lengthscales, ELBO and
    (for EULBO) the utility term, which the runner writes into every row of the
    iteration. After a proposal, the run's ``previous`` is the model it fitted (and,
    for EULBO, optimized: ``previous.last_optimization``).

    Example:
        >>> method = SVGPMethod("ei", turbo=True, kernel=svgp_ard_kernel)
        >>> run = method.new_run()
        >>> proposal = run.propose(train_X, train_Y, bounds, 1, 0, MethodOptions())

    Args:
        utility: ``"ei"`` or ``"kg"`` for ``optimize_eulbo``; ``None`` for the
            ELBO baseline (``fit_elbo``, then ``qLogExpectedImprovement`` under
            the SVGP).
        turbo: Restrict proposals to a TuRBO trust region.
        eulbo_options: Deprecated (0.2.0): settings under the flat names of
            0.1.0 (``FLAT_FIELDS``); pass ``options`` instead.
        model_kwargs: Further ``EULBOModel`` arguments of the first model
            (e.g. ``{"carry_state": False}``); ``carry_over`` keeps them.
            Each run gets its own copy. The settings that moved out of the
            model in 0.2.0 (``elbo_scale``, ``utility_weight``,
            ``alternation``) are still read here, with a
            ``DeprecationWarning``, into ``objective`` and ``options``.
        kernel: Makes the SVGP's kernel for ``d``-dimensional inputs (called
            once per run, at its first model; ``carry_over`` copies it on);
            ``None`` for ``EULBOModel``'s default. The runner's registered
            methods pass ``svgp_ard_kernel``.
        preset: ``"authors"`` runs the loop of the authors' released code
            (``EULBOOptions.authors``): the per-datum ELBO of the last
            ``AUTHORS_WINDOW`` points with the incumbent over all of them,
            their Adam fits and ``"adam-epochs"`` joint phase (no rollback),
            ``qExpectedImprovement`` with observation noise as the warm start
            and as the ELBO baseline's proposal, ``ScaleKernel(RBFKernel())``
            and ``GaussianLikelihood()`` without priors, and outcomes
            standardized once by the initial design (``StandardizeOnce``), and,
            with ``turbo``, their trust region: a failure tolerance of 32
            batches and a plain cube (no lengthscale weighting).
            ``eulbo_options``, ``model_kwargs``, ``kernel``, ``options`` and
            ``objective`` must then be left out, and the runner's
            ``num_restarts`` and ``raw_samples`` give way to the preset's 10
            and 256. None (the default): the
            package's own settings.
        options: The ``EULBOOptions`` of ``fit_elbo`` and ``optimize_eulbo``;
            the runner's ``num_restarts`` and ``raw_samples`` replace their
            ``warm_start`` budget. ``EULBOOptions()`` if None.
        objective: The ``EULBO`` objective; ``EULBO()`` if None.
    """

    model_based = True
    sequential = False
    gaussian_posterior = False
    standardizes_outcomes = True
    carries_state = True

    def __init__(
        self,
        utility: str | None,
        turbo: bool = False,
        eulbo_options: dict[str, Any] | None = None,
        model_kwargs: dict[str, Any] | None = None,
        kernel: Callable[[int], Kernel] | None = None,
        preset: str | None = None,
        options: EULBOOptions | None = None,
        objective: EULBO | None = None,
    ) -> None:
        r"""Store the settings; see the class docstring for the args."""
        if preset not in (None, "authors"):
            raise ValueError(f"`preset` must be None or 'authors', got {preset!r}.")
        given = eulbo_options or model_kwargs or kernel or options or objective
        if preset is not None and given:
            raise ValueError(
                "`preset='authors'` sets the options, model and kernel itself; "
                "leave out `eulbo_options`, `model_kwargs`, `kernel`, `options` "
                "and `objective`."
            )
        self.utility = utility
        self.kernel = kernel
        self.turbo = turbo
        self.model_kwargs = dict(model_kwargs or {})
        self.eulbo_options = dict(eulbo_options or {})
        moved = sorted(set(self.model_kwargs) & set(MOVED_SETTINGS))
        if self.eulbo_options or moved:
            warnings.warn(
                "SVGPMethod(eulbo_options=...) with the flat names of 0.1.0 and "
                f"model_kwargs with the settings {moved} are deprecated: "
                "EULBOModel holds no fit settings since 0.2.0; pass "
                "options=EULBOOptions(...) and objective=EULBO(...).",
                DeprecationWarning,
                stacklevel=2,
            )
        self.options, self.objective = options, objective
        self.preset = preset

    def new_run(self) -> _SVGPRun:
        r"""A fresh run that carries its model from one iteration to the next."""
        # A copy per run: a kernel passed as `covar_module` holds fitted state.
        if self.preset == "authors":
            return _AuthorsSVGPRun(self.utility, self.turbo)
        model_kwargs = copy.deepcopy(self.model_kwargs)
        options, objective = _settings(
            self.options, self.objective, self.eulbo_options, model_kwargs
        )
        return _SVGPRun(
            self.utility, self.turbo, options, objective, model_kwargs, self.kernel
        )


def _settings(
    options: EULBOOptions | None,
    objective: EULBO | None,
    flat: dict[str, Any],
    model_kwargs: dict[str, Any],
) -> tuple[EULBOOptions, EULBO]:
    r"""The run's options and objective, the deprecated forms folded in.

    ``flat``: settings under the flat names of 0.1.0; ``model_kwargs``: the
    settings that ``EULBOModel`` took before 0.2.0 are popped from it.
    """
    options = EULBOOptions() if options is None else options
    objective = EULBO() if objective is None else objective
    if flat:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            options = options.replace(**flat)
    moved = {k: model_kwargs.pop(k) for k in list(model_kwargs) if k in MOVED_SETTINGS}
    if "options" in moved:
        options = moved["options"]
    if "alternation" in moved:
        joint = dataclasses.replace(options.joint, alternation=moved["alternation"])
        options = options.replace(joint=joint)
    fields = ("elbo_scale", "utility_weight", "incumbent")
    changes = {k: moved[k] for k in fields if k in moved}
    return options, dataclasses.replace(objective, **changes) if changes else objective


class _SVGPRun(TrustRegion):
    #: ``SVGPMethod``'s ``preset`` of the run (None: the package's settings).
    preset: str | None = None

    def __init__(
        self,
        utility: str | None,
        turbo: bool,
        settings: EULBOOptions | None = None,
        objective: EULBO | None = None,
        model_kwargs: dict[str, Any] | None = None,
        kernel: Callable[[int], Kernel] | None = None,
    ) -> None:
        super().__init__()
        self.kernel = kernel
        self.utility = utility
        self.turbo = turbo
        self.base_options = EULBOOptions() if settings is None else settings
        #: The options and objective of the last proposal.
        self.options = self.base_options
        self.objective = EULBO() if objective is None else objective
        self.model_kwargs = model_kwargs or {}
        self.previous: EULBOModel | None = None

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        with seeded_iteration(seed, train_X) as seed_i:
            tic = time.monotonic()
            if self.previous is None:
                kernel_kwargs = {}
                if self.kernel is not None:
                    kernel_kwargs["covar_module"] = self.kernel(train_X.shape[-1])
                model = EULBOModel(
                    train_X,
                    train_Y,
                    num_inducing_points=options.num_inducing_points,
                    **self.model_kwargs,
                    **kernel_kwargs,
                )
            else:
                model = self.previous.carry_over(train_X, train_Y)
            settings = self.base_options.replace(
                warm_start=dataclasses.replace(
                    self.base_options.warm_start,
                    num_restarts=options.num_restarts,
                    raw_samples=options.raw_samples,
                )
            )
            self.options = settings
            region = bounds
            if self.turbo:
                # The box's lengthscales come from the previous fit (or the prior's
                # start at the first iteration), as in the TuRBO tutorial.
                lengthscale = kernel_lengthscale(model.model.covar_module)
                region = self._trust_region(train_X, train_Y, bounds, q, lengthscale)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizationWarning)
                ignore_optimize_acqf_retry_warnings()
                if self.utility is None:
                    fit_elbo(model, settings, self.objective, seed=seed_i)
                    fit_seconds = time.monotonic() - tic
                    candidates = maximize_qlogei(
                        model,
                        train_Y,
                        region,
                        q,
                        options,
                        max_iter=settings.warm_start.max_iter,
                    )
                else:
                    # EULBO fits the SVGP jointly with the proposal: only setting up
                    # the model counts as fitting, the joint optimization as
                    # acquisition.
                    fit_seconds = time.monotonic() - tic
                    candidates, _ = optimize_eulbo(
                        model,
                        region,
                        q=q,
                        utility=self.utility,
                        seed=seed_i,
                        options=settings,
                        objective=self.objective,
                    )
            diagnostics = model.diagnostics()
            if self.utility is None and q == 1:
                # The same utility term EULBO maximizes, for comparison in the logs.
                with torch.no_grad():
                    diagnostics["utility"] = self.objective.expected_log_utility(
                        model,
                        candidates.detach().unsqueeze(0),
                        num_quadrature_points=settings.utility.num_quadrature_points,
                    ).item()
            self.previous = model
            self.n_seen = train_Y.shape[0]
            self.last_region = region
            return Proposal(candidates.detach(), fit_seconds, diagnostics)


class _AuthorsSVGPRun(_SVGPRun):
    r"""A run of the authors' loop (``SVGPMethod(preset="authors")``)."""

    preset = "authors"

    def __init__(self, utility: str | None, turbo: bool) -> None:
        super().__init__(utility, turbo)
        # Their TuRBO: a failure tolerance of 32 batches, a plain cube.
        self.failure_tolerance = AUTHORS_TURBO_FAILURE_TOLERANCE
        arm = "elbo" if utility is None else "eulbo"
        self.options = EULBOOptions.authors(arm=arm)
        self.outcome_transform = StandardizeOnce(m=1)

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        with seeded_iteration(seed, train_X) as seed_i:
            tic = time.monotonic()
            if self.previous is None:
                # Standardized once, by the initial design (all of it).
                self.outcome_transform.train()
                self.outcome_transform(train_Y)
            X, Y = train_X[-AUTHORS_WINDOW:], train_Y[-AUTHORS_WINDOW:]
            # The per-datum ELBO of the window, the incumbent over all the data.
            objective = EULBO(elbo_scale="mean", incumbent=float(train_Y.max()))
            self.objective = objective
            if self.previous is None:
                model = EULBOModel(
                    X,
                    Y,
                    num_inducing_points=options.num_inducing_points,
                    outcome_transform=self.outcome_transform,
                    covar_module=ScaleKernel(RBFKernel()).to(train_X),
                    likelihood=GaussianLikelihood().to(train_X),
                )
                # q(u) starts as in the authors' code: GPyTorch initializes it from
                # the prior at the first training step (not at its optimum).
                strategy = model.model.variational_strategy
                strategy.variational_params_initialized.fill_(0)
            else:
                model = self.previous.carry_over(X, Y)
            region = bounds
            if self.turbo:
                region = self._trust_region(train_X, train_Y, bounds, q, None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizationWarning)
                ignore_optimize_acqf_retry_warnings()
                if self.utility is None:
                    fit_elbo(model, self.options, objective, seed=seed_i)
                    fit_seconds = time.monotonic() - tic
                    candidates = warm_start(
                        model,
                        region,
                        q,
                        seed_i,
                        options=self.options,
                        objective=objective,
                    )
                else:
                    fit_seconds = time.monotonic() - tic
                    candidates, _ = optimize_eulbo(
                        model,
                        region,
                        q=q,
                        utility=self.utility,
                        seed=seed_i,
                        options=self.options,
                        objective=objective,
                    )
            diagnostics = model.diagnostics()
            self.previous = model
            self.n_seen = train_Y.shape[0]
            self.last_region = region
            return Proposal(candidates.detach(), fit_seconds, diagnostics)
