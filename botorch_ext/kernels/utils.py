r"""Helpers that read GPyTorch kernels."""

from __future__ import annotations

from gpytorch.kernels import Kernel
from torch import Tensor


def kernel_lengthscale(covar: Kernel | None) -> Tensor | None:
    r"""The lengthscale of a kernel, or of the kernel it wraps.

    Follows ``base_kernel`` (e.g. through a ``ScaleKernel``) to the first kernel
    with a lengthscale.

    Example:
        >>> kernel_lengthscale(ScaleKernel(RBFKernel(ard_num_dims=3))).shape
        torch.Size([1, 3])

    Args:
        covar: A GPyTorch kernel, or None.

    Returns:
        The lengthscale tensor, or None if no kernel on the way has one.
    """
    while covar is not None and not getattr(covar, "has_lengthscale", False):
        covar = getattr(covar, "base_kernel", None)
    return None if covar is None else covar.lengthscale
