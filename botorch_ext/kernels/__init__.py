r"""GPyTorch kernels: BOCK's cylindrical kernel [Oh2018bock]_."""

from botorch_ext.kernels.cylindrical import CylindricalKernel

__all__ = ["CylindricalKernel"]
