r"""The error the runner's library API raises for a bad argument.

``ArgumentError`` is a ``ValueError`` that names the argument as the Python
caller spells it (``n_init``, ``options.outcome_transform``); the command line
maps that name to its flag (``--n-init``), so each front end words the error in
its own terms.
"""

from __future__ import annotations


class ArgumentError(ValueError):
    r"""A bad argument of the runner's API.

    Example:
        >>> raise ArgumentError("n_init", f"n_init must be >= 1, got {n_init}")

    Args:
        argument: The argument's name as the caller passes it (dotted for a
            field of an argument, e.g. ``options.outcome_transform``).
        message: One line that names ``argument``; a suggested value is written
            as ``argument='value'``.
    """

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument
