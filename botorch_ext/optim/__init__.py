r"""Optimization: the ELBO fit and the joint EULBO optimization of an ``EULBOModel``
(functions that take the model, as BoTorch's ``fit_gpytorch_mll``), TuRBO trust
regions, and warning filters for ``optimize_acqf``."""

from botorch_ext.optim.eulbo import eulbo, optimize_eulbo
from botorch_ext.optim.fit import fit_elbo
from botorch_ext.optim.turbo import TurboState
from botorch_ext.optim.utils import (
    OPTIMIZE_ACQF_RETRY_MESSAGE,
    ignore_optimize_acqf_retry_warnings,
)

__all__ = [
    "OPTIMIZE_ACQF_RETRY_MESSAGE",
    "TurboState",
    "eulbo",
    "fit_elbo",
    "ignore_optimize_acqf_retry_warnings",
    "optimize_eulbo",
]
