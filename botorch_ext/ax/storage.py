r"""Ax's storage registries: the names under which experiments store our classes.

Ax stores a generation strategy (``Client.save_to_json_file``, the SQL store,
whose generation-strategy columns are the same JSON) by looking up every
BoTorch and GPyTorch class it names in its registries, and decodes settings
objects by their type name. This module adds, each under its class name:

* the public acquisition functions of ``botorch_ext.acquisition`` and kernels
  of ``botorch_ext.kernels`` (``botorch_acqf_class``, ``covar_module_class``),
  and for decoding also the names they had before a rename (``OLD_NAMES``);
* ``EULBOModel`` and BoTorch's ``SingleTaskVariationalGP``
  (``botorch_model_class``), and the variational bounds that fit the latter
  (``mll_class``);
* ``EULBOAcquisition`` (``acquisition_class``);
* ``EULBOOptions`` and its groups, and the objective ``EULBO``, in
  ``mll_options`` (dataclasses, which Ax's JSON encoder writes field by field;
  the decoders rebuild them, tuples included, and read the flat form of the
  options that botorch_ext 0.1.0 stored in ``model_options``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ax.storage.botorch_modular_registry import (
    CLASS_TO_REVERSE_REGISTRY,
    register_acquisition,
    register_acquisition_function,
    register_kernel,
    register_mll,
    register_model,
)
from ax.storage.json_store.registry import CORE_DECODER_REGISTRY
from botorch.models.approximate_gp import SingleTaskVariationalGP
from gpytorch.kernels import Kernel

from botorch_ext.ax.acquisition import EULBOAcquisition
from botorch_ext.ax.surrogate import APPROXIMATE_MLLS
from botorch_ext.eulbo import EULBO, EULBOModel, EULBOOptions
from botorch_ext.eulbo.options import FLAT_FIELDS, GROUPS, options_from_flat

#: Names under which earlier versions stored a class, by the class's current name:
#: experiments stored with them still load.
OLD_NAMES = {"BOCKKernel": ("CylindricalKernel",)}


def eulbo_options_from_json(**fields: Any) -> EULBOOptions:
    r"""Rebuild ``EULBOOptions`` from its JSON fields.

    Ax's encoder writes the options group by group (each group a dataclass of
    its own, decoded by ``options_group_from_json``); experiments stored by
    botorch_ext 0.1.0 hold the flat fields (``FLAT_FIELDS``), which are read
    without a warning (``options_from_flat``).

    Example:
        >>> eulbo_options_from_json(max_steps=200, joint_parameters=["variational"])

    Raises:
        ValueError: For a field this version cannot read, naming it.
    """
    groups = {f.name for f in dataclasses.fields(EULBOOptions)}
    if set(fields) <= groups:
        return EULBOOptions(**fields)
    unknown = sorted(set(fields) - set(FLAT_FIELDS))
    if unknown:
        raise ValueError(
            f"Stored EULBOOptions has unknown fields {unknown}; this version of "
            "botorch_ext cannot read it."
        )
    return options_from_flat(_tuples(fields))


def options_group_from_json(group_class: type) -> Callable[..., Any]:
    r"""A JSON decoder of one group of ``EULBOOptions`` (lists back to tuples).

    Example:
        >>> options_group_from_json(JointOptions)(parameters=["variational"]).parameters
        ('variational',)

    Args:
        group_class: One of the classes of ``GROUPS``.

    Returns:
        The decoder: keyword arguments in, the group out.
    """

    def decode(**fields: Any) -> Any:
        names = {f.name for f in dataclasses.fields(group_class)}
        unknown = sorted(set(fields) - names)
        if unknown:
            raise ValueError(
                f"Stored {group_class.__name__} has unknown fields {unknown}; "
                "this version of botorch_ext cannot read it."
            )
        return group_class(**_tuples(fields))

    return decode


def _tuples(fields: dict[str, Any]) -> dict[str, Any]:
    # JSON has no tuples: the encoder wrote them as lists.
    return {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}


def register_storage(
    acquisition_functions: tuple[type, ...], kernels: tuple[type, ...]
) -> None:
    r"""Add the classes (see the module docstring) to Ax's JSON and SQL registries.

    Idempotent.
    """
    for acqf_class in acquisition_functions:
        register_acquisition_function(acqf_class)
    for kernel_class in kernels:
        register_kernel(kernel_class)
        for old_name in OLD_NAMES.get(kernel_class.__name__, ()):
            CLASS_TO_REVERSE_REGISTRY[Kernel][old_name] = kernel_class
    for model_class in (EULBOModel, SingleTaskVariationalGP):
        register_model(model_class)
    for mll_class in APPROXIMATE_MLLS:
        register_mll(mll_class)
    register_acquisition(EULBOAcquisition)
    CORE_DECODER_REGISTRY[EULBOOptions.__name__] = eulbo_options_from_json
    CORE_DECODER_REGISTRY[EULBO.__name__] = EULBO
    for group_class in GROUPS.values():
        CORE_DECODER_REGISTRY[group_class.__name__] = options_group_from_json(
            group_class
        )
