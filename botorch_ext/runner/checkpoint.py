r"""A run's method state, saved beside its results so that a resume need not replay.

A method that carries state from one BO iteration to the next (``new_run``: the
SVGP that ``elbo-svgp`` carries over, the trust region of the ``turbo*`` methods)
must have that state back when an interrupted run continues. Without a saved
state ``run_bo`` rebuilds it by replaying the method's calls on the stored rows,
which costs all their compute again (hours for a long SVGP run). With a state
file it takes the method as it was after the last batch it saved and replays
only the batches stored after it.

A state file belongs to one run (its configuration, as a key) and to the first
``n_rows`` rows of its data: it is taken only when both match the stored rows,
and otherwise ignored (the run then replays, as without one). It is written
after the batch's rows are handed on, to a temporary name and renamed, so a kill
leaves the old or the new file, never half of one; a state one batch behind the
rows costs one batch of replay.

The file is a pickle (``torch.save`` of the method object): resume only output
directories you trust, as with any pickle.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import torch
from torch import Tensor

#: The folder of an output directory that holds its runs' state files.
STATE_DIR = "state"

_FORMAT = 1


def state_path(directory: str | os.PathLike[str], method: str, seed: int) -> Path:
    r"""Where the state of the run of ``method`` and ``seed`` in ``directory`` goes.

    Example:
        >>> state_path("out", "turbo", 3)
        PosixPath('out/state/turbo-s3.pt')

    Args:
        directory: The output directory (its ``results.csv`` holds the rows).
        method: The run's method name (characters other than letters, digits,
            ``.``, ``_`` and ``-`` become ``_``).
        seed: The run's seed.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", method)
    return Path(directory) / STATE_DIR / f"{safe}-s{seed}.pt"


def save_state(path: Path, key: str, X: Tensor, Y: Tensor, method: object) -> None:
    r"""Save ``method`` as it is after the rows whose points and values are ``X, Y``.

    Args:
        path: The state file (its folder is made if missing).
        key: The run's identity (``load_state`` takes the file only for it).
        X: ``n x d`` points of all the run's rows so far.
        Y: ``n x 1`` values as the method saw them (NaN for a failed row).
        method: The method object (pickled).

    Raises:
        OSError: If the file cannot be written.
        pickle.PicklingError, TypeError, AttributeError: If ``method`` cannot be
            pickled (e.g. it holds a lambda).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of this process's: a superseded attempt of the run (a Dask retry)
    # may still be writing the same state.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    state = {"format": _FORMAT, "key": key, "X": X, "Y": Y, "method": method}
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_state(path: Path, key: str, X: Tensor, Y: Tensor) -> tuple[object, int] | None:
    r"""The saved method and its number of rows, if ``path`` holds a state of this run.

    Args:
        path: The state file.
        key: The run's identity, as given to ``save_state``.
        X: ``N x d`` points of the stored rows.
        Y: ``N x 1`` values of the stored rows (NaN for a failed row).

    Returns:
        ``(method, n)`` if the file was saved by this run after its first
        ``n <= N`` rows and their points and values are ``X[:n], Y[:n]``;
        None if there is no file, or it belongs to another run or to other or
        more rows (the caller then replays). An unreadable file warns and gives
        None.
    """
    if not path.exists():
        return None
    try:
        saved = torch.load(path, weights_only=False)
        if not isinstance(saved, dict) or saved.get("format") != _FORMAT:
            raise ValueError("not a method state of this version")
        n = int(saved["X"].shape[0])
        ok = saved["key"] == key and n <= X.shape[0]
        ok = ok and _equal(saved["X"], X[:n]) and _equal(saved["Y"], Y[:n])
    except Exception as e:  # a truncated file, another version's classes, ...
        warnings.warn(
            f"cannot read the method state {str(path)!r} ({e}); the run's stored "
            "steps are replayed instead",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return (saved["method"], n) if ok else None


def _equal(a: Tensor, b: Tensor) -> bool:
    # Exact equality, NaN (a failed row's value) equal to NaN.
    return a.shape == b.shape and bool(
        torch.isclose(a, b, rtol=0.0, atol=0.0, equal_nan=True).all()
    )
