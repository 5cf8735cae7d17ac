r"""One Bayesian-optimization run: initial design, then batches of ``q`` proposals.

Data path: problem + method + seed -> initial design (or the stored rows on
resume) -> loop (fit, propose, evaluate, append row with the point and timings)
-> rows, each handed to ``on_row`` as soon as it exists so that an interrupted
run keeps what it evaluated.

This module is over 500 lines because it holds one run end to end: its settings
(``RunConfig`` and their validation), its initial design, its resume state and its
loop, which change together; strict type annotations and the docstrings of the
public functions make up the rest.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from botorch.utils.sampling import draw_sobol_samples

from botorch_ext.runner.checkpoint import load_state, save_state
from botorch_ext.runner.errors import ArgumentError
from botorch_ext.runner.evaluation import (
    EvaluationFailed,
    Evaluator,
    FaultPolicy,
    Outcome,
)
from botorch_ext.runner.initial_conditions import INITIAL_CONDITIONS
from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import Problem, get_problem
from botorch_ext.runner.protocol import Run
from botorch_ext.runner.schema import (
    FAILED,
    OK,
    Empty,
    Row,
    RowDict,
    diagnostic_fields,
    stored_points,
    x_columns,
)
from botorch_ext.runner.signals import holding_interrupts
from botorch_ext.runner.transforms import OUTCOME_TRANSFORMS

INITS = ("sobol", "center", "uniform")


@dataclass(frozen=True)
class RunConfig:
    r"""Everything that determines one run (and is written to ``config.json``).

    Args:
        problem: A registered problem name.
        method: A registered method name.
        budget: Total number of evaluations, initial design included.
        dim: Problem dimension (the problem's default if None).
        n_init: Size of the initial design.
        q: Batch size of each proposal.
        seed: Seed of the initial design and of the method.
        init: ``"sobol"``, ``"center"`` (the cube's centre plus ``n_init - 1``
            Sobol points, the BOCK paper's start) or ``"uniform"`` (i.i.d.
            uniform points, the EULBO paper's start).
        options: Settings of the model-based methods.
    """

    problem: str
    method: str
    budget: int
    dim: int | None = None
    n_init: int = 10
    q: int = 1
    seed: int = 0
    init: str = "sobol"
    options: MethodOptions = field(default_factory=MethodOptions)

    def validate(self) -> None:
        r"""Raise ``ArgumentError`` naming the argument for any bad setting.

        ``ArgumentError`` is a ``ValueError``.
        """
        get_problem(self.problem, self.dim)
        get_method(self.method)
        if self.q < 1:
            raise ArgumentError("q", f"q must be >= 1, got {self.q}")
        if self.n_init < 1:
            raise ArgumentError("n_init", f"n_init must be >= 1, got {self.n_init}")
        if self.options.num_inducing_points < 1:
            raise ArgumentError(
                "options.num_inducing_points",
                "options.num_inducing_points must be >= 1, got "
                f"{self.options.num_inducing_points}",
            )
        if self.budget < self.n_init:
            raise ArgumentError(
                "budget",
                f"budget ({self.budget}) must be at least the initial design "
                f"(n_init = {self.n_init})",
            )
        self._validate_method_options()
        if self.init not in INITS:
            raise ArgumentError(
                "init", f"unknown init {self.init!r}; choose from {', '.join(INITS)}"
            )

    def _validate_method_options(self) -> None:
        method = get_method(self.method)
        transform = self.options.outcome_transform
        name = "options.outcome_transform"
        if method.gaussian_posterior and transform != "standardize":
            raise ArgumentError(
                name,
                f"method {self.method!r} needs a Gaussian posterior; use "
                f"{name}='standardize'",
            )
        conditions = self.options.initial_conditions
        if method.sequential and conditions != "botorch":
            raise ArgumentError(
                "options.initial_conditions",
                f"method {self.method!r} builds its batch point by point, which "
                f"takes no options.initial_conditions='{conditions}'; use "
                "options.initial_conditions='botorch'",
            )
        if method.standardizes_outcomes and transform != "standardize":
            raise ArgumentError(
                name,
                f"method {self.method!r} standardizes its outcomes itself; use "
                f"{name}='standardize'",
            )
        if conditions not in INITIAL_CONDITIONS:
            raise ArgumentError(
                "options.initial_conditions",
                f"unknown initial conditions {conditions!r}; choose from "
                f"{', '.join(INITIAL_CONDITIONS)}",
            )
        if transform not in OUTCOME_TRANSFORMS:
            raise ArgumentError(
                name,
                f"unknown outcome transform {transform!r}; choose from "
                f"{', '.join(OUTCOME_TRANSFORMS)}",
            )
        problem = get_problem(self.problem, self.dim)
        if transform == "log" and problem.optimal_value < 0:
            raise ArgumentError(
                name,
                f"{name}='log' needs a positive objective, but {self.problem} "
                f"reaches {problem.optimal_value:g}; use {name}='standardize' or "
                f"{name}='bilog'",
            )

    def to_dict(self) -> dict[str, Any]:
        r"""A JSON-serializable view, with the resolved dimension."""
        out = asdict(self)
        out["dim"] = get_problem(self.problem, self.dim).dim
        return out


def initial_design(dim: int, n_init: int, seed: int, init: str) -> torch.Tensor:
    r"""The ``n_init x dim`` initial design in the unit cube.

    Args:
        dim: The dimension.
        n_init: Number of points.
        seed: Seed of the scrambled Sobol sequence.
        init: ``"sobol"``, ``"center"`` (centre first, then Sobol points) or
            ``"uniform"`` (i.i.d. uniform points, the EULBO paper's start).

    Returns:
        An ``n_init x dim`` float64 tensor.
    """
    if init == "uniform":
        gen = torch.Generator().manual_seed(seed)
        return torch.rand(n_init, dim, generator=gen, dtype=torch.double)
    bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).double()
    X = draw_sobol_samples(bounds=bounds, n=n_init, q=1, seed=seed).squeeze(-2)
    if init == "center":
        X = torch.cat([torch.full((1, dim), 0.5, dtype=X.dtype), X[: n_init - 1]])
    return X


class _Data:
    # The run's rows and the data its method sees: model-based methods get the
    # successful evaluations only; model-free ones (which ignore the values) get
    # every point, so that a failed point does not make them propose it again.

    def __init__(self, dim: int, model_based: bool) -> None:
        self.dim, self.model_based = dim, model_based
        self.rows: list[RowDict] = []
        self.X = torch.empty(0, dim, dtype=torch.double)
        self.Y = torch.empty(0, 1, dtype=torch.double)
        self.ok = torch.empty(0, dtype=torch.bool)
        self.best = float("inf")

    def add(self, row: RowDict) -> None:
        self.rows.append(row)
        point = [[row[c] for c in x_columns(self.dim)]]
        ok = row["status"] == OK
        value = -row["value"] if ok else math.nan
        self.X = torch.cat([self.X, torch.tensor(point, dtype=torch.double)])
        self.Y = torch.cat([self.Y, torch.tensor([[value]], dtype=torch.double)])
        self.ok = torch.cat([self.ok, torch.tensor([ok])])
        if ok:
            self.best = min(self.best, row["value"])

    def training_data(self) -> tuple[torch.Tensor, torch.Tensor, bool]:
        r"""``(X, Y, model_based)`` for the next proposal.

        A model-based method without a single successful point is replaced by Sobol
        points.
        """
        if not self.model_based:
            return self.X, self.Y, False
        if not bool(self.ok.any()):
            return self.X, self.Y, False
        return self.X[self.ok], self.Y[self.ok], True


@dataclass
class _Batch:
    # One proposal and its bookkeeping.
    iteration: int
    size: int
    n_stored: int
    candidates: torch.Tensor | None = None
    fit_seconds: float = 0.0
    acq_seconds: float = 0.0
    diagnostics: dict[str, Any] | None = None


def _propose(
    config: RunConfig, run: Run, data: _Data, batch: _Batch, problem: Problem
) -> None:
    if batch.iteration == 0:
        batch.candidates = initial_design(
            problem.dim, config.n_init, config.seed, config.init
        )
        return
    X, Y, model_based = data.training_data()
    if not model_based and data.model_based:  # no success yet: Sobol points
        run = get_method("sobol").new_run()
    tic = time.monotonic()
    proposal = run.propose(
        X, Y, problem.bounds, batch.size, config.seed, config.options
    )
    total = time.monotonic() - tic
    batch.candidates = proposal.candidates.clamp(0.0, 1.0).to(data.X)
    # The rest of the call, beyond the model fit, is acquisition work.
    batch.fit_seconds = float(proposal.fit_seconds)
    batch.acq_seconds = max(total - batch.fit_seconds, 0.0)
    batch.diagnostics = proposal.diagnostics


def _take_stored(
    config: RunConfig,
    data: _Data,
    batch: _Batch,
    stored: list[RowDict],
    warned: bool,
) -> bool:
    # Appends the batch's stored rows; warns (once) if the replayed proposal
    # differs from them. Returns whether a warning has been given.
    n = len(data.rows)
    old = stored[n : n + batch.n_stored]
    if batch.candidates is not None and old and not warned:
        old_X = torch.tensor(
            [[r[c] for c in x_columns(data.dim)] for r in old], dtype=torch.double
        )
        if not torch.equal(batch.candidates[: batch.n_stored], old_X):
            warnings.warn(
                f"{config.method} seed {config.seed}: the proposals replayed on "
                f"resume differ from the stored points at iteration "
                f"{batch.iteration} (another torch thread count or machine?); the "
                "stored points are kept, later rows may differ from an uncut run",
                RuntimeWarning,
                stacklevel=3,
            )
            warned = True
    for row in old:
        data.add(row)
    return warned


def _new_rows(
    config: RunConfig,
    problem: Problem,
    data: _Data,
    batch: _Batch,
    new_X: torch.Tensor,
    results: list[Outcome],
    times: tuple[float, float],
) -> list[RowDict]:
    # The rows of one evaluated batch (added to ``data``), one timestamp each.
    eval_seconds, seconds = times
    extra = diagnostic_fields(batch.diagnostics)
    out = []
    for j, (x, outcome) in enumerate(zip(new_X.tolist(), results, strict=True)):
        if outcome.value is not None:  # outcome.ok
            data.best = min(data.best, outcome.value)
        best: float | Empty = data.best if math.isfinite(data.best) else ""
        row = Row(
            problem=problem.name,
            dim=problem.dim,
            method=config.method,
            seed=config.seed,
            n_evals=len(data.rows) + 1,
            iteration=batch.iteration,
            batch_position=batch.n_stored + j,
            value="" if outcome.value is None else outcome.value,
            status=OK if outcome.ok else FAILED,
            error=outcome.error,
            best_value=best,
            regret=(
                "" if isinstance(best, str) else max(best - problem.optimal_value, 0.0)
            ),
            seconds=seconds,
            fit_seconds=batch.fit_seconds,
            acq_seconds=batch.acq_seconds,
            eval_seconds=eval_seconds,
            init=config.init,
            outcome_transform=config.options.outcome_transform,
            **extra,
            point=tuple(x),
        ).to_dict()
        data.add(row)
        out.append(row)
    return out


def run_bo(
    config: RunConfig,
    on_row: Callable[[RowDict], object] | None = None,
    stored_rows: list[RowDict] | None = None,
    should_stop: Callable[[], bool] | None = None,
    faults: FaultPolicy | None = None,
    state_path: str | os.PathLike[str] | None = None,
) -> list[RowDict]:
    r"""Run one BO loop and return one row per evaluation.

    With ``stored_rows`` (the rows of an interrupted attempt of the same run) the
    run continues from them: their points and values become the run's data,
    nothing they hold is evaluated again, and since every method seeds each
    iteration from ``config.seed`` and the number of points so far, the rows that
    follow are those of an uncut run (at the same torch thread count). Methods
    that carry state between iterations (``carries_state``) need that state back:
    with ``state_path`` it is saved after every batch and a resume takes it from
    there (``checkpoint``); without one, or for the batches stored after the
    saved state, the method's calls are replayed on the stored data (proposals
    discarded, nothing evaluated), which costs their compute again. A batch cut
    short is completed by re-proposing it and evaluating only its missing points.

    A failed evaluation (see ``evaluation``) is a row with ``status`` ``failed``
    and an empty value. It never enters a model or the best value: model-based
    methods are fitted to the successful rows only (so a deterministic method may
    propose a failed point again; each try costs budget), model-free ones
    (``sobol``, ``random``) continue past every point. Until the first success a
    model-based method proposes Sobol points instead. What happens after a
    failure is ``faults.on_error``.

    With ``should_stop`` the run can be stopped from outside (the Dask backend's
    cooperative stop): it is asked before each proposal and before each
    evaluation, and once it returns True the run returns the rows it has. They
    are the first rows of the uncut run, so ``stored_rows`` continues it.

    Example:
        >>> rows = run_bo(RunConfig("branin", "qlogei", budget=15, n_init=5))

    Args:
        config: The run configuration (validated here).
        on_row: Called with each new row as soon as it is evaluated (not with
            stored rows).
        stored_rows: Rows of this run from ``results.csv`` (``parse_row``'d),
            ``n_evals`` 1..n.
        should_stop: Called without arguments before each proposal and each
            evaluation; True stops the run there (nothing more is proposed or
            evaluated). None runs to the budget.
        faults: What to do about failed and hanging evaluations; None is
            ``FaultPolicy()`` (non-finite values skipped, exceptions stop).
        state_path: File for the state of a method that carries state between
            iterations (``checkpoint.state_path`` names one per run), saved
            after each batch and read on resume; a file of another run or of
            other rows is ignored. None saves nothing (a resume replays).

    Returns:
        All rows (stored ones first), dicts with the keys ``columns(dim)``, in
        evaluation order; fewer than ``config.budget`` if ``should_stop`` stopped
        the run.

    Raises:
        EvaluationFailed: After the row of a failed evaluation that
            ``faults.on_error`` stops at.
    """
    config.validate()
    faults = FaultPolicy() if faults is None else faults
    faults.validate()
    problem = get_problem(config.problem, config.dim)
    stored = stored_points(stored_rows or [], problem.dim)[: config.budget]
    if len(stored) == config.budget:  # finished: nothing to replay or evaluate
        return stored
    spec = (config.problem, config.dim)
    with Evaluator(problem, spec, faults.eval_timeout) as evaluate:
        return _loop(
            config, problem, stored, on_row, should_stop, faults, evaluate, state_path
        )


class _State:
    # The run of one method and its saved state: ``restored`` rows' worth of its
    # calls came from the state file (0: none); ``path`` None saves nothing.

    path: Path | None
    run: Run

    def __init__(
        self,
        config: RunConfig,
        problem: Problem,
        stored: list[RowDict],
        state_path: str | os.PathLike[str] | None,
    ) -> None:
        method = get_method(config.method)
        self.stateful = method.carries_state
        self.model_based = method.model_based
        self.run = method.new_run()
        self.restored = 0
        self.path = None
        if state_path is not None and self.stateful:
            self.path = Path(state_path)
        self.key = json.dumps(config.to_dict(), sort_keys=True)
        if self.path is None:
            return
        if stored:
            ref = _Data(problem.dim, self.model_based)
            for row in stored:
                ref.add(row)
            loaded = load_state(self.path, self.key, ref.X, ref.Y)
            # A state saved before runs had ``propose`` (0.1) is replayed instead.
            if loaded is not None and isinstance(loaded[0], Run):
                self.run, self.restored = loaded[0], loaded[1]

    def needs_call(self, batch: _Batch, n: int) -> bool:
        # Proposals are made for points not stored, and for stored ones a
        # stateful method must replay (those after its restored state).
        if batch.n_stored < batch.size:
            return True
        return self.stateful and batch.iteration > 0 and n >= self.restored

    def save(self, data: _Data) -> None:
        if self.path is None or len(data.rows) <= self.restored:
            return
        try:
            save_state(self.path, self.key, data.X, data.Y, self.run)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as e:
            warnings.warn(
                f"cannot save the method state to {str(self.path)!r} "
                f"({e}); no more is saved, and a resume replays its steps",
                RuntimeWarning,
                stacklevel=3,
            )
            self.path = None


def _loop(
    config: RunConfig,
    problem: Problem,
    stored: list[RowDict],
    on_row: Callable[[RowDict], object] | None,
    should_stop: Callable[[], bool] | None,
    faults: FaultPolicy,
    evaluate: Evaluator,
    state_path: str | os.PathLike[str] | None,
) -> list[RowDict]:
    state = _State(config, problem, stored, state_path)
    data = _Data(problem.dim, state.model_based)
    # `seconds` goes on from the stored attempt's last row.
    offset = stored[-1]["seconds"] if stored else 0.0
    start = time.monotonic()
    iteration = 0
    warned = False
    stop = should_stop if should_stop is not None else (lambda: False)
    while len(data.rows) < config.budget:
        # Asked before the proposal too: a model-based proposal can take far
        # longer than an evaluation, and a stopped run should not wait for one.
        if stop():
            break
        n = len(data.rows)
        size = config.n_init if iteration == 0 else min(config.q, config.budget - n)
        batch = _Batch(iteration, size, min(max(len(stored) - n, 0), size))
        proposed = state.needs_call(batch, n)
        if proposed:
            _propose(config, state.run, data, batch, problem)
        warned = _take_stored(config, data, batch, stored, warned)
        iteration += 1
        if batch.n_stored == size:
            if proposed:  # a replayed batch
                state.save(data)
            continue
        if stop():
            # The proposal is dropped: a resume proposes it again from the seed.
            break
        assert batch.candidates is not None  # proposed: not every point was stored
        new_X = batch.candidates[batch.n_stored : size]
        with holding_interrupts():  # no evaluation without its row
            tic = time.monotonic()
            results = evaluate(new_X)
            times = (time.monotonic() - tic, offset + time.monotonic() - start)
            rows = _new_rows(config, problem, data, batch, new_X, results, times)
            for row in rows:
                if on_row is not None:
                    on_row(row)
        state.save(data)
        for row, outcome in zip(rows, results, strict=True):
            if not outcome.ok and faults.stops(outcome.kind):
                raise EvaluationFailed(row)
    return data.rows
