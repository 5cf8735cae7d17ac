r"""Signal handling of the runner: stop requests that wait for a row to be written.

``holding_interrupts`` wraps the evaluation of a batch and the hand-over of its
rows (to a file or a queue), so that a ``SIGINT`` or ``SIGTERM`` cannot fall
between an evaluation and its row.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
