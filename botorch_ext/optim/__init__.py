r"""Optimization helpers: TuRBO trust regions, the ELBO fit and the joint EULBO
optimization of an ``EULBOModel`` (kept beside the model, as BoTorch keeps
``fit_gpytorch_mll`` and ``optimize_acqf`` beside its models), and warning
filters for ``optimize_acqf``."""

from botorch_ext.optim.eulbo import optimize_eulbo
from botorch_ext.optim.fit import fit_elbo
from botorch_ext.optim.turbo import TurboState
from botorch_ext.optim.utils import (
    OPTIMIZE_ACQF_RETRY_MESSAGE,
    ignore_optimize_acqf_retry_warnings,
)

__all__ = [
    "OPTIMIZE_ACQF_RETRY_MESSAGE",
    "TurboState",
    "fit_elbo",
    "ignore_optimize_acqf_retry_warnings",
    "optimize_eulbo",
]
