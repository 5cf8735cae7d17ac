r"""GPyTorch kernels: BOCK's cylindrical kernel and dimension-scaled RBF kernels.

``CylindricalKernel`` is BOCK's kernel [Oh2018bock]_; the RBF helpers build
BoTorch's dimension-scaled priors with floors that any optimizer keeps.
"""

from botorch_ext.kernels.cylindrical import CylindricalKernel
from botorch_ext.kernels.dim_scaled import (
    get_ard_rbf_kernel_with_dim_scaled_prior,
    get_isotropic_rbf_kernel_with_dim_scaled_prior,
)

__all__ = [
    "CylindricalKernel",
    "get_ard_rbf_kernel_with_dim_scaled_prior",
    "get_isotropic_rbf_kernel_with_dim_scaled_prior",
]
