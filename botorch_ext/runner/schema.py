r"""The ``results.csv`` schema, declared once: each column's name, type and place.

``results.csv`` has one row per evaluation: the columns ``FIXED_COLUMNS`` followed
by the evaluated point ``x0 .. x{d-1}`` (``columns(dim)``). A row is a typed
record, ``Row``, whose fields declare the columns in file order; ``SCHEMA`` (each
column's name, type and the value read for a file without it) is built from them,
and the header (``columns``), the parser (``parse_row``) and the row dicts the
runner hands on (``Row.to_dict``, ``build_row``) from ``SCHEMA``.

An evaluation is ``ok`` (``status``) or ``failed``: the objective returned a
non-finite value, raised, or ran past the evaluation timeout. A failed row holds
its point, an empty ``value`` and the reason in ``error``; its ``best_value`` and
``regret`` are those of the ``ok`` rows before it (empty while there is none).
Rows of files written before the ``status`` column existed read as ``ok``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

#: Version of the ``results.csv`` schema and ``config.json`` layout; 2 added the
#: point ``x0..``, ``iteration``, ``batch_position`` and the timing columns, 3 the
#: ``status`` and ``error`` columns.
SCHEMA_VERSION = 3

#: The values of the ``status`` column.
OK, FAILED = "ok", "failed"


@dataclass(frozen=True)
class Column:
    r"""One column of ``results.csv``.

    Args:
        name: The header name.
        type: ``str``, ``int`` or ``float``: what ``parse_row`` converts a
            non-empty field to.
        default: The value read for a file without this column (a column added
            in a later schema version); None for columns every file has.
    """

    name: str
    type: type = str
    default: str | None = None


#: The model-state columns and the ``diagnostics`` keys they come from: the fitted
#: state of the iteration that proposed the row (empty for the initial design and
#: for model-free methods). ``model_noise`` is the noise variance on the model's
#: (standardized) scale, ``model_lengthscales`` the ``;``-joined lengthscales,
#: ``model_elbo`` the per-datum ELBO (SVGP methods), ``model_utility`` the
#: expected log soft improvement of the proposal under the SVGP (the EULBO's
#: utility term; for ``elbo-svgp`` at ``q = 1`` only), ``model_fit_steps`` the
#: optimizer's steps of the fit (L-BFGS or Adam), and for BOCK
#: ``model_angular_weights`` (``c_0;...;c_P``) and ``model_warp`` (``alpha;beta``).
DIAGNOSTIC_COLUMNS = {
    "model_noise": "noise",
    "model_lengthscales": "lengthscales",
    "model_elbo": "elbo",
    "model_utility": "utility",
    "model_fit_steps": "fit_steps",
    "model_angular_weights": "angular_weights",
    "model_warp": "warp",
}

#: A row as a dict, column name -> value (``Row.to_dict``, ``parse_row``): the
#: values are of the columns' types, or ``""`` where a field is empty.
RowDict = dict[str, Any]

#: A field that is empty in ``results.csv`` (a failed row's value, a row without
#: diagnostics).
Empty = str


def _column(kind: type = str, missing: str | None = None, empty: bool = False) -> Any:
    # A field of ``Row`` and its column: ``kind`` is what ``parse_row`` converts
    # a non-empty field to, ``missing`` the value read for a file without the
    # column, ``empty`` gives the field the default ``""``.
    metadata = {"type": kind, "missing": missing}
    if empty:
        return field(default="", metadata=metadata)
    return field(metadata=metadata)


@dataclass(frozen=True)
class Row:
    r"""One evaluation, one line of ``results.csv``: the schema, declared once.

    The fields up to ``model_warp`` are the columns ``FIXED_COLUMNS``, in file
    order (``SCHEMA`` is built from them); ``point`` is the evaluated point, the
    columns ``x0 .. x{dim-1}``. An empty field (``""``) is one a row does not
    have: the value of a failed evaluation, the best value and regret before the
    first success, the ``model_*`` diagnostics of a row without a model.

    Example:
        >>> Row(problem="branin", dim=2, ..., point=(0.1, 0.2)).to_dict()

    Raises:
        ValueError: If ``point`` has not ``dim`` coordinates.
    """

    problem: str = _column()
    dim: int = _column(int)
    method: str = _column()
    seed: int = _column(int)
    n_evals: int = _column(int)
    iteration: int = _column(int)
    batch_position: int = _column(int)
    value: float | Empty = _column(float)
    status: str = _column(str, missing=OK)
    error: str = _column(str, missing="")
    best_value: float | Empty = _column(float)
    regret: float | Empty = _column(float)
    seconds: float = _column(float)
    fit_seconds: float = _column(float)
    acq_seconds: float = _column(float)
    eval_seconds: float = _column(float)
    init: str = _column()
    outcome_transform: str = _column()
    model_noise: float | Empty = _column(float, empty=True)
    model_lengthscales: str = _column(empty=True)
    model_elbo: float | Empty = _column(float, empty=True)
    model_utility: float | Empty = _column(float, empty=True)
    model_fit_steps: int | Empty = _column(int, empty=True)
    model_angular_weights: str = _column(empty=True)
    model_warp: str = _column(empty=True)
    point: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        r"""Check that the point has ``dim`` coordinates."""
        if len(self.point) != self.dim:
            raise ValueError(
                f"point has {len(self.point)} coordinates, expected dim={self.dim}"
            )

    def to_dict(self) -> RowDict:
        r"""The row as ``results.csv`` holds it: ``columns(dim)`` -> value, in order."""
        row = {name: getattr(self, name) for name in FIXED_COLUMNS}
        row.update(zip(x_columns(self.dim), self.point, strict=True))
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Row:
        r"""The record of a row dict (``parse_row``'d or ``to_dict``'s)."""
        fields_ = {name: row[name] for name in FIXED_COLUMNS}
        point = tuple(row[c] for c in x_columns(int(row["dim"])))
        return cls(**fields_, point=point)


#: The columns (all but the point's) in file order, as the fields of ``Row``.
SCHEMA: tuple[Column, ...] = tuple(
    Column(f.name, f.metadata["type"], f.metadata["missing"])
    for f in fields(Row)
    if f.metadata
)

#: The columns every ``results.csv`` starts with, in order; ``x0 .. x{d-1}`` follow.
FIXED_COLUMNS = tuple(c.name for c in SCHEMA)

_BY_NAME = {c.name: c for c in SCHEMA}


def x_columns(dim: int) -> tuple[str, ...]:
    r"""The point's columns ``x0 .. x{dim-1}``."""
    return tuple(f"x{i}" for i in range(dim))


