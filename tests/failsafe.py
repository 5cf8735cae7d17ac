r"""Failsafes for tests that would hang if the behaviour they test broke.

A test of a timeout waits on something that never ends by itself (an objective
that sleeps for an hour): with the timeout broken, it would hang CI instead of
failing. These helpers fail it after a bounded time instead.

* ``failsafe(seconds)``: a ``with`` block in the main thread that is interrupted
  (``SIGALRM``) with ``FailsafeExpired``, an ``AssertionError``, after ``seconds``.
* ``run_with_failsafe(command, seconds)``: a subprocess in a session of its own,
  killed with everything it started when it runs past ``seconds``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class FailsafeExpired(AssertionError):
    r"""A test ran past its failsafe (a hang: the behaviour under test broke)."""


@contextmanager
def failsafe(seconds: float, what: str = "the block") -> Iterator[None]:
    r"""Raise ``FailsafeExpired`` in the block once it has run ``seconds``.

    Blocking calls (``time.sleep``, reading a pipe) are interrupted. Where there
    is no ``SIGALRM`` (Windows) or off the main thread, the block runs unguarded.
    """
    if not hasattr(signal, "setitimer") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise FailsafeExpired(f"{what} still ran after {seconds:g} s (failsafe)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_with_failsafe(
    command: Sequence[str] | str, seconds: float, **kwargs: Any
) -> subprocess.CompletedProcess:
    r"""``subprocess.run`` with text output captured, killed after ``seconds``.

    The command runs in a session of its own; past ``seconds`` the whole process
    group (the command and the processes it started) is killed and
    ``FailsafeExpired`` raised with the output so far.
    """
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover (it ended just now)
            pass
        out, err = proc.communicate()
        raise FailsafeExpired(
            f"{command!r} still ran after {seconds:g} s (failsafe); killed. "
            f"Its output: {(out + err)[-2000:]}"
        ) from None
    return subprocess.CompletedProcess(command, proc.returncode, out, err)
