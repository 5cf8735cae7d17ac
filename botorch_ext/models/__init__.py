r"""Models: the approximation-aware SVGP of [Maus2024eulbo]_ and its utilities."""

from botorch_ext.models.eulbo import ELBO_SCALES, EULBOModel, EULBOOptions
from botorch_ext.models.utilities import (
    expected_log_soft_improvement,
    gauss_hermite_normal,
    mc_log_soft_improvement,
)

__all__ = [
    "ELBO_SCALES",
    "EULBOModel",
    "EULBOOptions",
    "expected_log_soft_improvement",
    "gauss_hermite_normal",
    "mc_log_soft_improvement",
]