def columns(dim: int) -> tuple[str, ...]:
    r"""All columns of a ``results.csv`` for a ``dim``-dimensional problem.

    Example:
        >>> columns(2)[-3:]
        ('model_warp', 'x0', 'x1')
    """
    return FIXED_COLUMNS + x_columns(dim)


def _column_type(name: str) -> type:
    column = _BY_NAME.get(name)
    if column is not None:
        return column.type
    return float if name[:1] == "x" and name[1:].isdigit() else str


def parse_row(row: Mapping[str, str]) -> RowDict:
    r"""Convert a row read from ``results.csv`` (all strings) to ``run_bo``'s types.

    Empty fields stay ``""``, and columns a file predates get their defaults (``status``
    reads ``ok``).

    Args:
        row: A ``csv.DictReader`` row.

    Returns:
        A new dict with ints and floats where the schema has them.

    Raises:
        ValueError: If a field does not parse as its column's type (naming the
            column and the field).
    """
    out: RowDict = {}
    for key, value in row.items():
        kind = _column_type(key)
        if value == "" or kind is str:
            out[key] = value
            continue
        try:
            out[key] = kind(value)
        except ValueError:
            raise ValueError(
                f"column {key!r} holds {value!r}, not a {kind.__name__}"
            ) from None
    for column in SCHEMA:
        if column.default is not None and column.name not in out:
            out[column.name] = column.default
    return out


def build_row(point: list[float], **values: Any) -> RowDict:
    r"""One row, its keys in file order: a ``Row``'s ``to_dict()``.

    Example:
        >>> row = build_row([0.1, 0.2], problem="branin", dim=2, ...)

    Args:
        point: The evaluated point (``dim`` coordinates in the unit cube).
        **values: One value per column of ``FIXED_COLUMNS``.

    Returns:
        A dict with the keys ``columns(dim)``.

    Raises:
        ValueError: If a column is missing or unknown, or the point has not
            ``dim`` coordinates.
    """
    missing = [name for name in FIXED_COLUMNS if name not in values]
    unknown = [name for name in values if name not in _BY_NAME]
    if missing or unknown:
        raise ValueError(f"row fields: missing {missing}, unknown {unknown}")
    return Row(**values, point=tuple(point)).to_dict()


def diagnostic_fields(diagnostics: dict[str, Any] | None) -> dict[str, Any]:
    r"""The ``model_*`` columns of a row from a method's ``diagnostics`` dict.

    Args:
        diagnostics: Keys as in ``DIAGNOSTIC_COLUMNS``' values; lists are
            ``;``-joined, missing keys are empty.

    Returns:
        A dict with the keys of ``DIAGNOSTIC_COLUMNS``.
    """
    out = {}
    for column, key in DIAGNOSTIC_COLUMNS.items():
        value = (diagnostics or {}).get(key)
        if isinstance(value, list | tuple):
            value = ";".join(f"{v:.4g}" for v in value)
        out[column] = "" if value is None else value
    return out


def stored_points(rows: list[RowDict], dim: int) -> list[RowDict]:
    r"""The stored rows of one run, checked to be evaluations ``1..n`` with points.

    Args:
        rows: Rows of one run (``parse_row``'d), in any order.
        dim: The problem's dimension.

    Returns:
        The rows sorted by ``n_evals``.

    Raises:
        ValueError: If the rows are not ``1..n`` or a row has no point.
    """
    rows = sorted(rows, key=lambda r: r["n_evals"])
    if [r["n_evals"] for r in rows] != list(range(1, len(rows) + 1)):
        raise ValueError(
            "stored rows must be evaluations 1..n of one run, got n_evals "
            f"{[r['n_evals'] for r in rows]}"
        )
    for r in rows:
        if any(r.get(c, "") == "" for c in x_columns(dim)):
            raise ValueError(
                f"stored row {r['n_evals']} has no point (x0..x{dim - 1}); rows "
                "written before schema version 2 cannot be resumed"
            )
    return rows


def run_key(row: Mapping[str, Any]) -> tuple[str, int, int]:
    r"""The key that names one evaluation: ``(method, seed, n_evals)``."""
    return (row["method"], row["seed"], row["n_evals"])
