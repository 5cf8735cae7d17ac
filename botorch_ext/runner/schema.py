r"""The ``results.csv`` schema, declared once: each column's name, type and place.

``results.csv`` has one row per evaluation: the columns ``FIXED_COLUMNS`` followed
by the evaluated point ``x0 .. x{d-1}`` (``columns(dim)``). The header
(``columns``), the parser (``parse_row``) and the row (``build_row``) are all
built from ``SCHEMA``.

An evaluation is ``ok`` (``status``) or ``failed``: the objective returned a
non-finite value, raised, or ran past the evaluation timeout. A failed row holds
its point, an empty ``value`` and the reason in ``error``; its ``best_value`` and
``regret`` are those of the ``ok`` rows before it (empty while there is none).
Rows of files written before the ``status`` column existed read as ``ok``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
#: utility term; for ``elbo-svgp`` at ``q = 1`` only), ``model_fit_steps`` the Adam
#: steps of the fit, and for BOCK ``model_angular_weights`` (``c_0;...;c_P``) and
#: ``model_warp`` (``alpha;beta``).
DIAGNOSTIC_COLUMNS = {
    "model_noise": "noise",
    "model_lengthscales": "lengthscales",
    "model_elbo": "elbo",
    "model_utility": "utility",
    "model_fit_steps": "fit_steps",
    "model_angular_weights": "angular_weights",
    "model_warp": "warp",
}

_DIAGNOSTIC_TYPES: dict[str, type] = {"model_noise": float, "model_elbo": float}
_DIAGNOSTIC_TYPES |= {"model_utility": float, "model_fit_steps": int}

#: Every column but the point's, in file order.
SCHEMA: tuple[Column, ...] = (
    Column("problem"),
    Column("dim", int),
    Column("method"),
    Column("seed", int),
    Column("n_evals", int),
    Column("iteration", int),
    Column("batch_position", int),
    Column("value", float),
    Column("status", str, default=OK),
    Column("error", str, default=""),
    Column("best_value", float),
    Column("regret", float),
    Column("seconds", float),
    Column("fit_seconds", float),
    Column("acq_seconds", float),
    Column("eval_seconds", float),
    Column("init"),
    Column("outcome_transform"),
    *(Column(c, _DIAGNOSTIC_TYPES.get(c, str)) for c in DIAGNOSTIC_COLUMNS),
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


def parse_row(row: Mapping[str, str]) -> dict:
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
    out: dict = {}
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


def build_row(point: list[float], **fields) -> dict:
    r"""One row, its keys in file order: the schema's fields and the point.

    Example:
        >>> row = build_row([0.1, 0.2], problem="branin", dim=2, ...)

    Args:
        point: The evaluated point (``dim`` coordinates in the unit cube).
        **fields: One value per column of ``FIXED_COLUMNS``.

    Returns:
        A dict with the keys ``columns(dim)``.

    Raises:
        ValueError: If a column is missing or unknown, or the point has not
            ``dim`` coordinates.
    """
    missing = [name for name in FIXED_COLUMNS if name not in fields]
    unknown = [name for name in fields if name not in _BY_NAME]
    if missing or unknown:
        raise ValueError(f"row fields: missing {missing}, unknown {unknown}")
    dim = fields["dim"]
    if len(point) != dim:
        raise ValueError(f"point has {len(point)} coordinates, expected dim={dim}")
    row = {name: fields[name] for name in FIXED_COLUMNS}
    row.update(zip(x_columns(dim), point, strict=True))
    return row


def diagnostic_fields(diagnostics: dict | None) -> dict:
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


def run_key(row: Mapping) -> tuple[str, int, int]:
    r"""The key that names one evaluation: ``(method, seed, n_evals)``."""
    return (row["method"], row["seed"], row["n_evals"])
