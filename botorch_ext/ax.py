r"""Registers botorch_ext's acquisition functions and kernels with Ax's storage.

Ax stores an experiment's generation strategy (``Client.save_to_json_file``, the
SQL store) by looking up every BoTorch and GPyTorch class in its registries by
name. Importing ``botorch_ext.acquisition`` already lets Ax *build* ``qUCB`` and
the others (through BoTorch's input constructors), but saving or loading a
generation strategy that names them needs them in those registries: call
``register()`` once, before saving and before loading.

Registration is explicit rather than done on ``import botorch_ext``: importing
Ax takes seconds and pulls in pandas, SQLAlchemy and more, which users of the
BoTorch components and the runner do not need, and a visible ``register()`` in
the code that loads a saved experiment says why the load works.
"""

from __future__ import annotations

from gpytorch.kernels import Kernel

from botorch_ext import acquisition, kernels


def _public(module, base: type) -> tuple[type, ...]:
    # Every public class of the module that is a `base`, so a class added to
    # the module's `__all__` is registered without a change here.
    objects = (getattr(module, name) for name in module.__all__)
    return tuple(o for o in objects if isinstance(o, type) and issubclass(o, base))


def acquisition_functions() -> tuple[type, ...]:
    r"""The public acquisition functions of ``botorch_ext.acquisition``.

    Example:
        >>> [c.__name__ for c in acquisition_functions()]
        ['qES', 'qLogSoftKG', 'qLogSoftPI', 'qSoftPI', 'qUCB']
    """
    from botorch.acquisition import AcquisitionFunction

    return _public(acquisition, AcquisitionFunction)


def kernel_classes() -> tuple[type, ...]:
    r"""The public kernels of ``botorch_ext.kernels``.

    Example:
        >>> [c.__name__ for c in kernel_classes()]
        ['CylindricalKernel']
    """
    return _public(kernels, Kernel)


def register() -> None:
    r"""Register every public acquisition function and kernel with Ax's storage
    registries (JSON and SQL), under its class name.

    Idempotent. Needed before ``Client.save_to_json_file`` or
    ``Client.load_from_json_file`` of an experiment whose generation strategy
    uses ``botorch_acqf_class=qUCB`` (or ``qES``, ``qSoftPI``, ``qLogSoftPI``) or
    ``covar_module_class=CylindricalKernel``.

    Example:
        >>> import botorch_ext.ax
        >>> botorch_ext.ax.register()
        >>> client = Client.load_from_json_file("experiment.json")

    Raises:
        ImportError: If Ax is not installed (``pip install "botorch-ext[ax]"``).
    """
    try:
        from ax.storage.botorch_modular_registry import (
            register_acquisition_function,
            register_kernel,
        )
    except ImportError as e:
        raise ImportError(
            'botorch_ext.ax.register() needs Ax: pip install "botorch-ext[ax]"'
        ) from e
    for acqf_class in acquisition_functions():
        register_acquisition_function(acqf_class)
    for kernel_class in kernel_classes():
        register_kernel(kernel_class)
