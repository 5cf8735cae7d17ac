r"""GPyTorch kernels and kernel helpers.

BOCK's cylindrical kernel [Oh2018bock]_, RBF kernels under BoTorch's
dimension-scaled prior with floors that any optimizer keeps, and
``kernel_lengthscale``.
"""

from botorch_ext.kernels.cylindrical import CylindricalKernel
from botorch_ext.kernels.dim_scaled import (
    get_ard_rbf_kernel_with_dim_scaled_prior,
    get_isotropic_rbf_kernel_with_dim_scaled_prior,
)
from botorch_ext.kernels.utils import kernel_lengthscale

__all__ = [
    "CylindricalKernel",
    "get_ard_rbf_kernel_with_dim_scaled_prior",
    "get_isotropic_rbf_kernel_with_dim_scaled_prior",
    "kernel_lengthscale",
]
