r"""The ``dask`` backend of ``compare``: one run per task on Dask's ``distributed``
scheduler, every row streamed back to the caller as it is evaluated.

Data path: the caller submits one task per unfinished (method, seed) run to an
embedded ``LocalCluster`` (one process per worker, one thread each) or to an
existing scheduler (``--scheduler ADDRESS``: a ``dask scheduler`` started by hand,
dask-jobqueue, ...). A task runs ``run_bo`` and puts each row on a
``distributed.Queue`` the moment it is evaluated (``put`` returns once the
scheduler holds it); the caller drains the queue and alone writes the CSV. A run
is reported done only after the queue has been drained following its task's end,
so its last rows are never behind its "done".

Stopping: Dask cannot stop a running task, so a stop is cooperative. On Ctrl-C
(or a failed run) the caller sets a ``distributed.Event`` named after the grid;
each task asks it before every proposal and evaluation (``run_bo``'s
``should_stop``) and returns at the next one, and the caller goes on writing rows
until the tasks have returned (at most ``_STOP_TIMEOUT_S``), so that every row a
worker evaluated reaches the CSV, on an embedded cluster or an existing one.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Callable

import torch

from botorch_ext.runner.compare import sigint_blocked_in_children, stream_until_done
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.results import holding_interrupts

# How long a client waits to reach an existing scheduler.
_CONNECT_TIMEOUT = "20s"

# How long a stopped grid waits for its tasks to return: a task stops at its next
# proposal or evaluation, so this bounds the wait for one in progress (a model
# fit or an expensive objective) before the caller gives up and loses its row.
_STOP_TIMEOUT_S = 120.0


def _run_task(
    config: RunConfig, stored_rows: list[dict], rows: str, stop: str, threads: int
) -> bool:
    from distributed import Event, Queue

    # Each task pins the threads itself: a worker of an existing cluster may run
    # with any setting, and results are reproducible only at a fixed count.
    torch.set_num_threads(threads)
    # The queue and the event travel by name: unpickling a ``Queue`` contacts the
    # scheduler, which deadlocks a scheduler that deserializes the task itself
    # (one in this process, as with ``LocalCluster(processes=False)``).
    done = run_bo(
        config,
        on_row=Queue(rows).put,
        stored_rows=stored_rows,
        should_stop=Event(stop).is_set,
    )
    return len(done) >= config.budget  # False: stopped before the budget


def run_on_dask(
    todo: list[tuple[RunConfig, list[dict]]],
    collect: Callable[[dict], None],
    on_run_done: Callable[[RunConfig], None] | None = None,
    workers: int = 1,
    threads: int = 1,
    scheduler: str | None = None,
) -> None:
    r"""Run each ``(config, stored_rows)`` of ``todo`` as one Dask task.

    Example:
        >>> run_on_dask([(RunConfig("branin", "sobol", budget=6, n_init=3), [])],
        ...             collect=print, workers=2)

    Args:
        todo: The runs and the rows each already has (see ``run_bo``).
        collect: Called in this process with every row, as it arrives.
        on_run_done: Called with each run's configuration once all its rows were
            collected.
        workers: Worker processes of the embedded ``LocalCluster`` (ignored with
            ``scheduler``: the cluster has the workers it has).
        threads: Torch threads of each run.
        scheduler: Address of an existing scheduler (``tcp://host:8786``); None
            starts an embedded ``LocalCluster`` and closes it at the end.

    Raises:
        ImportError: If ``distributed`` is not installed.
        ValueError: If ``scheduler`` cannot be reached.
    """
    try:
        from distributed import Client, Event, LocalCluster, Queue, wait
    except ImportError as e:  # pragma: no cover (a dependency)
        raise ImportError(
            "--backend dask needs Dask's distributed: pip install distributed"
        ) from e
    cluster = None
    if scheduler is None:
        # Ctrl-C is this process's to handle: it writes the rows queued so far
        # and then closes the cluster, whose workers must not die first.
        with sigint_blocked_in_children():
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            raise ValueError(
                f"cannot reach the Dask scheduler {scheduler!r} given by --scheduler "
                f"({e})"
            ) from e
    try:
        # A fresh name per grid: several grids may share one scheduler.
        token = uuid.uuid4().hex[:8]
        queue = Queue(f"botorch-ext-rows-{token}", client=client)
        stop = Event(f"botorch-ext-stop-{token}", client=client)

        def drain() -> None:
            with holding_interrupts():  # a row taken off the queue is written
                for row in queue.get(batch=True):
                    collect(row)

        def wait_first(fs: set, timeout: float) -> tuple[set, set]:
            try:
                return wait(fs, timeout=timeout, return_when="FIRST_COMPLETED")
            except TimeoutError:  # distributed's wait raises where others return
                return set(), fs

        futures = {}
        pending = set()
        try:
            # Submitted inside the try: the first tasks run (and evaluate) while
            # a large grid is still being submitted, and a Ctrl-C then must stop
            # them too.
            for config, run_rows in todo:
                with holding_interrupts():  # no task the stop would not wait for
                    future = client.submit(
                        _run_task,
                        config,
                        run_rows,
                        queue.name,
                        stop.name,
                        threads,
                        key=f"botorch-ext-{config.method}-{config.seed}-{token}",
                        pure=False,
                    )
                    futures[future] = config
                    pending.add(future)

            def on_done(future) -> None:
                future.result()  # a run's error ends the grid here
                if on_run_done is not None:
                    on_run_done(futures[future])

            stream_until_done(pending, wait_first, drain, on_done)
        except BaseException:
            # Interrupted, or a run failed: ask every task to stop (queued ones
            # then return at once) and keep writing rows until they have
            # returned, so that no evaluated row is lost; a second Ctrl-C leaves
            # at once.
            stop.set()
            if pending:
                print(
                    f"\nstopping: waiting up to {_STOP_TIMEOUT_S:g} s for the runs in "
                    "progress to hand over their rows (Ctrl-C again to leave now)",
                    file=sys.stderr,
                )

            def on_stopped(future) -> None:
                # A run that reached its budget meanwhile is done; errors of the
                # others cannot replace the one being raised.
                if future.status == "finished" and future.result():
                    if on_run_done is not None:
                        on_run_done(futures[future])

            try:
                stream_until_done(
                    pending, wait_first, drain, on_stopped, timeout=_STOP_TIMEOUT_S
                )
            except KeyboardInterrupt:
                pass
            client.cancel(list(pending))
            drain()
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
