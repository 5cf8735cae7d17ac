r"""The ``dask`` backend: one run per task on Dask's ``distributed`` scheduler.

Every row is streamed back to the caller as it is evaluated.

Data path: the caller submits one task per unfinished (method, seed) run to an
embedded ``LocalCluster`` (one process per worker, one thread each, listening on
127.0.0.1 only) or to an existing scheduler (``scheduler``: a ``dask scheduler``
started by hand, dask-jobqueue, ...). A task first announces itself on a
``distributed.Queue`` and receives from the caller the rows its run already has;
it then runs ``run_bo`` from them and puts each row on the queue the moment it
is evaluated (``put`` returns once the scheduler holds it). The caller drains
the queue and alone writes the rows. A run is reported done only after the queue
has been drained following its task's end, so its last rows are never behind its
"done".

Retries: when a worker dies, Dask runs its task again on another worker (up to
its ``distributed.scheduler.allowed-failures`` setting). The queue is first in,
first out, so when the new attempt announces itself the caller has already
taken every row the dead one handed over; the new attempt starts from them (no
duplicate row, no point evaluated twice, a cut batch completed with its missing
points only), and rows of a superseded attempt that arrive later are dropped.
The grid notes every retried run.

Stopping: Dask cannot stop a running task, so a stop is cooperative. On Ctrl-C
(or a failed run) the caller sets a ``distributed.Event`` named after the grid;
each task asks it before every proposal and evaluation (``run_bo``'s
``should_stop``) and returns at the next one, and the caller goes on writing rows
until the tasks have returned (at most ``STOP_TIMEOUT_S``).

A lost scheduler ends the grid with ``SchedulerLost``: the rows written so far
are kept (rows the scheduler held but had not handed over are lost with it) and
a resume, against the same or a new scheduler, finishes the grid.
"""

from __future__ import annotations

import logging
import sys
import uuid
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from botorch_ext.runner.backends.streaming import (
    BackendSettings,
    GridSink,
    sigint_blocked_in_children,
    stream_until_done,
)
from botorch_ext.runner.errors import ArgumentError
from botorch_ext.runner.evaluation import FaultPolicy
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.signals import holding_interrupts

if TYPE_CHECKING:
    # ``distributed`` is imported where it is used: it is an optional dependency.
    from distributed import Client, Future, LocalCluster

#: How long a client waits to reach an existing scheduler.
CONNECT_TIMEOUT = "20s"

#: How long a stopped grid waits for its tasks to return. A task stops at its
#: next proposal or evaluation, so this bounds the wait for one in progress (a
#: model fit or an expensive objective) before the caller gives up on its row.
STOP_TIMEOUT_S = 120.0

#: How long a task waits for the caller to send its run's rows.
REPLY_TIMEOUT_S = 300.0


class SchedulerLost(RuntimeError):
    r"""The connection to the Dask scheduler was lost in the middle of a grid."""


class RunFailedOnWorkers(RuntimeError):
    r"""Dask gave up on a run whose workers kept dying (``KilledWorker``)."""


@dataclass(frozen=True)
class GridNames:
    r"""The names of a grid's scheduler-side objects.

    They travel by name: several grids may share a scheduler, and unpickling a
    ``Queue`` contacts the scheduler, which deadlocks a scheduler that
    deserializes the task itself.

    Attributes:
        rows: The queue of the tasks' messages (announcements and rows).
        reply: The prefix of the per-attempt queues of stored rows.
        stop: The event that asks every task to stop.
    """

    rows: str
    reply: str
    stop: str


def run_task(
    config: RunConfig,
    names: GridNames,
    threads: int,
    faults: FaultPolicy,
    state: Path | None = None,
) -> bool:
    r"""The Dask task of one run (runs on a worker).

    Args:
        config: The run.
        names: The grid's queue and event names.
        threads: Torch threads of the run.
        faults: What the run does about failed evaluations.
        state: The run's method-state file (``run_bo``'s ``state_path``).

    Returns:
        Whether the run reached its budget (False: stopped).
    """
    from distributed import Event, Queue

    # Each task pins the threads itself: a worker of an existing cluster may run
    # with any setting, and results are reproducible only at a fixed count.
    torch.set_num_threads(threads)
    attempt = uuid.uuid4().hex
    rows = Queue(names.rows)
    rows.put(("hello", config.method, config.seed, attempt))
    stored = Queue(f"{names.reply}-{attempt}").get(timeout=REPLY_TIMEOUT_S)
    done = run_bo(
        config,
        on_row=lambda row: rows.put(("row", attempt, row)),
        stored_rows=stored,
        should_stop=Event(names.stop).is_set,
        faults=faults,
        state_path=state,
    )
    return len(done) >= config.budget


