r"""Deprecated aliases for names that moved to another module of the runner.

A module whose names moved keeps them importable from the old path for one
release: its ``__getattr__`` (PEP 562) is ``deprecated_aliases(...)``, which
warns with a ``DeprecationWarning`` naming the new home and returns the name from
there. Nothing is imported until an old name is asked for.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping


def deprecated_aliases(
    module: str, moved: Mapping[str, str], removal: str = "0.3.0", stacklevel: int = 2
) -> Callable[[str], object]:
    r"""A module ``__getattr__`` that serves the moved names with a warning.

    Example:
        >>> __getattr__ = deprecated_aliases(
        ...     __name__, {"parse_row": "botorch_ext.runner.schema"}
        ... )

    Args:
        module: The old module's name (``__name__``).
        moved: Old name -> the module that is now its home (same name there).
        removal: The release that drops the aliases.
        stacklevel: ``warnings.warn``'s, so that the warning names the line that
            imports the old name: 2 when the returned function is the module's
            ``__getattr__``, one more for each function in between.

    Returns:
        A function for the old module's ``__getattr__``: it raises
        ``AttributeError`` for any other name.
    """

    def __getattr__(name: str) -> object:
        home = moved.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} moved to {home}.{name}; import it from there (the "
            f"old path goes in {removal})",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__
