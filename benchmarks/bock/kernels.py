r"""The BOCK study's ablation kernels (moved out of ``botorch_ext.runner.kernels``).

Each is a function of the dimension ``d`` returning ``(covar_module,
input_transform)``, the form ``fit_model`` and ``acquisition_method(kernel=...)``
take, for inputs in the unit cube. ``benchmarks/bock/ablations.py`` makes runner
methods of them.
"""

from __future__ import annotations

from botorch.models.transforms.input import InputTransform
from gpytorch.kernels import Kernel, ScaleKernel

from botorch_ext.kernels import BOCKKernel
from botorch_ext.runner.kernels import BOCK_LINEAR_WEIGHT_FLOOR, KERNELS


def bock_continuous_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    r"""BOCK's continuous center rule without the linear-weight floor."""
    return BOCKKernel(center_rule="continuous"), None


def bock_direction_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    r"""The ``"direction"`` center rule of botorch_ext 0.x, kept for comparison."""
    return BOCKKernel(center_rule="direction"), None


def bock_scaled_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    r"""The runner's ``bock`` kernel with a learned amplitude.

    As in the authors' code (their radius kernel carries one).
    """
    return ScaleKernel(KERNELS["bock"](d)[0]), None


def bock_square_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    r"""The runner's ``bock`` kernel with ``"square"`` angular weights.

    The same kernel, floor and starting weights; the weights are the normalized
    squares of the raw values instead of their softmax.
    """
    return BOCKKernel(
        center_rule="continuous",
        angular_weights_floor=[0.0, BOCK_LINEAR_WEIGHT_FLOOR, 0.0, 0.0],
        angular_weights_parameterization="square",
    ), None


#: The ablation kernels by their former ``KERNELS`` names.
ABLATION_KERNELS = {
    "bock-continuous": bock_continuous_kernel,
    "bock-direction": bock_direction_kernel,
    "bock-scaled": bock_scaled_kernel,
}
