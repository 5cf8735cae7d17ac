r"""Acquisition functions: reparameterized MC ones and the EULBO's soft KG.

The reparameterized Monte Carlo acquisition functions of [Wilson2017reparam]_
and the one-shot soft knowledge gradient of [Maus2024eulbo]_. The EULBO's
expected log utilities moved to ``botorch_ext.eulbo`` in 0.2.0; their names
here are deprecated aliases for one release.

Importing this package registers an input constructor for every class with
``botorch.acquisition.input_constructors``.
"""

from botorch_ext.acquisition import input_constructors  # noqa: F401  (registers)
from botorch_ext.acquisition.entropy_search import qES
from botorch_ext.acquisition.probability_of_improvement import qLogSoftPI, qSoftPI
from botorch_ext.acquisition.representer_points import draw_representer_points
from botorch_ext.acquisition.soft_kg import qLogSoftKG
from botorch_ext.acquisition.ucb import qUCB
from botorch_ext.deprecation import moved_name

#: The names of 0.1.0 that moved, and their new module.
MOVED = {
    "expected_log_soft_improvement": "botorch_ext.eulbo",
    "gauss_hermite_normal": "botorch_ext.eulbo",
    "mc_log_soft_improvement": "botorch_ext.eulbo",
}

__all__ = [
    "draw_representer_points",
    "qES",
    "qLogSoftKG",
    "qLogSoftPI",
    "qSoftPI",
    "qUCB",
]


def __getattr__(name: str) -> object:
    return moved_name(__name__, name, MOVED)
