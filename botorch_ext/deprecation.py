r"""Deprecated aliases of public names that moved, kept for one release.

A package whose names moved defines a module-level ``__getattr__`` that calls
``moved_name``: the old import path still works and warns with a
``DeprecationWarning`` that names the new one.
"""

from __future__ import annotations

import importlib
import warnings


def moved_name(module: str, name: str, moved: dict[str, str]) -> object:
    r"""The object ``name`` of ``module`` that moved to ``moved[name]``, with a warning.

    Example:
        >>> def __getattr__(name):  # in botorch_ext/models/__init__.py
        ...     return moved_name(__name__, name, {"EULBOModel": "botorch_ext.eulbo"})

    Args:
        module: The old module's name (``__name__``).
        name: The attribute asked for.
        moved: Old attribute name -> the module that holds it now (a
            ``"module:new_name"`` for a renamed one).

    Returns:
        The object from its new home.

    Raises:
        AttributeError: For a name that did not move, as Python's own lookup does.
    """
    if name not in moved:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    target, _, new_name = moved[name].partition(":")
    new_name = new_name or name
    warnings.warn(
        f"{module}.{name} moved to {target}.{new_name} in botorch_ext 0.2.0; the "
        "old path goes in the next release.",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(target), new_name)
