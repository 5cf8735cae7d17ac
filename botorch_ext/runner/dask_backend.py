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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

import torch

from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.results import holding_interrupts

# How long a client waits to reach an existing scheduler.
_CONNECT_TIMEOUT = "20s"

# How long the caller waits for a finished run before it drains the row queue
# again; rows reach the CSV at most about this long after their evaluation.
_DRAIN_INTERVAL_S = 0.2


def _run_task(config: RunConfig, stored_rows: list[dict], rows, threads: int) -> str:
    # Each task pins the threads itself: a worker of an existing cluster may run
    # with any setting, and results are reproducible only at a fixed count.
    torch.set_num_threads(threads)
    run_bo(config, on_row=rows.put, stored_rows=stored_rows)
    return f"{config.method}/{config.seed}"


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
        from distributed import Client, LocalCluster, Queue, wait
    except ImportError as e:  # pragma: no cover (a dependency)
        raise ImportError(
            "--backend dask needs Dask's distributed: pip install distributed"
        ) from e
    from botorch_ext.runner.compare import sigint_blocked_in_children

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

        def drain() -> None:
            with holding_interrupts():  # a row taken off the queue is written
                for row in queue.get(batch=True):
                    collect(row)

        futures = {
            client.submit(
                _run_task,
                config,
                run_rows,
                queue,
                threads,
                key=f"botorch-ext-{config.method}-{config.seed}-{token}",
                pure=False,
            ): config
            for config, run_rows in todo
        }
        pending = set(futures)
        try:
            while pending:
                try:
                    done, pending = wait(
                        pending,
                        timeout=_DRAIN_INTERVAL_S,
                        return_when="FIRST_COMPLETED",
                    )
                except TimeoutError:
                    done = set()
                drain()
                for future in done:
                    future.result()  # a run's error ends the grid here
                    if on_run_done is not None:
                        on_run_done(futures[future])
        except BaseException:
            # Interrupted, or a run failed: stop the other runs, then hand over
            # every row queued before they stopped.
            client.cancel(list(pending))
            drain()
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
