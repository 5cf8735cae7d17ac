r"""Optimization helpers: TuRBO trust regions."""

from botorch_ext.optim.turbo import TurboState

__all__ = ["TurboState"]
