r"""The ``botorch-ext`` console script: check the runner extra, then run the CLI.

The command plots with matplotlib, shows progress with tqdm and runs grids on
Dask's ``distributed``; these come with the ``runner`` extra, not with the core
package (the components need none of them). Without them the command stops at
once with the install line, instead of failing later, mid-grid, on an import.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

#: Modules the command needs beyond the core dependencies (the ``runner`` extra).
RUNNER_MODULES = ("matplotlib", "tqdm", "distributed")

#: The install line printed when any of ``RUNNER_MODULES`` is missing.
INSTALL_HINT = 'pip install "botorch-ext[runner]"'


def missing_runner_modules() -> list[str]:
    r"""Return the modules of ``RUNNER_MODULES`` that cannot be imported.

    Only looks the modules up (``importlib.util.find_spec``); nothing is imported.

    Returns:
        The missing module names, in the order of ``RUNNER_MODULES``.

    Example:
        >>> missing_runner_modules()  # with the runner extra installed
        []
    """
    return [name for name in RUNNER_MODULES if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    r"""Entry point of ``botorch-ext`` and ``python -m botorch_ext``.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        The process exit status: 1 if the runner extra is missing (the message
        names the missing modules and the install line), otherwise that of
        :func:`botorch_ext.runner.cli.main`.
    """
    missing = missing_runner_modules()
    if missing:
        print(
            f"botorch-ext: the command needs the runner extra (missing: "
            f"{', '.join(missing)}). Install it with: {INSTALL_HINT}",
            file=sys.stderr,
        )
        return 1
    from botorch_ext.runner.cli import main as cli_main

    return cli_main(argv)
