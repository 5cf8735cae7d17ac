r"""Optimization helpers: TuRBO trust regions, the ELBO fit and the joint EULBO
optimization of an ``EULBOModel`` (kept beside the model, as BoTorch keeps
``fit_gpytorch_mll`` and ``optimize_acqf`` beside its models)."""

from botorch_ext.optim.eulbo import optimize_eulbo
from botorch_ext.optim.fit import fit_elbo
from botorch_ext.optim.turbo import TurboState

__all__ = ["TurboState", "fit_elbo", "optimize_eulbo"]
