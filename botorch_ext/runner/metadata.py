r"""How and where a run was made, as ``config.json`` records it.

Versions, host, times and memory; which of its keys a resume may change; and the
redaction that keeps credentials out of it.
"""

from __future__ import annotations

import platform
import re
import socket
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: ``config.json`` keys that describe how and where a run was made, not what it
#: computes; a resume does not require them to match.
METADATA_KEYS = frozenset(
    {
        "schema_version",
        "argv",
        "versions",
        "git_revision",
        "host",
        "torch_threads",
        "workers",
        "backend",
        "scheduler",
        "start_time",
        "end_time",
        "status",
        "resumed",
        "peak_rss_mb",
        "on_error",
        "eval_timeout",
        "fault_notes",
    }
)


def now_iso() -> str:
    r"""The current UTC time in ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run_metadata(argv: Sequence[str] | None = None) -> dict[str, Any]:
    r"""What ``config.json`` records about how and where a run is made.

    Args:
        argv: The command line (``sys.argv`` if None).

    Returns:
        ``argv``, ``versions`` (botorch_ext, botorch, gpytorch, torch, Python),
        ``git_revision`` (of the checkout holding the package; None outside
        one), ``host`` and ``torch_threads`` (this process's, now).
    """
    import botorch
    import gpytorch
    import torch

    import botorch_ext

    return {
        "argv": [redact(a) for a in (sys.argv if argv is None else argv)],
        "versions": {
            "botorch_ext": botorch_ext.__version__,
            # botorch sets __version__ in a try block, which mypy does not
            # count as exported.
            "botorch": vars(botorch)["__version__"],
            "gpytorch": gpytorch.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "git_revision": _git_revision(),
        "host": socket.gethostname(),
        "torch_threads": torch.get_num_threads(),
    }


def config_differences(stored: dict[str, Any], new: dict[str, Any]) -> list[str]:
    r"""The settings in which two ``config.json`` contents differ.

    Metadata such as times, versions and the worker count is left aside.

    Args:
        stored: The stored ``config.json``.
        new: The configuration of the new command.

    Returns:
        One ``"name: stored -> new"`` string per differing setting (nested
        settings as ``options.num_restarts``), sorted.
    """

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in d.items():
            if not prefix and key in METADATA_KEYS:
                continue
            if isinstance(value, dict):
                out |= flat(value, f"{prefix}{key}.")
            else:
                out[f"{prefix}{key}"] = value
        return out

    a, b = flat(stored), flat(new)
    missing = "(missing)"
    return [
        f"{key}: {a.get(key, missing)!r} -> {b.get(key, missing)!r}"
        for key in sorted(set(a) | set(b))
        if a.get(key, missing) != b.get(key, missing)
    ]


def peak_rss_mb() -> float | None:
    r"""Peak resident memory (MiB) of this process and its finished children.

    For ``botorch-ext run`` that is the run's own peak (the BO loop runs in
    this process); for a local process-pool grid, the largest of the client's
    and the finished workers' peaks; Dask workers on other processes or
    machines are not included. ``None`` where the platform has no
    ``getrusage`` (Windows).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    # Linux reports KiB, macOS bytes.
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def redact(text: str) -> str:
    r"""``text`` with the credentials in ``scheme://user:pass@host`` addresses hidden.

    The user and password of any such address are replaced by ``***``, for what
    ``config.json`` records.
    """
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1***@", text)
