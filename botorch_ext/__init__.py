r"""botorch_ext: components from recent Bayesian-optimization papers for BoTorch.

The public names a user imports are re-exported here.
"""

from importlib.metadata import PackageNotFoundError, version

from botorch_ext.acquisition import (
    draw_representer_points,
    qES,
    qLogSoftPI,
    qSoftPI,
    qUCB,
)
from botorch_ext.kernels import CylindricalKernel

try:
    __version__ = version("botorch-ext")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"

__all__ = [
    "__version__",
    "CylindricalKernel",
    "draw_representer_points",
    "qES",
    "qLogSoftPI",
    "qSoftPI",
    "qUCB",
]
