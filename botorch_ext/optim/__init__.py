r"""Optimization that is not EULBO: TuRBO trust regions, ``optimize_acqf`` filters.

The EULBO's fits (``fit_elbo``, ``optimize_eulbo``, the objective ``eulbo``)
moved to ``botorch_ext.eulbo`` in 0.2.0; their names here are deprecated
aliases for one release (``eulbo`` is now ``botorch_ext.eulbo.EULBO``, an
objective object).
"""

from botorch_ext.deprecation import moved_name
from botorch_ext.optim.turbo import TurboState
from botorch_ext.optim.utils import (
    OPTIMIZE_ACQF_RETRY_MESSAGE,
    ignore_optimize_acqf_retry_warnings,
)

#: The names of 0.1.0 that moved, and their new module.
MOVED = {
    "fit_elbo": "botorch_ext.eulbo",
    "optimize_eulbo": "botorch_ext.eulbo",
    "eulbo": "botorch_ext.eulbo.objective",
}

__all__ = [
    "OPTIMIZE_ACQF_RETRY_MESSAGE",
    "TurboState",
    "ignore_optimize_acqf_retry_warnings",
]


def __getattr__(name: str) -> object:
    return moved_name(__name__, name, MOVED)
