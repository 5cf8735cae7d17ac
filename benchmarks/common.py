r"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/X.py``).

* ``environment()``: one line with the library versions, the thread count and
  the git revision of the ``botorch_ext`` checkout that is being measured.
* ``write_csv``: rows of dicts to a CSV file; ``append_csv_row``: one row, appended.
* ``OtherCPU``: the share of the machine's CPU time used by *other* processes
  while a block of code runs. On a small shared machine, background load slows
  multi-threaded kernels far more than proportionally, so timing rows report it.
"""

from __future__ import annotations

import csv
import os
import platform
import subprocess
import time

import botorch
import gpytorch
import torch

import botorch_ext


def package_revision() -> str:
    """Short git revision of the ``botorch_ext`` checkout, flagged if modified."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(botorch_ext.__file__)))
    try:
        rev = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--", "botorch_ext"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + (" + uncommitted changes in botorch_ext/" if dirty else "")


def environment() -> str:
    """A one-line description of what is being measured, and where."""
    return (
        f"botorch_ext {package_revision()}; torch {torch.__version__}, "
        f"botorch {botorch.__version__}, gpytorch {gpytorch.__version__}, "
        f"Python {platform.python_version()}; {os.cpu_count()} CPUs, "
        f"torch threads {torch.get_num_threads()}"
    )


def write_csv(path: str, rows: list[dict]) -> None:
    """Write dict rows to ``path`` (columns: every key seen, in first-seen order)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def append_csv_row(path: str, row: dict) -> None:
    """Append one dict row to ``path`` (header written if the file is new); an
    existing file is never truncated, so an interrupted benchmark keeps its rows."""
    new = not os.path.exists(path)
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


class OtherCPU:
    """Share of the machine's CPU time used by other processes in a ``with`` block.

    Reads the machine-wide busy time from ``/proc/stat`` (Linux only; ``n/a``
    elsewhere) and subtracts this process's own CPU time, children included.
    """

    share = float("nan")

    def __enter__(self) -> OtherCPU:
        self._start = (_machine_busy_s(), _own_cpu_s(), time.perf_counter())
        return self

    def __exit__(self, *exc) -> None:
        busy, own, now = _machine_busy_s(), _own_cpu_s(), time.perf_counter()
        if busy is None or self._start[0] is None:
            return
        other = (busy - self._start[0]) - (own - self._start[1])
        wall = max(now - self._start[2], 1e-9)
        self.share = max(other, 0.0) / (wall * (os.cpu_count() or 1))

    def __str__(self) -> str:
        return "n/a" if self.share != self.share else f"{100 * self.share:.0f}%"


def _machine_busy_s() -> float | None:
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
