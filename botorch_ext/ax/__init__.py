r"""Ax integration: models, the EULBO joint step and storage registries.

``EULBOModel`` (and BoTorch's ``SingleTaskVariationalGP``) fitted inside Ax's
modular BoTorch loop, the EULBO joint step as an Ax ``Acquisition``, and Ax's
storage registries.

``register()`` does all of it (see its docstring); the pieces live in
``botorch_ext.ax.surrogate`` (how Ax builds and fits the models),
``botorch_ext.ax.acquisition`` (``EULBOAcquisition``) and
``botorch_ext.ax.storage`` (the registries).

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

from types import ModuleType

from gpytorch.kernels import Kernel

# Aliased: `acquisition` is also the name of this package's submodule.
import botorch_ext.acquisition as acquisition_package
import botorch_ext.kernels as kernel_package


def _public(module: ModuleType, base: type) -> tuple[type, ...]:
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
    from botorch.acquisition.acquisition import AcquisitionFunction

    return _public(acquisition_package, AcquisitionFunction)


def kernel_classes() -> tuple[type, ...]:
    r"""The public kernels of ``botorch_ext.kernels``.

    Example:
        >>> [c.__name__ for c in kernel_classes()]
        ['BOCKKernel']
    """
    return _public(kernel_package, Kernel)


def register() -> None:
    r"""Make the package's models, acquisition functions and kernels work in Ax.

    Idempotent; call it once, before building a generation strategy that uses
    them and before saving or loading one. It

    * registers ``EULBOModel`` and BoTorch's ``SingleTaskVariationalGP`` with
      Ax's model construction and fitting (``botorch_ext.ax.surrogate``), so
      that ``ModelConfig(botorch_model_class=EULBOModel)`` is built from Ax's
      training data and transforms and fitted inside Ax;
    * adds every public acquisition function and kernel, the two models, the
      variational bounds, ``EULBOAcquisition`` and ``EULBOOptions`` to Ax's
      JSON and SQL storage registries (``botorch_ext.ax.storage``), so that
      ``Client.save_to_json_file``, ``Client.load_from_json_file`` and Ax's
      SQL store work for experiments that use them.

    Example:
        >>> import botorch_ext.ax
        >>> botorch_ext.ax.register()
        >>> ModelConfig(botorch_model_class=EULBOModel)  # now fits inside Ax
        >>> client = Client.load_from_json_file("experiment.json")

    Raises:
        ImportError: If Ax is not installed (``pip install "botorch-ext[ax]"``).
    """
    try:
        from ax.storage.botorch_modular_registry import register_model  # noqa: F401
    except ImportError as e:
        raise ImportError(
            'botorch_ext.ax.register() needs Ax: pip install "botorch-ext[ax]"'
        ) from e
    from botorch_ext.ax.storage import register_storage
    from botorch_ext.ax.surrogate import register_surrogate_hooks

    register_surrogate_hooks()
    register_storage(acquisition_functions(), kernel_classes())


def __getattr__(name: str) -> type:
    # `EULBOAcquisition` subclasses Ax's `Acquisition`: import Ax only when it
    # is asked for, so that `import botorch_ext.ax` stays cheap.
    if name == "EULBOAcquisition":
        from botorch_ext.ax.acquisition import EULBOAcquisition

        return EULBOAcquisition
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
