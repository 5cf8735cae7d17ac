r"""Optimization: EULBO fits, TuRBO trust regions, ``optimize_acqf`` warning filters.

The ELBO fit and the joint EULBO optimization of an ``EULBOModel`` are
functions that take the model, as BoTorch's ``fit_gpytorch_mll`` takes an MLL.
"""

from botorch_ext.optim.fit import fit_elbo
from botorch_ext.optim.joint_phase import eulbo
from botorch_ext.optim.optimize import optimize_eulbo
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