def run(configs: list[RunConfig], sink: GridSink, settings: BackendSettings) -> None:
    r"""Run each configuration as one Dask task, continuing from ``sink``'s rows.

    Example:
        >>> run([RunConfig("branin", "sobol", budget=6, n_init=3)], GridSink(),
        ...     BackendSettings(workers=2))

    Args:
        configs: The runs.
        sink: Receives the rows, the runs' ends and notes about retried runs.
        settings: ``workers`` (of the embedded ``LocalCluster``; ignored with
            ``scheduler``), ``threads`` (per run; 1 if None), ``faults``,
            ``scheduler`` (an address, or None for an embedded cluster) and
            ``security`` (a ``distributed.security.Security``; None takes
            Dask's configuration).

    Raises:
        ImportError: If ``distributed`` is not installed.
        ValueError: If ``scheduler`` cannot be reached.
        SchedulerLost: If the scheduler went away mid-grid.
        RunFailedOnWorkers: If Dask gave up on a run after losing its workers.
    """
    client, cluster = _connect(settings)
    try:
        GridClient(client, configs, sink, settings).run()
    finally:
        try:
            client.close()
        finally:
            if cluster is not None:
                cluster.close()


def _connect(settings: BackendSettings) -> tuple[Client, LocalCluster | None]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # pragma: no cover (a dependency)
        raise ImportError(
            "--backend dask needs Dask's distributed: pip install distributed"
        ) from e
    extra = {} if settings.security is None else {"security": settings.security}
    if settings.scheduler is None:
        # Ctrl-C is this process's to handle: it writes the rows queued so far
        # and then closes the cluster, whose workers must not die first. The
        # cluster listens on the loopback interface only: its workers run
        # whatever the scheduler hands them.
        protocol = "tls://" if settings.security is not None else "tcp://"
        with sigint_blocked_in_children():
            cluster = LocalCluster(
                n_workers=settings.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                protocol=protocol,
                dashboard_address=None,
                silence_logs=logging.ERROR,
                **extra,
            )
        return Client(cluster, **extra), cluster
    try:
        return Client(settings.scheduler, timeout=CONNECT_TIMEOUT, **extra), None
    except (OSError, TimeoutError) as e:
        raise ArgumentError(
            "scheduler",
            f"cannot reach the Dask scheduler {settings.scheduler!r} given by "
            f"scheduler ({e})",
        ) from e


