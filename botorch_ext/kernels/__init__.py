r"""GPyTorch kernels: BOCK's cylindrical kernel [Oh2018bock]_ and an isotropic
RBF kernel under BoTorch's dimension-scaled prior."""

from botorch_ext.kernels.cylindrical import CylindricalKernel
from botorch_ext.kernels.isotropic import (
    get_isotropic_rbf_kernel_with_dim_scaled_prior,
)

__all__ = ["CylindricalKernel", "get_isotropic_rbf_kernel_with_dim_scaled_prior"]
