# Over 500 lines: the results file's writer, reader and resume checks belong together
# (each relies on the others' guarantees); the schema and metadata live beside it.
r"""The results of runs on disk.

The ``results.csv`` schema, its writer and reader, ``config.json``, and the rules for
re-using an output directory (refuse, resume or overwrite).

``results.csv`` has one row per evaluation, in the columns of ``schema``. Rows are
written as whole lines, one ``write`` each, so a killed process leaves every row it
wrote complete. A file is only ever appended to, except that ``--overwrite`` starts
it afresh, a resume cuts an incomplete last line (a line that holds no complete
row), and a resume that finds duplicate evaluations moves them to
``results.duplicates.csv`` (saying so). A file damaged anywhere else is never
changed: the resume stops and names the line.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botorch_ext.runner import metadata as meta
from botorch_ext.runner import schema
from botorch_ext.runner.aliases import deprecated_aliases
from botorch_ext.runner.checkpoint import STATE_DIR
from botorch_ext.runner.metadata import now_iso, peak_rss_mb
from botorch_ext.runner.schema import RowDict, run_key

#: Names this module re-exported from their homes in 0.2.0: still
#: importable from here, with a ``DeprecationWarning``, until 0.3.0.
_MOVED = {
    **dict.fromkeys(
        ("METADATA_KEYS", "config_differences", "redact", "run_metadata"),
        "botorch_ext.runner.metadata",
    ),
    **dict.fromkeys(
        (
            "DIAGNOSTIC_COLUMNS",
            "FIXED_COLUMNS",
            "SCHEMA_VERSION",
            "columns",
            "diagnostic_fields",
            "parse_row",
            "x_columns",
        ),
        "botorch_ext.runner.schema",
    ),
    "holding_interrupts": "botorch_ext.runner.signals",
}
__getattr__ = deprecated_aliases(__name__, _MOVED)


class CsvWriter:
    r"""Write rows to a CSV file as whole lines, each with one ``write`` system call.

    There is no buffering, so that a killed process leaves no partial row behind and
    every row written is on disk for the next process to read.

    Args:
        path: The CSV file.
        fieldnames: The columns, in order.
        append: Append to an existing file (whose header must be ``fieldnames``)
            instead of starting a new one with a header.
    """

    def __init__(
        self, path: Path, fieldnames: Sequence[str], append: bool = False
    ) -> None:
        self.fieldnames = tuple(fieldnames)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        self._fd = os.open(path, flags, 0o644)
        if not append:
            self._write_line(self.fieldnames)

    def _write_line(self, values: Sequence[object]) -> None:
        buffer = io.StringIO()
        csv.writer(buffer).writerow(values)
        data = buffer.getvalue().encode()
        while data:  # os.write may write less than asked
            data = data[os.write(self._fd, data) :]

    def write(self, row: RowDict) -> None:
        r"""Append one row (a dict with at least the writer's columns)."""
        self._write_line([row[k] for k in self.fieldnames])

    def close(self) -> None:
        r"""Close the file."""
        os.close(self._fd)


@dataclass
class StoredResults:
    r"""The rows of an existing ``results.csv``.

    Attributes:
        header: The file's columns.
        rows: The complete rows, typed as by ``parse_row``.
        partial_line: The incomplete last line that was dropped (``""`` if none).
    """

    header: tuple[str, ...]
    rows: list[RowDict] = field(default_factory=list)
    partial_line: str = ""


def _damaged(path: Path, number: int, what: str) -> ValueError:
    return ValueError(
        f"{path} line {number} is damaged ({what}); nothing was changed. Fix or "
        "delete that line (keep a copy of the file), then resume again; or start "
        "afresh with --overwrite"
    )


def read_results(path: Path, repair: bool = False) -> StoredResults:
    r"""Read a ``results.csv``, tolerating an incomplete last line.

    A process killed while writing (``SIGKILL``, power loss) can leave a last line
    without its newline; that line is dropped (it is no complete row), and with
    ``repair=True`` also cut from the file so that appended rows start on a line
    of their own. Any other damage (a line with the wrong number of fields, a
    field that does not parse, bytes that are not text) raises and changes
    nothing.

    A file named ``*.gz`` is read through gzip (results stored compressed, e.g.
    in the benchmarks); it cannot be repaired in place.

    Args:
        path: The file.
        repair: Cut an incomplete last line from the file (only once every
            complete line has parsed).

    Returns:
        The header, the parsed rows and the dropped line.

    Raises:
        ValueError: Naming the first damaged line and what to do, or for
            ``repair`` of a compressed file.
    """
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".gz":
        if repair:
            raise ValueError(f"cannot repair the compressed file {str(path)!r}")
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise ValueError(
                f"{str(path)!r} is not a complete gzip file ({e})"
            ) from None
    partial = b""
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        data, partial = data[:cut], data[cut:]
    header: tuple[str, ...] = ()
    rows: list[RowDict] = []
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        try:
            text = line.decode()
        except UnicodeDecodeError:
            raise _damaged(path, number, "bytes that are not UTF-8 text") from None
        if "\0" in text:
            raise _damaged(path, number, "NUL bytes")
        values = next(csv.reader([text]), [])
        if number == 1:
            header = tuple(values)
            continue
        if len(values) != len(header):
            raise _damaged(
                path, number, f"{len(values)} fields, expected {len(header)}"
            )
        try:
            rows.append(schema.parse_row(dict(zip(header, values, strict=True))))
        except ValueError as e:
            raise _damaged(path, number, str(e)) from None
    if partial and repair:
        os.truncate(path, len(data))
    return StoredResults(header, rows, partial.decode(errors="replace"))


def drop_duplicates(rows: list[RowDict]) -> tuple[list[RowDict], list[RowDict]]:
    r"""Split rows into one consistent history per run and the duplicates.

    Each run's rows are kept in file order up to the first row whose evaluation
    key ``(method, seed, n_evals)`` was seen before; that row and every later
    row of the run are duplicates (a second attempt of the run, which started
    again from an earlier point, so its later rows follow another history).

    Args:
        rows: Rows in file order.

    Returns:
        ``(kept, dropped)``, both in file order; ``dropped`` is empty for a file
        without duplicate keys.
    """
    seen: set[tuple[str, int, int]] = set()
    cut: set[tuple[str, int, str, int]] = set()
    kept: list[RowDict] = []
    dropped: list[RowDict] = []
    for row in rows:
        run = (row["problem"], row["dim"], row["method"], row["seed"])
        if run not in cut and run_key(row) in seen:
            cut.add(run)
        if run in cut:
            dropped.append(row)
        else:
            seen.add(run_key(row))
            kept.append(row)
    return kept, dropped


def load_results(directories: Sequence[Path]) -> list[RowDict]:
    r"""The merged rows of the ``results.csv`` files of several output directories.

    For example a grid run in pieces; nothing is run.

    Example:
        >>> rows = load_results([Path("results-seeds-0-4"), Path("results-seeds-5-9")])

    Args:
        directories: Output directories of ``run`` or ``compare`` (each with a
            ``results.csv``, or a ``results.csv.gz``).

    Returns:
        All complete rows (an incomplete last line is skipped), in file order.

    Raises:
        ValueError: If a directory has no ``results.csv``, a file is damaged, or
            the same run (problem, dim, method, seed) is in two directories
            (or a directory is given twice).
    """
    rows: list[RowDict] = []
    owner: dict[tuple[str, int, str, int], Path] = {}
    given: set[Path] = set()
    for directory in directories:
        if Path(directory).resolve() in given:
            raise ValueError(f"directory {str(directory)!r} is given twice")
        given.add(Path(directory).resolve())
        path = stored_results_path(Path(directory))
        if path is None:
            raise ValueError(f"no results.csv in {str(directory)!r}")
        stored = read_results(path)
        for row in stored.rows:
            run = (row["problem"], row["dim"], row["method"], row["seed"])
            first = owner.setdefault(run, Path(directory))
            if first != Path(directory):
                raise ValueError(
                    f"run {run[2]!r} seed {run[3]} on {run[0]} is in both "
                    f"{str(first)!r} and {str(directory)!r}; pass one of them"
                )
            rows.append(row)
    return rows


def stored_results_path(directory: Path) -> Path | None:
    r"""A directory's ``results.csv``, or its compressed ``results.csv.gz``, or None.

    Example:
        >>> stored_results_path(Path("benchmarks/eulbo/results/authors/aabo/elbo-0"))
    """
    for name in ("results.csv", "results.csv.gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def count_rows(path: Path) -> int:
    r"""Number of complete rows in a ``results.csv``.

    0 if there is no file, -1 if the file is damaged (it cannot be read back).
    """
    if not Path(path).exists():
        return 0
    try:
        return len(read_results(path).rows)
    except (ValueError, UnicodeDecodeError):
        return -1  # damaged, but it holds something: never truncate it silently


@dataclass
class Output:
    r"""An output directory opened for writing.

    It holds the CSV writer, the rows stored by an earlier (resumed) attempt and the
    ``config.json`` contents.

    Use ``open_output`` to make one and ``close`` to record the end.
    """

    directory: Path
    config: dict[str, Any]
    writer: CsvWriter
    stored_rows: list[RowDict]

    def close(self, status: str) -> None:
        r"""Close the CSV and record the run's end in ``config.json``.

        Writes ``end_time``, ``status`` and ``peak_rss_mb``.

        Args:
            status: ``"finished"`` or ``"interrupted"``.
        """
        self.writer.close()
        self.config["end_time"] = now_iso()
        self.config["status"] = status
        self.config["peak_rss_mb"] = peak_rss_mb()
        _write_config(self.directory, self.config)


def _write_config(directory: Path, config: dict[str, Any]) -> None:
    # Written to a temporary name and renamed, so a kill leaves the old or the new
    # file, never half of one.
    tmp = directory / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2))
    os.replace(tmp, directory / "config.json")


