r"""Models: the approximation-aware SVGP of [Maus2024eulbo]_ and its settings."""

from botorch_ext.models.eulbo import EULBOModel
from botorch_ext.models.eulbo_options import (
    ELBO_SCALES,
    AdamOptions,
    ELBOFitOptions,
    EULBOOptions,
    JointOptions,
    StoppingOptions,
    UtilityOptions,
    WarmStartOptions,
)

__all__ = [
    "ELBO_SCALES",
    "AdamOptions",
    "ELBOFitOptions",
    "EULBOModel",
    "EULBOOptions",
    "JointOptions",
    "StoppingOptions",
    "UtilityOptions",
    "WarmStartOptions",
]
