r"""TuRBO in the runner.

The trust-region state the ``turbo*`` methods carry from one iteration to the next
(``TrustRegion``), and ``TurboMethod``, TuRBO with an exact GP [Eriksson2019turbo]_.
"""

from __future__ import annotations

import time
import warnings

from botorch.acquisition.logei import qLogExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.models.model import Model
from botorch.optim.optimize import optimize_acqf
from torch import Tensor

from botorch_ext.optim import TurboState, ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.fitting import fit_model, gp_diagnostics
from botorch_ext.runner.options import MethodOptions, seeded_iteration
from botorch_ext.runner.protocol import Proposal


def maximize_qlogei(
    model: Model,
    train_Y: Tensor,
    region: Tensor,
    q: int,
    options: MethodOptions,
    max_iter: int | None = None,
) -> Tensor:
    r"""``q`` maximizers of qLogEI (incumbent ``train_Y.max()``) in ``region``.

    Example:
        >>> X_next = maximize_qlogei(model, train_Y, region, 2, MethodOptions())

    Args:
        model: A fitted model.
        train_Y: ``n x 1`` outcomes (maximization sign).
        region: ``2 x d`` box to search (a trust region or the whole box).
        q: Batch size.
        options: Supplies ``num_restarts`` and ``raw_samples``.
        max_iter: L-BFGS-B iterations per restart; None keeps BoTorch's limit.

    Returns:
        A ``q x d`` tensor.
    """
    acqf = qLogExpectedImprovement(model, best_f=train_Y.max())
    candidates, _ = optimize_acqf(
        acqf,
        bounds=region,
        q=q,
        num_restarts=options.num_restarts,
        raw_samples=options.raw_samples,
        options=None if max_iter is None else {"maxiter": max_iter},
    )
    return candidates


class TrustRegion:
    r"""Run state of a TuRBO method: the ``TurboState`` and the rows seen.

    The base class of the runs of ``TurboMethod`` and of the ``turbo-*`` SVGP
    methods, which share its trust-region rules: the first call starts a
    ``TurboState`` (with ``failure_tolerance``, or TurboState's default), later
    calls update it with the rows added since, and a
    collapsed region restarts at its initial length, keeping the best value.

    Example:
        >>> class _Run(TrustRegion):
        ...     def propose(self, train_X, train_Y, bounds, q, seed, options):
        ...         region = self._trust_region(train_X, train_Y, bounds, q, ls)
        ...         self.n_seen = train_Y.shape[0]
        ...         return Proposal(maximize_qlogei(model, train_Y, region, q, options))
    """

    def __init__(self, failure_tolerance: int | None = None) -> None:
        self.state: TurboState | None = None
        self.n_seen = 0
        # None: TurboState's default, ceil(max(4 / q, d / q)).
        self.failure_tolerance = failure_tolerance

    def _new_state(self, dim: int, q: int) -> TurboState:
        return TurboState(
            dim=dim, batch_size=q, failure_tolerance=self.failure_tolerance
        )

    def _trust_region(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        lengthscale: Tensor | None,
    ) -> Tensor:
        if self.state is None:
            self.state = self._new_state(train_X.shape[-1], q)
            self.state.update(train_Y)
        elif train_Y.shape[0] > self.n_seen:
            self.state.update(train_Y[self.n_seen :])
        if self.state.restart_triggered:
            best = self.state.best_value
            self.state = self._new_state(train_X.shape[-1], q)
            self.state.best_value = best
        x_best = train_X[train_Y.squeeze(-1).argmax()]
        # The box lives in the unit cube; map it into the problem's bounds.
        unit = self.state.bounds(
            (x_best - bounds[0]) / (bounds[1] - bounds[0]), lengthscale=lengthscale
        ).to(bounds)
        return bounds[0] + unit * (bounds[1] - bounds[0])


class TurboMethod:
    r"""TuRBO with an exact GP [Eriksson2019turbo]_.

    BoTorch's default ``SingleTaskGP`` (MAP) and ``qLogExpectedImprovement`` in a trust
    region.

    The exact-GP baseline of [Maus2024eulbo]_'s TuRBO experiments (used while
    ``n`` allows an exact GP). Same trust-region rules as the ``turbo-*`` SVGP
    methods; each run keeps its own ``TurboState`` (``new_run()``).
    """

    model_based = True
    sequential = False
    gaussian_posterior = False
    standardizes_outcomes = False
    carries_state = True

    def new_run(self) -> _TurboExactRun:
        """Return a fresh run with its own ``TurboState``."""
        return _TurboExactRun()


class _TurboExactRun(TrustRegion):
    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        with seeded_iteration(seed, train_X):
            tic = time.monotonic()
            model = fit_model(train_X, train_Y, options)
            fit_seconds = time.monotonic() - tic
            region = self._trust_region(
                train_X, train_Y, bounds, q, model.covar_module.lengthscale
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizationWarning)
                ignore_optimize_acqf_retry_warnings()
                candidates = maximize_qlogei(model, train_Y, region, q, options)
            self.n_seen = train_Y.shape[0]
            self.last_region = region
            return Proposal(candidates.detach(), fit_seconds, gp_diagnostics(model))
