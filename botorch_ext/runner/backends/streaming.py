r"""What the backends share.

The interface a backend implements, the sink that receives a grid's rows, and the loop
that streams rows while runs go on.

A backend is a function ``run(configs, sink, settings)``: it runs every
configuration to its budget, each from the rows ``sink.rows_of(config)`` already
holds, hands every evaluated row to ``sink.add`` as soon as it exists and calls
``sink.done`` once a run's rows are all in. When a run is retried (a worker
died and the run starts again elsewhere) the retry starts from
``sink.rows_of(config)`` at that moment, so nothing written is evaluated again;
the sink refuses a row whose evaluation key it holds, so ``results.csv`` never
gets a duplicate.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import resource_tracker
from pathlib import Path
from typing import TypeVar

from botorch_ext.runner.checkpoint import state_path
from botorch_ext.runner.evaluation import FaultPolicy
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.schema import RowDict, run_key

#: How long a backend waits for a finished run before it drains the rows again;
#: rows reach the caller at most this long after their evaluation.
DRAIN_INTERVAL_S = 0.2


@dataclass(frozen=True)
class BackendSettings:
    r"""How a backend runs a grid.

    Args:
        workers: Worker processes (processes: 1 runs in this process; dask: the
            embedded ``LocalCluster``'s workers).
        threads: Torch threads of each run (None: this process's setting, for
            runs in this process).
        faults: What runs do about failed and hanging evaluations.
        scheduler: Dask only: the address of an existing scheduler.
        security: Dask only: a ``distributed.security.Security`` for the
            scheduler (None: Dask's configuration, e.g. the
            ``DASK_DISTRIBUTED__COMM__TLS__*`` variables).
        max_restarts: How often the processes backend starts its pool again
            after a worker died before it gives up (Dask's own limit is its
            ``distributed.scheduler.allowed-failures`` setting).
        state_dir: The output directory whose ``state`` folder holds the
            method state of each run (``checkpoint``), so that a resumed or
            retried run need not replay; None keeps none. The Dask backend
            uses it with its embedded cluster only (the workers of another
            cluster may not share this machine's disk).
    """

    workers: int = 1
    threads: int | None = None
    faults: FaultPolicy = FaultPolicy()
    scheduler: str | None = None
    security: object | None = None
    max_restarts: int = 3
    state_dir: str | None = None

    def state_path(self, config: RunConfig) -> Path | None:
        r"""The state file of the run of ``config`` (None without ``state_dir``)."""
        if self.state_dir is None:
            return None
        return state_path(self.state_dir, config.method, config.seed)


class GridSink:
    r"""Receives the rows of a grid, refusing duplicates, and the runs' ends.

    Args:
        stored_rows: The rows the grid starts from.
        on_row: Called with each new row.
        on_run_done: Called with each finished run's configuration.
        log: Called with one-line notes about faults (a lost worker, a retried
            run, a refused duplicate); ``print`` to stderr if None.
    """

    def __init__(
        self,
        stored_rows: Iterable[RowDict] = (),
        on_row: Callable[[RowDict], None] | None = None,
        on_run_done: Callable[[RunConfig], None] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.rows: list[RowDict] = []
        self._runs: dict[tuple[str, int], list[RowDict]] = {}
        self._keys: set[tuple[str, int, int]] = set()
        self._on_row, self._on_run_done = on_row, on_run_done
        self._log = log
        self.notes: list[str] = []
        for row in stored_rows:
            self._keep(row)

    def _keep(self, row: RowDict) -> None:
        self.rows.append(row)
        self._keys.add(run_key(row))
        self._runs.setdefault((row["method"], row["seed"]), []).append(row)

    def rows_of(self, config: RunConfig) -> list[RowDict]:
        r"""The rows held for the run of ``config`` (stored and new), in order."""
        return sorted(
            self._runs.get((config.method, config.seed), []),
            key=lambda r: r["n_evals"],
        )

    def add(self, row: RowDict) -> bool:
        r"""Take a new row; False (and a note) if its evaluation is held."""
        if run_key(row) in self._keys:
            self.note(
                f"dropped a second row for evaluation {row['n_evals']} of "
                f"{row['method']} seed {row['seed']} (a retried run's)"
            )
            return False
        self._keep(row)
        if self._on_row is not None:
            self._on_row(row)
        return True

    def done(self, config: RunConfig) -> None:
        r"""Report the run of ``config`` finished."""
        if self._on_run_done is not None:
            self._on_run_done(config)

    def note(self, message: str) -> None:
        r"""Record (and show) a one-line note about a fault."""
        self.notes.append(message)
        if self._log is not None:
            self._log(message)
        else:
            print(message, file=sys.stderr)


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


#: A backend's future (``concurrent.futures.Future``, ``distributed.Future``).
_Future = TypeVar("_Future")


def stream_until_done(
    pending: set[_Future],
    wait_first: Callable[[set[_Future], float], tuple[set[_Future], set[_Future]]],
    drain: Callable[[], None],
    on_done: Callable[[_Future], None],
    timeout: float | None = None,
) -> set[_Future]:
    r"""Wait for the runs' futures, draining their rows meanwhile.

    Each finished future is handed to ``on_done`` only after the drain that follows its
    end.

    The loop of both backends: a run's last rows are queued before its future
    ends, so draining after the end and before ``on_done`` puts every row of a
    run ahead of its "done".

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
        done, _ = wait_first(pending, DRAIN_INTERVAL_S)
        pending -= set(done)
        drain()
        for future in done:
            on_done(future)
    return pending