def open_output(
    directory: Path,
    config: dict[str, Any],
    dim: int,
    resume: bool = False,
    overwrite: bool = False,
    argv: Sequence[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> Output:
    r"""Open an output directory for a run or grid.

    Refuse one that holds results unless ``resume`` or ``overwrite`` is given.

    Args:
        directory: The directory (it must exist and be writable).
        config: The settings of the new command (written to ``config.json``
            with ``run_metadata``, ``schema_version`` and ``start_time``).
        dim: The problem's dimension (the ``x`` columns).
        resume: Continue the stored results: ``config.json`` must match
            ``config``; the stored rows are returned and new ones appended.
        overwrite: Start a fresh ``results.csv``.
        argv: The command line to record (``sys.argv`` if None).
        log: Called with one-line notes for the user (e.g. a dropped partial
            line); ``print`` to stderr if None.

    Returns:
        The opened ``Output``.

    Raises:
        ValueError: If the directory holds results and neither flag is given,
            both are given, or the stored configuration differs or cannot be
            resumed (naming the differing settings).
    """
    if log is None:

        def log(message: str) -> None:
            print(message, file=sys.stderr)

    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other; pass one")
    path = directory / "results.csv"
    n_rows = count_rows(path)
    fieldnames = schema.columns(dim)
    # Through JSON, so that tuples compare equal to the lists read back.
    new_config = json.loads(
        json.dumps({"schema_version": schema.SCHEMA_VERSION, **config})
    )
    metadata = meta.run_metadata(argv)
    if n_rows and not (resume or overwrite):
        held = "a damaged results.csv" if n_rows < 0 else f"{n_rows} result rows"
        raise ValueError(
            f"output directory {str(directory)!r} already holds {held}; pass "
            "--resume to continue them or --overwrite to discard them"
        )
    if resume and n_rows:
        stored_config = _read_config(directory)
        rows = _resumable_rows(directory, stored_config, new_config, dim, log)
        stored_config.setdefault("resumed", []).append(
            {
                "time": now_iso(),
                **{k: config.get(k) for k in _RESUME_SETTINGS},
                **metadata,
            }
        )
        stored_config |= {"end_time": None, "status": "running"}
        _write_config(directory, stored_config)
        writer = CsvWriter(path, fieldnames, append=True)
        return Output(directory, stored_config, writer, rows)
    if resume and path.exists() and n_rows == 0:
        log(f"resume: {path} holds no rows yet; starting from the beginning")
    # A fresh start: the method states of discarded rows must not be resumed.
    shutil.rmtree(directory / STATE_DIR, ignore_errors=True)
    full = {
        **new_config,
        **metadata,
        "start_time": now_iso(),
        "end_time": None,
        "status": "running",
    }
    _write_config(directory, full)
    return Output(directory, full, CsvWriter(path, fieldnames), [])


# The settings a resume may change, recorded with each resume.
_RESUME_SETTINGS = ("workers", "backend", "scheduler", "on_error", "eval_timeout")

# The older schema a resume upgrades: it adds the status and error columns.
_UPGRADABLE = 2


def _resumable_rows(
    directory: Path,
    stored_config: dict[str, Any],
    new_config: dict[str, Any],
    dim: int,
    log: Callable[[str], None],
) -> list[RowDict]:
    # Checks the stored results against the new command and repairs what can be
    # repaired without losing a row, saying so; raises for the rest.
    path = directory / "results.csv"
    version = stored_config.get("schema_version", 1)
    if version not in (schema.SCHEMA_VERSION, _UPGRADABLE):
        raise ValueError(
            f"cannot resume {str(directory)!r}: its results have schema version "
            f"{version}, this botorch_ext writes {schema.SCHEMA_VERSION}; use "
            "--overwrite or another --output"
        )
    differences = meta.config_differences(stored_config, new_config)
    if differences:
        raise ValueError(
            f"cannot resume {str(directory)!r}: the settings differ from the "
            f"stored config.json ({'; '.join(differences)})"
        )
    stored = read_results(path, repair=True)
    fieldnames = schema.columns(dim)
    expected = fieldnames
    if version == _UPGRADABLE:
        expected = tuple(c for c in fieldnames if c not in ("status", "error"))
    if stored.header != expected:
        raise ValueError(
            f"cannot resume {str(directory)!r}: results.csv has the columns "
            f"{', '.join(stored.header)}, expected {', '.join(expected)}"
        )
    if stored.partial_line:
        log(
            f"resume: dropped an incomplete last line of {path} "
            f"({len(stored.partial_line)} characters, no complete row)"
        )
    rows, dropped = drop_duplicates(stored.rows)
    if dropped:
        side = _free_name(directory / "results.duplicates.csv")
        _write_rows(side, stored.header, dropped)
        runs = sorted({f"{r['method']}/seed {r['seed']}" for r in dropped})
        log(
            f"resume: {path} held {len(dropped)} rows of runs that had started "
            f"again ({', '.join(runs)}), some with duplicate (method, seed, "
            f"n_evals) keys; moved them to {side}, and those runs continue from "
            "the rows before their first duplicate"
        )
    if dropped or version == _UPGRADABLE:
        _write_rows(path, fieldnames, rows)
    if version == _UPGRADABLE:
        stored_config["schema_version"] = schema.SCHEMA_VERSION
        log(
            f"resume: upgraded {path} to schema version {schema.SCHEMA_VERSION} (added "
            "the status and error columns; every stored row is ok)"
        )
    return rows


def _free_name(path: Path) -> Path:
    n = 1
    candidate = path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}.{n}{path.suffix}")
    return candidate


def _write_rows(path: Path, fieldnames: Sequence[str], rows: list[RowDict]) -> None:
    # A new file under a temporary name, renamed over the old one: a kill leaves
    # the old file or the new one, never a mix.
    tmp = path.with_name(path.name + ".tmp")
    writer = CsvWriter(tmp, fieldnames)
    try:
        for row in rows:
            writer.write(row)
    finally:
        writer.close()
    os.replace(tmp, path)


def _read_config(directory: Path) -> dict[str, Any]:
    try:
        config: dict[str, Any] = json.loads((directory / "config.json").read_text())
        return config
    except (OSError, ValueError) as e:
        raise ValueError(
            f"cannot resume {str(directory)!r}: no readable config.json ({e})"
        ) from e
