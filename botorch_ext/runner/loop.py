r"""One Bayesian-optimization run: initial design, then batches of ``q`` proposals.

Data path: problem + method + seed -> initial design (or the stored rows on
resume) -> loop (fit, propose, evaluate, append row with the point and timings)
-> rows, each handed to ``on_row`` as soon as it exists so that an interrupted
run keeps what it evaluated.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
from botorch.utils.sampling import draw_sobol_samples

from botorch_ext.runner.methods import (
    GAUSSIAN_POSTERIOR_METHODS,
    INITIAL_CONDITIONS,
    OUTCOME_TRANSFORMS,
    SEQUENTIAL_METHODS,
    SVGP_METHODS,
    MethodOptions,
    get_method,
)
from botorch_ext.runner.problems import get_problem
from botorch_ext.runner.results import (
    diagnostic_fields,
    holding_interrupts,
    x_columns,
)

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
        r"""Raise ``ValueError`` with a one-line message for any bad setting."""
        get_problem(self.problem, self.dim)
        get_method(self.method)
        if self.q < 1:
            raise ValueError(f"q must be >= 1, got {self.q}")
        if self.n_init < 1:
            raise ValueError(f"n-init must be >= 1, got {self.n_init}")
        if self.options.num_inducing_points < 1:
            raise ValueError(
                "num-inducing-points must be >= 1, got "
                f"{self.options.num_inducing_points}"
            )
        if self.budget < self.n_init:
            raise ValueError(
                f"budget ({self.budget}) must be at least the initial design "
                f"(n-init = {self.n_init})"
            )
        if (
            self.method in GAUSSIAN_POSTERIOR_METHODS
            and self.options.outcome_transform != "standardize"
        ):
            raise ValueError(
                f"method {self.method!r} needs a Gaussian posterior; use "
                "--outcome-transform standardize"
            )
        if (
            self.method in SEQUENTIAL_METHODS
            and self.options.initial_conditions != "botorch"
        ):
            raise ValueError(
                f"method {self.method!r} builds its batch point by point, which "
                f"takes no --initial-conditions {self.options.initial_conditions}; "
                "use --initial-conditions botorch"
            )
        if (
            self.method in SVGP_METHODS
            and self.options.outcome_transform != "standardize"
        ):
            raise ValueError(
                f"method {self.method!r} standardizes its outcomes itself; use "
                "--outcome-transform standardize"
            )
        if self.options.initial_conditions not in INITIAL_CONDITIONS:
            raise ValueError(
                f"unknown initial conditions {self.options.initial_conditions!r}; "
                f"choose from {', '.join(INITIAL_CONDITIONS)}"
            )
        if self.options.outcome_transform not in OUTCOME_TRANSFORMS:
            raise ValueError(
                f"unknown outcome transform {self.options.outcome_transform!r}; "
                f"choose from {', '.join(OUTCOME_TRANSFORMS)}"
            )
        problem = get_problem(self.problem, self.dim)
        if self.options.outcome_transform == "log" and problem.optimal_value < 0:
            raise ValueError(
                "--outcome-transform log needs a positive objective, but "
                f"{self.problem} reaches {problem.optimal_value:g}; use standardize "
                "or bilog"
            )
        if self.init not in INITS:
            raise ValueError(
                f"unknown init {self.init!r}; choose from {', '.join(INITS)}"
            )

    def to_dict(self) -> dict:
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


def _timings(method, total: float) -> tuple[float, float]:
    # Methods that fit a model report the fit's share of the call as
    # ``timings["fit_seconds"]``; the rest of the call is acquisition work.
    fit = float(getattr(method, "timings", {}).get("fit_seconds", 0.0))
    return fit, max(total - fit, 0.0)


def _stored_points(rows: list[dict], dim: int) -> list[dict]:
    rows = sorted(rows, key=lambda r: r["n_evals"])
    if [r["n_evals"] for r in rows] != list(range(1, len(rows) + 1)):
        raise ValueError(
            "stored rows must be evaluations 1..n of one run, got n_evals "
            f"{[r['n_evals'] for r in rows]}"
        )
    for r in rows:
        if any(r.get(c, "") == "" for c in x_columns(dim)):
            raise ValueError(
                f"stored row {r['n_evals']} has no point (x0..x{dim - 1}); rows "
                "written before schema version 2 cannot be resumed"
            )
    return rows


def run_bo(
    config: RunConfig,
    on_row: Callable[[dict], None] | None = None,
    stored_rows: list[dict] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[dict]:
    r"""Run one BO loop and return one row per evaluation.

    With ``stored_rows`` (the rows of an interrupted attempt of the same run) the
    run continues from them: their points and values become the run's data,
    nothing they hold is evaluated again, and since every method seeds each
    iteration from ``config.seed`` and the number of points so far, the rows that
    follow are those of an uncut run (at the same torch thread count). Methods
    that carry state between iterations (``new_run``) rebuild it by replaying
    their calls on the stored data (proposals discarded, nothing evaluated), which
    costs the stored iterations' compute again. A batch cut short is completed by
    re-proposing it and evaluating only its missing points.

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

    Returns:
        All rows (stored ones first), dicts with the keys ``columns(dim)``, in
        evaluation order; fewer than ``config.budget`` if ``should_stop`` stopped
        the run.
    """
    config.validate()
    problem = get_problem(config.problem, config.dim)
    method = get_method(config.method)
    stateful = hasattr(method, "new_run")
    if stateful:  # methods with state across iterations
        method = method.new_run()
    bounds = problem.bounds
    stored = _stored_points(stored_rows or [], problem.dim)[: config.budget]
    if len(stored) == config.budget:  # finished: nothing to replay or evaluate
        return stored
    rows: list[dict] = []
    best = float("inf")
    # `seconds` goes on from the stored attempt's last row.
    offset = stored[-1]["seconds"] if stored else 0.0
    start = time.monotonic()
    X = torch.empty(0, problem.dim, dtype=torch.double)
    Y = torch.empty(0, 1, dtype=torch.double)
    iteration = 0
    warned = False
    while len(rows) < config.budget:
        # Asked before the proposal too: a model-based proposal can take far
        # longer than an evaluation, and a stopped run should not wait for one.
        if should_stop is not None and should_stop():
            break
        n = len(rows)
        size = config.n_init if iteration == 0 else min(config.q, config.budget - n)
        n_stored = min(max(len(stored) - n, 0), size)
        fit_seconds = acq_seconds = 0.0
        diagnostics = None
        candidates = None
        if iteration == 0:
            if n_stored < size:
                candidates = initial_design(
                    problem.dim, config.n_init, config.seed, config.init
                )
        elif n_stored < size or stateful:
            tic = time.monotonic()
            candidates = method(X, Y, bounds, size, config.seed, config.options)
            candidates = candidates.clamp(0.0, 1.0).to(X)
            fit_seconds, acq_seconds = _timings(method, time.monotonic() - tic)
            diagnostics = getattr(method, "diagnostics", None)
        for row in stored[n : n + n_stored]:
            best = min(best, row["value"])
            rows.append(row)
        old_X = torch.tensor(
            [[r[c] for c in x_columns(problem.dim)] for r in stored[n : n + n_stored]],
            dtype=torch.double,
        ).reshape(n_stored, problem.dim)
        old_Y = torch.tensor(
            [[-r["value"]] for r in stored[n : n + n_stored]], dtype=torch.double
        ).reshape(n_stored, 1)
        if candidates is not None and n_stored and not warned:
            if not torch.equal(candidates[:n_stored], old_X):
                warnings.warn(
                    f"{config.method} seed {config.seed}: the proposals replayed on "
                    f"resume differ from the stored points at iteration {iteration} "
                    "(another torch thread count or machine?); the stored points "
                    "are kept, later rows may differ from an uncut run",
                    RuntimeWarning,
                    stacklevel=2,
                )
                warned = True
        X, Y = torch.cat([X, old_X]), torch.cat([Y, old_Y])
        if n_stored == size:
            iteration += 1
            continue
        if should_stop is not None and should_stop():
            # The proposal is dropped: a resume proposes it again from the seed.
            break
        new_X = candidates[n_stored:size]
        with holding_interrupts():  # no evaluation without its row
            tic = time.monotonic()
            values = problem(new_X)
            eval_seconds = time.monotonic() - tic
            seconds = offset + time.monotonic() - start  # one timestamp per batch
            extra = diagnostic_fields(diagnostics)
            for j, (x, v) in enumerate(
                zip(new_X.tolist(), values.tolist(), strict=True)
            ):
                best = min(best, v)
                row = {
                    "problem": problem.name,
                    "dim": problem.dim,
                    "method": config.method,
                    "seed": config.seed,
                    "n_evals": len(rows) + 1,
                    "iteration": iteration,
                    "batch_position": n_stored + j,
                    "value": v,
                    "best_value": best,
                    "regret": max(best - problem.optimal_value, 0.0),
                    "seconds": seconds,
                    "fit_seconds": fit_seconds,
                    "acq_seconds": acq_seconds,
                    "eval_seconds": eval_seconds,
                    "init": config.init,
                    "outcome_transform": config.options.outcome_transform,
                    **extra,
                    **dict(zip(x_columns(problem.dim), x, strict=True)),
                }
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        X, Y = torch.cat([X, new_X]), torch.cat([Y, -values.unsqueeze(-1).to(Y)])
        iteration += 1
    return rows
