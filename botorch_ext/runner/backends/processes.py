r"""The ``processes`` backend: runs in this process or in local worker processes.

Either all runs go in this process, or one run per task of a pool of local worker
processes; every row is streamed back as it is evaluated.

Data path: each worker runs ``run_bo`` and puts each row on a queue held by a
manager process the moment it is evaluated (``put`` returns once the manager
holds it); this process drains the queue and alone hands rows on.

A worker that dies (killed, out of memory) breaks the pool, and the pool's other
workers are stopped too, each after handing over the batch it is evaluating.
The grid then drains every row queued, starts a new pool and continues each
unfinished run from the rows it has, so nothing written is evaluated again (the
evaluation the dead worker was in the middle of is lost with it). After
``BackendSettings.max_restarts`` such restarts the grid gives up.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import signal
from collections.abc import Callable, MutableSequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.managers import SyncManager
from pathlib import Path

import torch

from botorch_ext.runner.backends.streaming import (
    BackendSettings,
    GridSink,
    sigint_blocked_in_children,
    stream_until_done,
)
from botorch_ext.runner.evaluation import FaultPolicy
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.schema import RowDict
from botorch_ext.runner.signals import holding_interrupts


class WorkersLost(RuntimeError):
    r"""Worker processes kept dying: the grid gave up after its restarts."""


def run(configs: list[RunConfig], sink: GridSink, settings: BackendSettings) -> None:
    r"""Run every configuration to its budget, continuing from ``sink``'s rows.

    Example:
        >>> run([RunConfig("branin", "sobol", budget=6, n_init=3)], GridSink(),
        ...     BackendSettings(workers=2))

    Args:
        configs: The runs (each continues from ``sink.rows_of(config)``).
        sink: Receives the rows and the runs' ends.
        settings: ``workers`` (1 runs here, one after the other), ``threads``,
            ``faults`` and ``max_restarts``.

    Raises:
        WorkersLost: If the pool broke more than ``max_restarts`` times.
        EvaluationFailed: If a run stopped at a failed evaluation.
    """
    if settings.workers <= 1:
        if settings.threads is not None:
            torch.set_num_threads(settings.threads)
        for config in configs:
            run_bo(
                config,
                on_row=sink.add,
                stored_rows=sink.rows_of(config),
                faults=settings.faults,
                state_path=settings.state_path(config),
            )
            sink.done(config)
        return
    left = list(configs)
    reported: set[RunConfig] = set()
    for attempt in range(settings.max_restarts + 1):
        try:
            _run_pool(left, sink, settings, reported)
            return
        except BrokenProcessPool as e:
            for config in left:  # finished before the break, not yet reported
                if len(sink.rows_of(config)) >= config.budget:
                    if config not in reported:
                        reported.add(config)
                        sink.done(config)
            left = [c for c in left if len(sink.rows_of(c)) < c.budget]
            sink.note(
                f"a worker process died ({e}); starting the pool again for the "
                f"{len(left)} unfinished runs, each from the rows it has "
                f"(restart {attempt + 1} of {settings.max_restarts})"
            )
    raise WorkersLost(
        f"worker processes died {settings.max_restarts + 1} times (a run that kills "
        "its worker, e.g. by running out of memory?)"
    )


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what to
    # do about it, and the queue's manager must outlive it to hand over the
    # last rows.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _init_worker(threads: int, pids: MutableSequence[int]) -> None:
    _ignore_sigint()
    torch.set_num_threads(threads)
    pids.append(os.getpid())


def _run_in_worker(
    config: RunConfig,
    stored_rows: list[RowDict],
    rows: queue_module.Queue[RowDict],
    faults: FaultPolicy,
    state: Path | None = None,
) -> None:
    # Each row goes to the parent's queue as it is evaluated (``put`` returns
    # once the manager holds it), so a stopped worker has handed over all it
    # evaluated. The method state may get ahead of the rows the parent has
    # written; a resume then ignores it and replays.
    run_bo(
        config,
        on_row=rows.put,
        stored_rows=stored_rows,
        faults=faults,
        state_path=state,
    )


def _run_pool(
    configs: list[RunConfig],
    sink: GridSink,
    settings: BackendSettings,
    reported: set[RunConfig],
) -> None:
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
                    sink.add(row)

        pool = ProcessPoolExecutor(
            max_workers=settings.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(settings.threads or 1, pids),
        )
        _stream_pool(pool, configs, sink, settings, (queue, pids, drain), reported)
    finally:
        manager.shutdown()


#: How ``_stream_pool`` reaches the workers: the rows' queue, the workers'
#: process ids and the drain of the queue.
_Channel = tuple[queue_module.Queue[RowDict], MutableSequence[int], Callable[[], None]]


def _stream_pool(
    pool: ProcessPoolExecutor,
    configs: list[RunConfig],
    sink: GridSink,
    settings: BackendSettings,
    channel: _Channel,
    reported: set[RunConfig],
) -> None:
    queue, pids, drain = channel
    futures: dict[Future[None], RunConfig] = {}
    try:
        with sigint_blocked_in_children():  # workers start on submit
            for config in configs:
                future = pool.submit(
                    _run_in_worker,
                    config,
                    sink.rows_of(config),
                    queue,
                    settings.faults,
                    settings.state_path(config),
                )
                futures[future] = config

        def on_done(future: Future[None]) -> None:
            future.result()  # a worker's error ends the grid here
            reported.add(futures[future])
            sink.done(futures[future])

        stream_until_done(
            set(futures),
            lambda fs, t: wait(fs, timeout=t, return_when=FIRST_COMPLETED),
            drain,
            on_done,
        )
    except BaseException:
        # Interrupted, a run failed or a worker died: stop the workers, then
        # hand over every row they queued before they stopped.
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
