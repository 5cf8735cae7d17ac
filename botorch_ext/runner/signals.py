r"""Signal handling of the runner: stop requests that wait for a row to be written.

``holding_interrupts`` wraps the evaluation of a batch and the hand-over of its
rows (to a file or a queue), so that a ``SIGINT`` or ``SIGTERM`` cannot fall
between an evaluation and its row.
``stop_requests`` makes ``SIGTERM`` stop a command the way ``Ctrl-C`` does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def stop_requests() -> Iterator[list[int]]:
    r"""Make ``SIGTERM`` raise ``KeyboardInterrupt``, as ``SIGINT`` does, in a block.

    A ``kill``, a job scheduler's cancellation or a container's stop then takes
    the runner's ``Ctrl-C`` path: the rows evaluated so far are written, the
    run is marked ``interrupted`` and worker processes are stopped. Without it
    the default action of ``SIGTERM`` ends the process at once. A no-op outside
    the main thread.

    Yields:
        The ``SIGTERM``s received in the block (empty after a ``Ctrl-C``), to
        tell the two apart afterwards.

    Example:
        >>> with stop_requests() as terminated:
        ...     try:
        ...         run()
        ...     except KeyboardInterrupt:
        ...         status = 143 if terminated else 130
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def holding_interrupts() -> Iterator[None]:
    r"""Hold ``SIGINT`` and ``SIGTERM`` until the block ends, then deliver them.

    Wraps the evaluation of a batch and the hand-over of its rows (to a file or a
    queue), so that a stop request cannot fall between an evaluation and its row:
    an evaluated row is always written. A no-op outside the main thread (where
    Python cannot set signal handlers).

    Example:
        >>> with holding_interrupts():
        ...     writer.write(row)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, lambda s, _: received.append(s))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            # Re-delivered to the restored handlers: KeyboardInterrupt for SIGINT,
            # the default (exit) for SIGTERM, nothing where they are ignored.
            signal.raise_signal(received[0])
