r"""Optimization helpers: TuRBO trust regions and warning filters for
``optimize_acqf``."""

from botorch_ext.optim.turbo import TurboState
from botorch_ext.optim.utils import (
    OPTIMIZE_ACQF_RETRY_MESSAGE,
    ignore_optimize_acqf_retry_warnings,
)

__all__ = [
    "OPTIMIZE_ACQF_RETRY_MESSAGE",
    "TurboState",
    "ignore_optimize_acqf_retry_warnings",
]
