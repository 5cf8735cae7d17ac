r"""GPyTorch kernels and kernel helpers.

BOCK's cylindrical kernel ``BOCKKernel`` [Oh2018bock]_ (``CylindricalKernel`` up to
0.2.0, a deprecated alias now), RBF kernels under BoTorch's dimension-scaled prior
with floors that any optimizer keeps, and ``kernel_lengthscale``.
"""

from botorch_ext.kernels.cylindrical import BOCKKernel, deprecated_kernel_alias
from botorch_ext.kernels.dim_scaled import (
    get_ard_rbf_kernel_with_dim_scaled_prior,
    get_isotropic_rbf_kernel_with_dim_scaled_prior,
)
from botorch_ext.kernels.utils import kernel_lengthscale

__all__ = [
    "BOCKKernel",
    "get_ard_rbf_kernel_with_dim_scaled_prior",
    "get_isotropic_rbf_kernel_with_dim_scaled_prior",
    "kernel_lengthscale",
]


def __getattr__(name: str) -> type[BOCKKernel]:
    # `CylindricalKernel`, the name before 0.2.0: a deprecated alias.
    if name == "CylindricalKernel":
        return deprecated_kernel_alias()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
