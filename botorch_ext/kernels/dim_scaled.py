r"""RBF kernels under BoTorch's dimension-scaled lengthscale prior.

BoTorch's default covariance [Hvarfner2024vanilla]_ is an ARD RBF kernel whose
lengthscales have a LogNormal prior that grows with the dimension ``d``; its
lengthscale floor is left to L-BFGS-B's bounds. This module builds, from
BoTorch's own prior objects and with the floor enforced by a softplus transform
(so that Adam and L-BFGS on unconstrained parameters keep it):

* ``get_ard_rbf_kernel_with_dim_scaled_prior``: BoTorch's ARD kernel;
* ``get_isotropic_rbf_kernel_with_dim_scaled_prior``: one lengthscale shared
  by all inputs, optionally inside a ``ScaleKernel`` with the Gamma(2, 0.15)
  outputscale prior of BoTorch's Matern kernel:

    k(x, x') = s * exp(-||x - x'||^2 / (2 l^2)),
    l ~ LogNormal(sqrt(2) + log(d) / 2, sqrt(3)),   s ~ Gamma(2, 0.15).

It is the default kernel of ``EULBOModel``: a sparse GP with ``m`` inducing
points fitted by its ELBO tends to switch ARD input dimensions off, while one
shared, prior-regularized lengthscale with a learned amplitude does not
collapse (measured on Hartmann6 and the 60-D rover; see the EULBO benchmark
page of the docs).

.. [Hvarfner2024vanilla]
    C. Hvarfner, E. O. Hellsten and L. Nardi. Vanilla Bayesian Optimization
    Performs Great in High Dimensions. ICML 2024.
"""

from __future__ import annotations

from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_matern_kernel_with_gamma_prior,
)
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel

from botorch_ext.validation import check_positive_int


def get_ard_rbf_kernel_with_dim_scaled_prior(d: int) -> Kernel:
    r"""BoTorch's ARD RBF kernel, its lengthscale floor enforced by a softplus.

    ``get_covar_module_with_dim_scaled_prior(ard_num_dims=d)`` with the
    untransformed ``GreaterThan(0.025)`` floor replaced by the same floor under
    GPyTorch's softplus transform, keeping the initial lengthscales (the
    prior's mode): minibatch Adam steps straight through an untransformed
    floor.

    Example:
        >>> kernel = get_ard_rbf_kernel_with_dim_scaled_prior(d=6)

    Args:
        d: Input dimension.

    Returns:
        The ``RBFKernel`` with ``d`` lengthscales.
    """
    check_positive_int("d", d)
    kernel = get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
    value = kernel.lengthscale.detach().clone()
    floor = kernel.raw_lengthscale_constraint.lower_bound
    kernel.register_constraint("raw_lengthscale", GreaterThan(floor), replace=True)
    kernel.initialize(lengthscale=value)
    return kernel


def get_isotropic_rbf_kernel_with_dim_scaled_prior(
    d: int, use_outputscale: bool = True
) -> Kernel:
    r"""An isotropic RBF kernel with BoTorch's dimension-scaled lengthscale prior.

    The lengthscale prior and its floor are taken from BoTorch's
    ``get_covar_module_with_dim_scaled_prior(ard_num_dims=d)``, the outputscale
    prior from ``get_matern_kernel_with_gamma_prior``, so both follow BoTorch.
    The lengthscale starts at the prior's mode. Its floor is enforced by a
    softplus transform (BoTorch's has none and relies on L-BFGS-B's bounds),
    so Adam and the EULBO's L-BFGS on unconstrained parameters keep it too.

    Example:
        >>> kernel = get_isotropic_rbf_kernel_with_dim_scaled_prior(d=6)
        >>> model = EULBOModel(train_X, train_Y, covar_module=kernel)

    Args:
        d: Input dimension (sets the prior's location).
        use_outputscale: Wrap the kernel in a ``ScaleKernel`` with BoTorch's
            Gamma(2, 0.15) outputscale prior. Without a learned amplitude an
            isotropic lengthscale drifts long as the data concentrate.

    Returns:
        The kernel (a ``ScaleKernel`` if ``use_outputscale``, else the
        ``RBFKernel``).
    """
    check_positive_int("d", d)
    reference = get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
    prior = reference.lengthscale_prior
    floor = reference.raw_lengthscale_constraint.lower_bound.item()
    kernel = RBFKernel(
        lengthscale_prior=prior, lengthscale_constraint=GreaterThan(floor)
    )
    kernel.lengthscale = prior.mode
    if not use_outputscale:
        return kernel
    scaled = get_matern_kernel_with_gamma_prior(ard_num_dims=1)
    return ScaleKernel(kernel, outputscale_prior=scaled.outputscale_prior)
