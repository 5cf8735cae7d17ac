r"""A Branin objective with planted faults (``tests.runner.faulty:branin``).

Set through environment variables, so that worker processes, Dask workers and
evaluation child processes share them (every count is over the evaluations
logged so far, in ``FAULTY_LOG``, across all processes):

- ``FAULTY_LOG``: a file; each evaluated point is appended as one line
  ``x0,x1`` (after its value exists).
- ``FAULTY_NAN=1``: NaN where the unit-cube ``x0 > 0.5`` (native ``x0 > 2.5``).
- ``FAULTY_RAISE_AT=k``: the evaluation after ``k`` logged ones raises, once
  (``FAULTY_MARKER``).
- ``FAULTY_KILL_AT=k``: once ``k`` evaluations are logged, the next call SIGKILLs
  ``FAULTY_KILL_PID`` (default: its own process; ``parent``: its parent process),
  once (``FAULTY_MARKER``); ``FAULTY_KILL_SIGNAL=TERM`` sends SIGTERM instead.
- ``FAULTY_HANG_AT=k``: the evaluation after ``k`` logged ones sleeps for an
  hour, once (``FAULTY_MARKER``).
"""

import math
import os
import signal
import time
from pathlib import Path

import torch
from botorch.test_functions import Branin


def _logged() -> int:
    path = os.environ.get("FAULTY_LOG")
    if not path or not Path(path).exists():
        return 0
    return len(Path(path).read_text().splitlines())


def _once() -> bool:
    marker = Path(os.environ["FAULTY_MARKER"])
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


class FaultyBranin(Branin):
    def evaluate_true(self, X):
        env = os.environ
        n = _logged()
        if "FAULTY_KILL_AT" in env and n >= int(env["FAULTY_KILL_AT"]) and _once():
            pid = env.get("FAULTY_KILL_PID", str(os.getpid()))
            pid = os.getppid() if pid == "parent" else int(pid)
            os.kill(pid, getattr(signal, "SIG" + env.get("FAULTY_KILL_SIGNAL", "KILL")))
            time.sleep(5)  # another process was killed: give it time to be seen
        values = []
        for i, x in enumerate(X):
            if "FAULTY_RAISE_AT" in env and n + i == int(env["FAULTY_RAISE_AT"]):
                if _once():
                    raise RuntimeError("planted failure")
            if "FAULTY_HANG_AT" in env and n + i == int(env["FAULTY_HANG_AT"]):
                if _once():
                    time.sleep(3600)
            value = super().evaluate_true(x.unsqueeze(0))[0]
            if env.get("FAULTY_NAN") == "1" and float(x[0]) > 2.5:
                value = torch.tensor(math.nan).to(value)
            values.append(value)
        out = torch.stack(values)
        if "FAULTY_LOG" in env:
            text = "".join(f"{float(x[0])!r},{float(x[1])!r}\n" for x in X)
            fd = os.open(env["FAULTY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, text.encode())
            os.close(fd)
        return out


def branin():
    return FaultyBranin()