class GridClient:
    r"""One grid on one Dask client.

    It holds the queue protocol with the tasks (each attempt of a run announces itself
    and receives the run's rows), the stream of rows to the sink, and what a fault turns
    into.

    Args:
        client: A connected ``distributed.Client``.
        configs: The runs.
        sink: Receives rows, runs' ends and notes.
        settings: The backend settings.
    """

    def __init__(
        self,
        client: Client,
        configs: list[RunConfig],
        sink: GridSink,
        settings: BackendSettings,
    ) -> None:
        from distributed import Event, Queue

        self.client, self.sink, self.settings = client, sink, settings
        self.configs = {(c.method, c.seed): c for c in configs}
        token = uuid.uuid4().hex[:8]
        self.names = GridNames(
            f"botorch-ext-rows-{token}",
            f"botorch-ext-reply-{token}",
            f"botorch-ext-stop-{token}",
        )
        self.token = token
        self.queue = Queue(self.names.rows, client=client)
        self.stop = Event(self.names.stop, client=client)
        self.attempts: dict[tuple[str, int], list[str]] = {}
        self.futures: dict[Future[bool], RunConfig] = {}
        self.pending: set[Future[bool]] = set()

    def drain(self) -> None:
        """Hand every message now on the rows queue to the sink."""
        with holding_interrupts():  # a row taken off the queue is handed on
            for message in self.queue.get(batch=True):
                self._take(message)

    def _take(self, message: tuple[Any, ...]) -> None:
        from distributed import Queue

        if message[0] == "hello":
            _, method, seed, attempt = message
            attempts = self.attempts.setdefault((method, seed), [])
            attempts.append(attempt)
            stored = self.sink.rows_of(self.configs[(method, seed)])
            if len(attempts) > 1:
                self.sink.note(
                    f"{method} seed {seed} started again on another worker (attempt "
                    f"{len(attempts)}; a worker was lost); it continues from its "
                    f"{len(stored)} rows"
                )
            Queue(f"{self.names.reply}-{attempt}", client=self.client).put(stored)
            return
        _, attempt, row = message
        attempts = self.attempts.get((row["method"], row["seed"]), [])
        if attempts[-1:] != [attempt]:
            self.sink.note(
                f"dropped evaluation {row['n_evals']} of {row['method']} seed "
                f"{row['seed']} from a superseded attempt"
            )
            return
        self.sink.add(row)

    def wait_first(
        self, fs: set[Future[bool]], timeout: float
    ) -> tuple[set[Future[bool]], set[Future[bool]]]:
        """Wait for the first of ``fs`` to finish; return ``(done, not_done)``."""
        from distributed import wait

        try:
            done_and_not_done: tuple[set[Future[bool]], set[Future[bool]]] = wait(
                fs, timeout=timeout, return_when="FIRST_COMPLETED"
            )
            return done_and_not_done
        except TimeoutError:  # distributed's wait raises where others return
            return set(), fs

    def on_done(self, future: Future[bool]) -> None:
        """End the run of a finished task, raising the run's error if it failed."""
        from distributed import KilledWorker

        config = self.futures[future]
        try:
            future.result()  # a run's error ends the grid here
        except KilledWorker as e:
            raise RunFailedOnWorkers(
                f"{config.method} seed {config.seed}: Dask gave up on the run after "
                f"its workers died ({e})"
            ) from e
        self.sink.done(config)

    def submit(self) -> None:
        """Submit one task per run to the Dask client."""
        # Submitted one by one: the first tasks run (and evaluate) while a large
        # grid is still being submitted, and a Ctrl-C then must stop them too.
        for key, config in self.configs.items():
            with holding_interrupts():  # no task the stop would not wait for
                future = self.client.submit(
                    run_task,
                    config,
                    self.names,
                    self.settings.threads or 1,
                    self.settings.faults,
                    # Another cluster's workers may not share this disk.
                    None
                    if self.settings.scheduler is not None
                    else self.settings.state_path(config),
                    key=f"botorch-ext-{key[0]}-{key[1]}-{self.token}",
                    pure=False,
                )
                self.futures[future] = config
                self.pending.add(future)

    def run(self) -> None:
        """Submit the grid and stream its rows to the sink until every run ends."""
        try:
            self.submit()
            stream_until_done(self.pending, self.wait_first, self.drain, self.on_done)
        except BaseException as e:
            if self._lost(e):
                raise self._scheduler_lost(e) from e
            self._stop_and_drain()
            raise

    def _lost(self, error: BaseException) -> bool:
        if self.client.status not in ("running", "newly-created"):
            return True
        from distributed.comm.core import CommClosedError

        if isinstance(error, CommClosedError):
            return True
        return isinstance(error, CancelledError) and (
            "scheduler-connection-lost" in str(error)
            or "lost the connection" in str(error)
        )

    def _scheduler_lost(self, error: BaseException) -> SchedulerLost:
        address = self.settings.scheduler or "the embedded cluster's scheduler"
        return SchedulerLost(
            f"lost the Dask scheduler {address} ({type(error).__name__}); the rows "
            "written so far are kept; start a scheduler and rerun with --resume "
            "(and --scheduler ADDRESS if it moved)"
        )

    def _stop_and_drain(self) -> None:
        # Interrupted, or a run failed: ask every task to stop (queued ones
        # then return at once) and keep writing rows until they have returned,
        # so that no evaluated row is lost; a second Ctrl-C leaves at once.
        self.stop.set()
        if self.pending:
            print(
                f"\nstopping: waiting up to {STOP_TIMEOUT_S:g} s for the runs in "
                "progress to hand over their rows (Ctrl-C again to leave now)",
                file=sys.stderr,
            )

        def on_stopped(future: Future[bool]) -> None:
            # A run that reached its budget meanwhile is done; errors of the
            # others cannot replace the one being raised.
            if future.status == "finished" and future.result():
                self.sink.done(self.futures[future])

        try:
            stream_until_done(
                self.pending,
                self.wait_first,
                self.drain,
                on_stopped,
                timeout=STOP_TIMEOUT_S,
            )
        except KeyboardInterrupt:
            pass
        self.client.cancel(list(self.pending))
        self.drain()
