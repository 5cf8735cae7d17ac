r"""Suite-wide test settings: the device the BoTorch-style tests run on, and one
torch thread.

``BOTORCH_EXT_TEST_DEVICE`` names a torch device (``cuda``, ``cuda:1``, ``cpu``);
every ``BotorchTestCase`` in the suite then has it as ``self.device``, and the tests
build their tensors, models and kernels with ``self.device``. Unset or empty means
the CPU, BoTorch's default, so a plain ``pytest`` run is unchanged. A CUDA device
that is not available is a usage error, not a silent fall back to the CPU.

Example:
    >>> # BOTORCH_EXT_TEST_DEVICE=cuda python -m pytest -q tests
"""

from __future__ import annotations

import os
import signal

import pytest
import torch
from botorch.utils.testing import BotorchTestCase

# A test run started in the background by a shell without job control inherits
# SIGINT ignored (Python then installs no KeyboardInterrupt handler); the tests of
# the interrupt paths need Python's default handler, as an interactive run has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The environment variable that selects the test device.
DEVICE_VARIABLE = "BOTORCH_EXT_TEST_DEVICE"


def resolve_test_device(environ: dict[str, str] | None = None) -> torch.device:
    r"""The device named by ``BOTORCH_EXT_TEST_DEVICE`` (the CPU if unset).

    Args:
        environ: The environment to read (``os.environ`` if None).

    Returns:
        The ``torch.device``.

    Raises:
        pytest.UsageError: If the name is not a torch device, or names a CUDA
            device that this machine does not have.
    """
    environ = os.environ if environ is None else environ
    name = environ.get(DEVICE_VARIABLE, "").strip() or "cpu"
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise pytest.UsageError(f"{DEVICE_VARIABLE}={name!r}: {err}") from err
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = 0 if device.index is None else device.index
        if index >= count:
            raise pytest.UsageError(
                f"{DEVICE_VARIABLE}={name!r}, but this machine has {count} CUDA "
                "device(s)."
            )
    return device


def pytest_configure(config: pytest.Config) -> None:
    r"""Set ``BotorchTestCase.device`` and one torch thread for the whole session.

    One intra-op thread, as the runner uses per process: on a 2-core machine
    that is busy with anything else, torch's default of one thread per core ran
    the suite's slowest test 17x slower (599 s against 35 s).
    """
    BotorchTestCase.device = resolve_test_device()
    torch.set_num_threads(1)


def pytest_report_header(config: pytest.Config) -> str:
    r"""Name the test device in pytest's header."""
    return f"botorch_ext test device: {BotorchTestCase.device} ({DEVICE_VARIABLE})"
