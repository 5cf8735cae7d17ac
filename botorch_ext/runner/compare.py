r"""A grid of runs (methods x seeds) and its summary table.

The runs go in this process, in worker processes or on Dask (``backends``), with every
row streamed to the caller as it is evaluated.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from botorch_ext.runner.backends import dask, processes
from botorch_ext.runner.backends.streaming import BackendSettings, GridSink
from botorch_ext.runner.errors import ArgumentError
from botorch_ext.runner.evaluation import FaultPolicy
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.schema import OK, Empty, RowDict

#: The backends of ``run_grid``: local worker processes, or Dask's distributed
#: scheduler (embedded ``LocalCluster`` or an existing cluster).
BACKENDS = {"processes": processes.run, "dask": dask.run}


def run_grid(
    base: RunConfig,
    methods: Iterable[str],
    seeds: Iterable[int],
    workers: int = 1,
    on_row: Callable[[RowDict], None] | None = None,
    on_run_done: Callable[[RunConfig], None] | None = None,
    stored_rows: Iterable[RowDict] = (),
    threads: int | None = None,
    backend: str = "processes",
    scheduler: str | None = None,
    faults: FaultPolicy | None = None,
    security: object | None = None,
    log: Callable[[str], None] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> list[RowDict]:
    r"""Run every (method, seed) pair from ``base``, continuing from stored rows.

    Each run streams its rows to ``on_row`` as they are evaluated (from worker
    processes or Dask workers too), so an interrupted grid keeps everything
    evaluated so far. A run whose worker died continues, in a new worker, from
    the rows it has; no evaluation key is handed to ``on_row`` twice.

    Example:
        >>> rows = run_grid(RunConfig("branin", "qlogei", budget=20),
        ...                 ["sobol", "qlogei"], [0, 1], workers=2)

    Args:
        base: The settings shared by the runs (its method and seed are replaced).
        methods: Method names.
        seeds: Seeds.
        workers: Worker processes (1 runs in this process; with ``"dask"``, the
            embedded cluster's workers).
        on_row: Called in this process with each new row, as it is evaluated.
        on_run_done: Called with each run's configuration once all its rows
            were handed to ``on_row`` (stored complete runs too).
        stored_rows: Rows of an earlier attempt (``parse_row``'d); finished runs
            are skipped, partial ones continued.
        threads: Torch threads of each run (None keeps this process's setting
            for runs in this process, and uses 1 in worker processes).
        backend: ``"processes"`` or ``"dask"`` (one task per run).
        scheduler: With ``"dask"``, the address of an existing scheduler; None
            starts an embedded ``LocalCluster`` on 127.0.0.1.
        faults: What runs do about failed and hanging evaluations (None:
            ``FaultPolicy()``).
        security: With ``"dask"``, a ``distributed.security.Security`` (None:
            Dask's configuration).
        log: Called with one-line notes about faults (a retried run, a dead
            worker); ``print`` to stderr if None.
        state_dir: The output directory: the method state of each run whose
            method carries state between iterations goes to its ``state``
            folder after every batch, and a resumed or retried run continues
            from it instead of replaying its stored steps (``checkpoint``;
            with ``"dask"``, only on the embedded cluster). None keeps none.

    Returns:
        All rows of the grid's runs, stored ones included.

    Raises:
        ValueError: For a bad argument (naming it).
        EvaluationFailed: If a run stopped at a failed evaluation.
    """
    configs = [replace(base, method=m, seed=s) for m in methods for s in seeds]
    for config in configs:
        config.validate()
    faults = FaultPolicy() if faults is None else faults
    faults.validate()
    if threads is not None and threads < 1:
        raise ArgumentError("threads", f"threads must be >= 1, got {threads}")
    if workers < 1:
        raise ArgumentError("workers", f"workers must be >= 1, got {workers}")
    if backend not in BACKENDS:
        raise ArgumentError(
            "backend",
            f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}",
        )
    if scheduler is not None and backend != "dask":
        raise ArgumentError(
            "scheduler",
            f"scheduler {scheduler!r} needs backend='dask', got backend={backend!r}",
        )
    sink = GridSink(stored_rows, on_row, on_run_done, log)
    todo = []
    for config in configs:
        if len(sink.rows_of(config)) >= config.budget:
            sink.done(config)
        else:
            todo.append(config)
    if todo:
        settings = BackendSettings(
            workers=workers,
            threads=threads,
            faults=faults,
            scheduler=scheduler,
            security=security,
            state_dir=None if state_dir is None else os.fspath(state_dir),
        )
        BACKENDS[backend](todo, sink, settings)
    grid = {(c.method, c.seed) for c in configs}
    return [r for r in sink.rows if (r["method"], r["seed"]) in grid]


def summarize(rows: list[RowDict]) -> list[dict[str, Any]]:
    r"""Per-method summary of a grid's rows.

    The final best value (mean, std over seeds) and the seconds per BO iteration.

    Args:
        rows: Rows of one or more runs.

    Returns:
        One dict per method with keys ``method, runs, n_evals, best_mean,
        best_std, regret_mean, seconds_per_iteration, init, outcome_transform,
        failed, failed_runs``: ``failed`` counts the failed evaluations of all
        the method's runs, ``failed_runs`` the runs with at least one. A run
        without a successful evaluation has no best value (NaN).
    """
    runs: dict[tuple[str, int], list[RowDict]] = {}
    for row in rows:
        runs.setdefault((row["method"], row["seed"]), []).append(row)
    by_method: dict[str, list[list[RowDict]]] = {}
    for (method, _), run_rows in runs.items():
        by_method.setdefault(method, []).append(
            sorted(run_rows, key=lambda r: r["n_evals"])
        )
    out: list[dict[str, Any]] = []
    for method, method_runs in by_method.items():
        finals = [r[-1] for r in method_runs]
        best = [_number(f["best_value"]) for f in finals]
        failed = [sum(row.get("status", OK) != OK for row in r) for r in method_runs]
        per_iteration: list[float] = []
        for r in method_runs:
            # Rows of one batch share a timestamp; the first is the initial design.
            stamps = sorted({row["seconds"] for row in r})
            if len(stamps) > 1:
                per_iteration.append((stamps[-1] - stamps[0]) / (len(stamps) - 1))
        out.append(
            {
                "method": method,
                "runs": len(method_runs),
                "n_evals": max(f["n_evals"] for f in finals),
                "best_mean": statistics.fmean(best),
                "best_std": statistics.stdev(best) if len(best) > 1 else 0.0,
                "regret_mean": statistics.fmean(_number(f["regret"]) for f in finals),
                "seconds_per_iteration": (
                    statistics.fmean(per_iteration) if per_iteration else math.nan
                ),
                "init": finals[0]["init"],
                "outcome_transform": finals[0]["outcome_transform"],
                "failed": sum(failed),
                "failed_runs": sum(f > 0 for f in failed),
            }
        )
    return out


def _number(value: float | Empty) -> float:
    # An empty best value (no successful evaluation yet) is NaN.
    return math.nan if isinstance(value, str) else value


def _failed(s: dict[str, Any]) -> str:
    if not s.get("failed"):
        return "0"
    return f"{s['failed']} in {s['failed_runs']} of {s['runs']} runs"


def format_summary(summary: list[dict[str, Any]]) -> str:
    r"""Render ``summarize``'s output as a Markdown table."""
    lines = [
        "| method | runs | evals | final best value (mean +/- std) | regret | "
        "s / iteration | init | outcome transform | failed evals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['method']} | {s['runs']} | {s['n_evals']} | "
            f"{s['best_mean']:.4g} +/- {s['best_std']:.2g} | {s['regret_mean']:.3g} | "
            f"{s['seconds_per_iteration']:.2f} | {s['init']} | "
            f"{s['outcome_transform']} | {_failed(s)} |"
        )
    return "\n".join(lines)
