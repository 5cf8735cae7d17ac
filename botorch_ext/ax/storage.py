r"""Ax's storage registries: the names under which experiments store our classes.

Ax stores a generation strategy (``Client.save_to_json_file``, the SQL store,
whose generation-strategy columns are the same JSON) by looking up every
BoTorch and GPyTorch class it names in its registries, and decodes settings
objects by their type name. This module adds, each under its class name:

* the public acquisition functions of ``botorch_ext.acquisition`` and kernels
  of ``botorch_ext.kernels`` (``botorch_acqf_class``, ``covar_module_class``);
* ``EULBOModel`` and BoTorch's ``SingleTaskVariationalGP``
  (``botorch_model_class``), and the variational bounds that fit the latter
  (``mll_class``);
* ``EULBOAcquisition`` (``acquisition_class``);
* ``EULBOOptions`` in ``model_options`` (a dataclass, which Ax's JSON encoder
  writes field by field; its decoder rebuilds it, tuples included).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ax.storage.botorch_modular_registry import (
    register_acquisition,
    register_acquisition_function,
    register_kernel,
    register_mll,
    register_model,
)
from ax.storage.json_store.registry import CORE_DECODER_REGISTRY
from botorch.models import SingleTaskVariationalGP

from botorch_ext.ax.acquisition import EULBOAcquisition
from botorch_ext.ax.surrogate import APPROXIMATE_MLLS
from botorch_ext.models import EULBOModel, EULBOOptions


def eulbo_options_from_json(**fields: Any) -> EULBOOptions:
    r"""Rebuild ``EULBOOptions`` from its JSON fields (lists back to tuples).

    Example:
        >>> eulbo_options_from_json(max_steps=200, joint_parameters=["x", "q"])
    """
    names = {f.name for f in dataclasses.fields(EULBOOptions)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(
            f"Stored EULBOOptions has unknown fields {unknown}; this version of "
            "botorch_ext cannot read it."
        )
    kwargs: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()
    }
    return EULBOOptions(**kwargs)


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
    for model_class in (EULBOModel, SingleTaskVariationalGP):
        register_model(model_class)
    for mll_class in APPROXIMATE_MLLS:
        register_mll(mll_class)
    register_acquisition(EULBOAcquisition)
    CORE_DECODER_REGISTRY[EULBOOptions.__name__] = eulbo_options_from_json
