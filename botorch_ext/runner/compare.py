r"""A grid of runs (methods x seeds), in this process, in worker processes or on
Dask (``dask_backend``), with every row streamed to the caller as it is
evaluated, and a summary table."""

from __future__ import annotations

import math
import multiprocessing
import os
import queue as queue_module
import signal
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing import resource_tracker
from multiprocessing.managers import SyncManager

import torch

from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.results import holding_interrupts

#: The backends of ``run_grid``: local worker processes, or Dask's distributed
#: scheduler (embedded ``LocalCluster`` or an existing cluster).
BACKENDS = ("processes", "dask")

# How long the parent waits for a finished run before it drains the row queue
# again (both backends); rows reach the CSV at most this long after their
# evaluation.
_DRAIN_INTERVAL_S = 0.2


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what to
    # do about it, and the queue's manager must outlive it to hand over the
    # last rows.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def sigint_blocked_in_children() -> Iterator[None]:
    r"""Start processes with SIGINT blocked, so that Ctrl-C reaches only this one.

    Processes started in the block (worker pools, a Dask ``LocalCluster``)
    inherit a blocked SIGINT, so Ctrl-C, which reaches the whole process
    group, cannot kill them or print their tracebacks while this process hands
    over the last rows and stops them; a SIGINT sent to this process meanwhile
    is delivered when the block ends.

    Example:
        >>> with sigint_blocked_in_children():
        ...     cluster = LocalCluster(n_workers=2)
    """
    # Blocked, not ignored: the block covers the children's start-up too, before
    # any initializer of theirs could ignore the signal.
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover (not POSIX)
        yield
        return
    # Launching multiprocessing's resource tracker unblocks SIGINT in this
    # thread afterwards; launch it first.
    resource_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def stream_until_done(
    pending: set,
    wait_first: Callable[[set, float], tuple[set, set]],
    drain: Callable[[], None],
    on_done: Callable[[object], None],
    timeout: float | None = None,
) -> set:
    r"""Wait for the runs' futures, draining their rows meanwhile, and hand each
    finished future to ``on_done`` only after the drain that follows its end.

    The loop of both backends (worker processes and Dask): a run's last rows are
    queued before its future ends, so draining after the end and before
    ``on_done`` puts every row of a run ahead of its "done".

    Example:
        >>> left = stream_until_done(
        ...     set(futures),
        ...     lambda fs, t: wait(fs, timeout=t, return_when=FIRST_COMPLETED),
        ...     drain,
        ...     on_done=lambda future: future.result(),
        ... )

    Args:
        pending: The futures not yet handed to ``on_done``. Updated in place, so
            that after an exception (an interrupt, or a run's error raised by
            ``on_done``) it holds the runs still going.
        wait_first: ``(futures, timeout) -> (done, not_done)``, returning once one
            of ``futures`` is done or after ``timeout`` seconds.
        drain: Hands every row queued so far to the caller.
        on_done: Called with each finished future; what it raises ends the loop.
        timeout: Give up after this many seconds; None waits for every future.

    Returns:
        ``pending``: empty, unless ``timeout`` ran out first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while pending and (deadline is None or time.monotonic() < deadline):
        done, _ = wait_first(pending, _DRAIN_INTERVAL_S)
        pending -= set(done)
        drain()
        for future in done:
            on_done(future)
    return pending


def _init_worker(threads: int, pids) -> None:
    _ignore_sigint()
    torch.set_num_threads(threads)
    pids.append(os.getpid())


def _run_in_worker(config: RunConfig, stored_rows: list[dict], rows) -> None:
    # Each row goes to the parent's queue as it is evaluated (``put`` returns
    # once the manager holds it), so a stopped worker has handed over all it
    # evaluated.
    run_bo(config, on_row=rows.put, stored_rows=stored_rows)


def run_grid(
    base: RunConfig,
    methods: Iterable[str],
    seeds: Iterable[int],
    workers: int = 1,
    on_row: Callable[[dict], None] | None = None,
    on_run_done: Callable[[RunConfig], None] | None = None,
    stored_rows: Iterable[dict] = (),
    threads: int | None = None,
    backend: str = "processes",
    scheduler: str | None = None,
) -> list[dict]:
    r"""Run every ``method x seed`` combination of ``base``, streaming rows.

    Every row reaches ``on_row`` (in this process) as soon as it is evaluated,
    whatever the number of workers and the backend: workers put their rows on a
    queue that this process drains. Both backends give the same rows for the
    same seeds (at the same thread count). On ``KeyboardInterrupt`` the workers
    are stopped (each after handing over the batch it is evaluating), the queue
    is drained into ``on_row``, and the interrupt is re-raised.

    Example:
        >>> rows = run_grid(RunConfig("branin", "random", budget=8, n_init=4),
        ...                 ["random", "sobol"], [0, 1], workers=2)

    Args:
        base: The configuration shared by all runs (its ``method`` and ``seed``
            are replaced).
        methods: Method names.
        seeds: Seeds.
        workers: Number of worker processes (with ``"processes"``, 1 runs in
            this process; with ``"dask"``, the embedded cluster's workers).
        on_row: Called with every new row, in this process.
        on_run_done: Called with each finished run's configuration (also for
            runs that ``stored_rows`` already finished).
        stored_rows: Rows of an interrupted attempt of this grid: finished runs
            are skipped, partial ones continued from their rows (see
            ``run_bo``).
        threads: Torch threads of each run (``torch.set_num_threads``); None
            keeps this process's setting in-process and uses 1 in workers.
        backend: ``"processes"`` (local worker processes) or ``"dask"`` (one
            Dask task per run, see ``dask_backend.run_on_dask``).
        scheduler: With ``"dask"``, the address of an existing scheduler; None
            starts an embedded ``LocalCluster`` of ``workers`` processes.

    Returns:
        All rows, stored ones included.
    """
    configs = [replace(base, method=m, seed=s) for m in methods for s in seeds]
    for config in configs:
        config.validate()
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if backend not in BACKENDS:
        raise ValueError(
            f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}"
        )
    if scheduler is not None and backend != "dask":
        raise ValueError(
            f"scheduler {scheduler!r} needs backend 'dask', got backend {backend!r}"
        )
    stored: dict[tuple[str, int], list[dict]] = {}
    for row in stored_rows:
        stored.setdefault((row["method"], row["seed"]), []).append(row)
    rows: list[dict] = []
    todo = []
    for config in configs:
        run_rows = stored.get((config.method, config.seed), [])
        rows.extend(run_rows)
        if len(run_rows) >= config.budget:
            if on_run_done is not None:
                on_run_done(config)
        else:
            todo.append((config, run_rows))

    def collect(row: dict) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    if backend == "dask":
        from botorch_ext.runner.dask_backend import run_on_dask

        if todo:
            run_on_dask(
                todo, collect, on_run_done, workers, threads or 1, scheduler=scheduler
            )
        return rows
    if workers <= 1:
        if threads is not None:
            torch.set_num_threads(threads)
        for config, run_rows in todo:
            run_bo(config, on_row=collect, stored_rows=run_rows)
            if on_run_done is not None:
                on_run_done(config)
        return rows
    _run_in_processes(todo, workers, threads or 1, collect, on_run_done)
    return rows


def _run_in_processes(todo, workers, threads, collect, on_run_done) -> None:
    context = multiprocessing.get_context("spawn")
    manager = SyncManager(ctx=context)
    with sigint_blocked_in_children():
        manager.start(_ignore_sigint)
    try:
        queue, pids = manager.Queue(), manager.list()

        def drain() -> None:
            # Held interrupts: a KeyboardInterrupt inside a proxy call would
            # lose the row in flight and desynchronize the connection.
            with holding_interrupts():
                while True:
                    try:
                        row = queue.get_nowait()
                    except queue_module.Empty:
                        return
                    collect(row)

        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(threads, pids),
        )
        futures = {}
        try:
            with sigint_blocked_in_children():  # workers start on submit
                futures = {
                    pool.submit(_run_in_worker, config, run_rows, queue): config
                    for config, run_rows in todo
                }

            def on_done(future) -> None:
                future.result()  # a worker's error ends the grid here
                if on_run_done is not None:
                    on_run_done(futures[future])

            stream_until_done(
                set(futures),
                lambda fs, t: wait(fs, timeout=t, return_when=FIRST_COMPLETED),
                drain,
                on_done,
            )
        except BaseException:
            # Interrupted (or a run failed): stop the workers, then hand over
            # every row they queued before they stopped.
            for future in futures:
                future.cancel()
            for pid in list(pids):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            pool.shutdown(wait=True, cancel_futures=True)
            drain()
            raise
        pool.shutdown(wait=True)
    finally:
        manager.shutdown()


def summarize(rows: list[dict]) -> list[dict]:
    r"""Per-method summary: final best value (mean, std over seeds) and seconds
    per BO iteration.

    Args:
        rows: Rows of one or more runs.

    Returns:
        One dict per method with keys ``method, runs, n_evals, best_mean,
        best_std, regret_mean, seconds_per_iteration, init, outcome_transform``.
    """
    runs: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        runs.setdefault((row["method"], row["seed"]), []).append(row)
    by_method: dict[str, list[list[dict]]] = {}
    for (method, _), run_rows in runs.items():
        by_method.setdefault(method, []).append(
            sorted(run_rows, key=lambda r: r["n_evals"])
        )
    out = []
    for method, method_runs in by_method.items():
        finals = [r[-1] for r in method_runs]
        best = [f["best_value"] for f in finals]
        per_iteration = []
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
                "regret_mean": statistics.fmean(f["regret"] for f in finals),
                "seconds_per_iteration": (
                    statistics.fmean(per_iteration) if per_iteration else math.nan
                ),
                "init": finals[0]["init"],
                "outcome_transform": finals[0]["outcome_transform"],
            }
        )
    return out


def format_summary(summary: list[dict]) -> str:
    r"""Render ``summarize``'s output as a Markdown table."""
    lines = [
        "| method | runs | evals | final best value (mean ± std) | regret | "
        "s / iteration | init | outcome transform |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['method']} | {s['runs']} | {s['n_evals']} | "
            f"{s['best_mean']:.4g} ± {s['best_std']:.2g} | {s['regret_mean']:.3g} | "
            f"{s['seconds_per_iteration']:.2f} | {s['init']} | "
            f"{s['outcome_transform']} |"
        )
    return "\n".join(lines)
