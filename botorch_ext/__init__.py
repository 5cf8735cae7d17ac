r"""botorch_ext: components from recent Bayesian-optimization papers for BoTorch.

The public names a user imports are re-exported here.
"""

from importlib.metadata import PackageNotFoundError, version

from botorch_ext.acquisition import (
    draw_representer_points,
    qES,
    qLogSoftKG,
    qLogSoftPI,
    qSoftPI,
    qUCB,
)
from botorch_ext.eulbo import (
    EULBO,
    EULBOModel,
    EULBOOptions,
    fit_elbo,
    optimize_eulbo,
)
from botorch_ext.kernels import BOCKKernel
from botorch_ext.kernels.cylindrical import deprecated_kernel_alias
from botorch_ext.optim import TurboState
from botorch_ext.sgmcmc import (
    SGMCMCFullyBayesianSingleTaskGP,
    finite_set_stein_discrepancy,
    fit_fully_bayesian_model_sgmcmc,
    kernel_stein_discrepancy,
    mamba,
    sghmc,
    sgld,
)

try:
    __version__ = version("botorch-ext")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"

__all__ = [
    "__version__",
    "BOCKKernel",
    "EULBO",
    "EULBOModel",
    "EULBOOptions",
    "SGMCMCFullyBayesianSingleTaskGP",
    "TurboState",
    "draw_representer_points",
    "finite_set_stein_discrepancy",
    "fit_elbo",
    "fit_fully_bayesian_model_sgmcmc",
    "kernel_stein_discrepancy",
    "mamba",
    "optimize_eulbo",
    "qES",
    "qLogSoftKG",
    "qLogSoftPI",
    "qSoftPI",
    "qUCB",
    "sghmc",
    "sgld",
]


def __getattr__(name: str) -> type[BOCKKernel]:
    # `CylindricalKernel`, the name before 0.2.0: a deprecated alias.
    if name == "CylindricalKernel":
        return deprecated_kernel_alias()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
