r"""The runner's covariance modules.

By name (``KERNELS``) for ``fit_model`` (BOCK's cylindrical kernel, isotropic
Matern-5/2 baselines and GPyTorch's own cylindrical kernel, each for inputs in the
unit cube: the kernels of the listed methods), and ``svgp_ard_kernel``, the kernel
of the runner's SVGP methods. The BOCK study's ablation kernels live with its
scripts, in ``benchmarks/bock/kernels.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from botorch.models.transforms.input import AffineInputTransform, InputTransform
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import CylindricalKernel as GPyTorchCylindricalKernel
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.priors import GammaPrior, LogNormalPrior

from botorch_ext.kernels import (
    BOCKKernel,
    get_ard_rbf_kernel_with_dim_scaled_prior,
)

#: Floor on BOCK's linear angular weight ``c_1`` in the runner's ``bock``: MAP
#: fits collapse the weights onto ``c = e_0`` (a radius-only model, blind to
#: direction); the floor keeps a local gradient term (value chosen by
#: measurement on Rosenbrock-100).
BOCK_LINEAR_WEIGHT_FLOOR = 0.05


def _bock_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # The continuous center rule with a floor on the linear (local gradient)
    # term.
    return BOCKKernel(
        center_rule="continuous",
        angular_weights_floor=[0.0, BOCK_LINEAR_WEIGHT_FLOOR, 0.0, 0.0],
    ), None


def _matern_scaled_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # The runner's `matern` with a learned amplitude, under the outputscale prior
    # of BoTorch's former default covariance (Gamma(2, 0.15)): the stronger
    # Matern baseline.
    kernel, _ = _matern_kernel(d)
    return ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15)), None


def _matern_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # BoTorch's default covariance (dimension-scaled lengthscale prior, no
    # outputscale on standardized outcomes) made isotropic and Matern-5/2: the
    # paper's "Matern" baseline is a non-ARD Matern-5/2.
    prior = LogNormalPrior(loc=math.sqrt(2) + 0.5 * math.log(d), scale=math.sqrt(3))
    kernel = MaternKernel(
        nu=2.5,
        lengthscale_prior=prior,
        lengthscale_constraint=GreaterThan(2.5e-2, initial_value=prior.mode),
    )
    return kernel, None


def _gpytorch_cylindrical_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # GPyTorch's kernel needs inputs inside its unit ball, which it checks
    # strictly: map the cube's circumscribed ball (radius sqrt(d) / 2 about the
    # cube's center) into it, with a little slack for rounding at the corners.
    kernel = GPyTorchCylindricalKernel(
        num_angular_weights=4, radial_base_kernel=MaternKernel(nu=2.5)
    )
    to_ball = AffineInputTransform(
        d=d,
        coefficient=torch.full((d,), math.sqrt(d) / 2 * (1 + 1e-6)),
        offset=torch.full((d,), 0.5),
    )
    return kernel, to_ball


def svgp_ard_kernel(d: int) -> Kernel:
    r"""The kernel of the runner's SVGP methods: BoTorch's default ARD RBF kernel.

    ``get_covar_module_with_dim_scaled_prior(ard_num_dims=d)`` (an ARD RBF with
    the dimension-scaled LogNormal lengthscale prior of Hvarfner et al. (2024) and a
    floor of 0.025), with its floor enforced by a softplus transform: BoTorch
    leaves the floor untransformed, which ``fit_gpytorch_mll``'s L-BFGS-B
    respects through bounds but minibatch Adam (the ELBO and EULBO fits) steps
    through. The runner's SVGP methods pass it explicitly, so each method name
    keeps its model whatever ``EULBOModel``'s default kernel is.

    Example:
        >>> kernel = svgp_ard_kernel(6)
        >>> kernel.lengthscale.shape
        torch.Size([1, 6])

    Args:
        d: The input dimension.

    Returns:
        A fresh ``RBFKernel`` with ``ard_num_dims=d``.
    """
    return get_ard_rbf_kernel_with_dim_scaled_prior(d)


#: Covariance modules for ``fit_model``: name -> (covar_module, input_transform)
#: for ``d``-dimensional inputs in the unit cube; ``"default"`` is BoTorch's.
KERNELS: dict[str, Callable[[int], tuple[Kernel, InputTransform | None]]] = {
    "bock": _bock_kernel,
    "matern": _matern_kernel,
    "matern-scaled": _matern_scaled_kernel,
    "gpytorch-cylindrical": _gpytorch_cylindrical_kernel,
}
