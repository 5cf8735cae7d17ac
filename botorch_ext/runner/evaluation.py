r"""Evaluating the objective.

What counts as a failed evaluation, what the run does after one, and evaluations that
can be abandoned after a timeout.

An evaluation fails when the objective returns a non-finite value (NaN, inf),
raises, or runs past ``FaultPolicy.eval_timeout``. A failed evaluation is a row
(``status`` ``failed``, the reason in ``error``) and never enters a model or the
best value. What the run does next is ``FaultPolicy.on_error``:

- ``"auto"`` (the default): a non-finite value or a timeout is the objective's
  answer about that point, recorded, and the run goes on (as Ax marks a trial
  FAILED and goes on); an exception stops the run, since a crash often means a
  broken environment (a missing file, a lost license server) that would fail
  every later evaluation and spend the budget on nothing.
- ``"skip"``: every failure is recorded and the run goes on.
- ``"stop"``: every failure is recorded and the run stops (``EvaluationFailed``).

A batch that raises gave no value for any of its points: each of them is a failed
row with the same error (nothing is evaluated again to tell them apart).

With a timeout, batches are evaluated in a child process (``python -m
botorch_ext.runner.evaluation``, started once per run and again after a timeout),
which is killed when a batch runs too long; the run goes on in its own process,
in a worker process or a Dask task alike.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO, Any, cast

import torch
from torch import Tensor

from botorch_ext.runner.errors import ArgumentError
from botorch_ext.runner.problems import Problem, get_problem
from botorch_ext.runner.schema import RowDict

#: The choices of ``FaultPolicy.on_error``.
ON_ERROR = ("auto", "skip", "stop")

# The kinds of failure (``Outcome.kind``).
NONFINITE, EXCEPTION, TIMEOUT = "nonfinite", "exception", "timeout"

# How long a child process may take to start (import torch and build the
# problem) before the run gives up on it; not part of any evaluation's timeout.
_START_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class FaultPolicy:
    r"""What a run does about failed and hanging evaluations.

    Neither setting changes the rows of a run without failures, so a resume may
    change them.

    Args:
        on_error: ``"auto"``, ``"skip"`` or ``"stop"`` (see the module's text).
        eval_timeout: Seconds after which an evaluation (one batch) is abandoned
            and its points recorded as failed; None waits for ever and evaluates
            in the run's own process.
    """

    on_error: str = "auto"
    eval_timeout: float | None = None

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the argument for a bad setting."""
        if self.on_error not in ON_ERROR:
            raise ArgumentError(
                "on_error",
                f"unknown on_error {self.on_error!r}; choose from "
                f"{', '.join(ON_ERROR)}",
            )
        if self.eval_timeout is not None and not (
            math.isfinite(self.eval_timeout) and self.eval_timeout > 0
        ):
            raise ArgumentError(
                "eval_timeout",
                "eval_timeout must be a positive number of seconds, got "
                f"{self.eval_timeout}",
            )

    def stops(self, kind: str) -> bool:
        r"""Whether a failure of ``kind`` stops the run."""
        if self.on_error == "auto":
            return kind == EXCEPTION
        return self.on_error == "stop"


@dataclass(frozen=True)
class Outcome:
    r"""The result of evaluating one point.

    Attributes:
        value: The value (None if the evaluation failed).
        error: Why it failed (``""`` if it did not).
        kind: ``""``, ``"nonfinite"``, ``"exception"`` or ``"timeout"``.
    """

    value: float | None
    error: str = ""
    kind: str = ""

    @property
    def ok(self) -> bool:
        r"""Whether the evaluation gave a finite value."""
        return self.value is not None


class EvaluationFailed(RuntimeError):
    r"""A run stopped at a failed evaluation (``FaultPolicy.stops``).

    Attributes:
        row: The failed evaluation's row (already handed to ``on_row``).
    """

    def __init__(self, row: RowDict) -> None:
        point = [row[f"x{i}"] for i in range(row["dim"])]
        super().__init__(
            f"evaluation {row['n_evals']} of {row['method']} seed {row['seed']} "
            f"failed at x = [{', '.join(f'{v:.6g}' for v in point)}]: {row['error']}"
        )
        self.row = row

    def __reduce__(  # pickled by its row (worker processes, Dask)
        self,
    ) -> tuple[type[EvaluationFailed], tuple[RowDict]]:
        return (type(self), (self.row,))


def outcomes(problem: Problem, X: Tensor) -> list[Outcome]:
    r"""Evaluate ``problem`` at the rows of ``X`` in this process.

    Args:
        problem: The problem.
        X: An ``n x d`` batch of points in the unit cube.

    Returns:
        One ``Outcome`` per point.
    """
    try:
        values = problem(X)
        if values.shape != (X.shape[0],):
            raise ValueError(
                f"the objective returned shape {tuple(values.shape)} for "
                f"{X.shape[0]} points, expected ({X.shape[0]},)"
            )
    except Exception as e:  # the objective is user code: any error is a failure
        error = f"{type(e).__name__}: {e}".splitlines()[0]
        return [Outcome(None, error, EXCEPTION)] * X.shape[0]
    out = []
    for v in values.tolist():
        if math.isfinite(v):
            out.append(Outcome(v))
        else:
            out.append(Outcome(None, f"the objective returned {v}", NONFINITE))
    return out


class Evaluator:
    r"""Evaluates batches of one run's problem.

    In this process or, with a timeout, in a child process that is killed when a batch
    runs too long.

    Use as a context manager: the child process ends with the block.

    Args:
        problem: The problem (evaluated here without a timeout).
        spec: ``(name, dim)`` from which the child process builds the problem.
        timeout: Seconds per batch; None evaluates in this process.
    """

    def __init__(
        self, problem: Problem, spec: tuple[str, int | None], timeout: float | None
    ) -> None:
        self.problem, self.spec, self.timeout = problem, spec, timeout
        self._child: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, X: Tensor) -> list[Outcome]:
        r"""Evaluate the rows of ``X`` (``n x d``, unit cube); one outcome each."""
        if self.timeout is None:
            return outcomes(self.problem, X)
        child = self._start()
        assert child.stdin is not None and child.stdout is not None  # pipes (_start)
        _send(child.stdin, X.tolist())
        reply = _receive(child.stdout, self.timeout)
        if reply is None:
            self.close()
            error = f"timed out after {self.timeout:g} s (evaluation abandoned)"
            return [Outcome(None, error, TIMEOUT)] * X.shape[0]
        return [Outcome(*item) for item in reply]

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is not None:
            return self._child
        env = dict(os.environ)
        # The child imports what this process can (``module:callable`` problems).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        name, dim = self.spec
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, name, "" if dim is None else str(dim)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None  # opened as a pipe
        if _receive(child.stdout, _START_TIMEOUT_S) != "ready":
            child.kill()
            child.wait()
            raise RuntimeError(f"the evaluation process for {name!r} did not start")
        self._child = child
        return child

    def close(self) -> None:
        r"""Kill the child process, if any (an evaluation in it is abandoned)."""
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            for stream in (self._child.stdin, self._child.stdout):
                assert stream is not None  # both opened as pipes in _start
                stream.close()
            self._child = None


