r"""The error the runner's library API raises for a bad argument, and its flags.

``ArgumentError`` is a ``ValueError`` that names the argument as the Python
caller spells it (``n_init``, ``options.outcome_transform``); the command line
maps that name to its flag (``--n-init``, ``FLAGS`` and ``flag_message``), so
each front end words the error in its own terms.
"""

from __future__ import annotations

import re


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


#: The flag of each argument name the library's ``ArgumentError`` uses.
FLAGS = {
    "q": "--q",
    "n_init": "--n-init",
    "budget": "--budget",
    "init": "--init",
    "options.outcome_transform": "--outcome-transform",
    "options.initial_conditions": "--initial-conditions",
    "options.num_inducing_points": "--num-inducing-points",
    "threads": "--threads",
    "workers": "--workers",
    "backend": "--backend",
    "scheduler": "--scheduler",
    "on_error": "--on-error",
    "eval_timeout": "--eval-timeout",
    "dim": "--dim",
}


def flag_message(message: str) -> str:
    r"""A library error message with its argument names written as flags.

    ``n_init must be >= 1`` -> ``--n-init must be >= 1`` and
    ``outcome_transform='standardize'`` -> ``--outcome-transform standardize``.
    """
    names = "|".join(re.escape(n) for n in sorted(FLAGS, key=len, reverse=True))
    pattern = rf"(?<![\w.-])({names})(?:='([^']*)')?(?!\w)"

    def flag(match: re.Match[str]) -> str:
        value = match.group(2)
        return FLAGS[match.group(1)] + ("" if value is None else f" {value}")

    return re.sub(pattern, flag, message)
