r"""Acquisition functions: reparameterized MC ones and the EULBO's soft KG.

The reparameterized Monte Carlo acquisition functions of [Wilson2017reparam]_,
the one-shot soft knowledge gradient of [Maus2024eulbo]_ and the EULBO's
expected log utilities.

Importing this package registers an input constructor for every class with
``botorch.acquisition.input_constructors``.
"""

from botorch_ext.acquisition import input_constructors  # noqa: F401  (registers)
from botorch_ext.acquisition.entropy_search import qES
from botorch_ext.acquisition.eulbo_utilities import (
    expected_log_soft_improvement,
    gauss_hermite_normal,
    mc_log_soft_improvement,
)
from botorch_ext.acquisition.probability_of_improvement import qLogSoftPI, qSoftPI
from botorch_ext.acquisition.representer_points import draw_representer_points
from botorch_ext.acquisition.soft_kg import qLogSoftKG
from botorch_ext.acquisition.ucb import qUCB

__all__ = [
    "draw_representer_points",
    "expected_log_soft_improvement",
    "gauss_hermite_normal",
    "mc_log_soft_improvement",
    "qES",
    "qLogSoftKG",
    "qLogSoftPI",
    "qSoftPI",
    "qUCB",
]