def _send(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _read_exactly(stream: IO[bytes], n: int, deadline: float | None) -> bytes | None:
    data = b""
    fd = stream.fileno()
    while len(data) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError("the evaluation process ended")
        data += chunk
    return data


def _receive(stream: IO[bytes], timeout: float | None) -> Any:
    deadline = None if timeout is None else time.monotonic() + timeout
    size = _read_exactly(stream, 8, deadline)
    if size is None:
        return None
    data = _read_exactly(stream, struct.unpack("<Q", size)[0], deadline)
    return None if data is None else pickle.loads(data)


def _serve(name: str, dim: int | None) -> None:
    # The child: the parent's Ctrl-C is the parent's to handle, and the user's
    # prints go to stderr, since stdout carries the replies.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    problem = get_problem(name, dim)
    _send(replies, "ready")
    while True:
        try:
            # Without a deadline, _read_exactly returns the bytes or raises EOFError.
            size = cast(bytes, _read_exactly(sys.stdin.buffer, 8, None))
            data = cast(
                bytes,
                _read_exactly(sys.stdin.buffer, struct.unpack("<Q", size)[0], None),
            )
        except EOFError:
            return
        X = torch.tensor(pickle.loads(data), dtype=torch.double)
        _send(replies, [(o.value, o.error, o.kind) for o in outcomes(problem, X)])


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]) if sys.argv[2] else None)
