r"""The suite's device setting (``tests/conftest.py``)."""

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
from botorch.utils.testing import BotorchTestCase

from tests.conftest import DEVICE_VARIABLE, resolve_test_device

ROOT = Path(__file__).resolve().parents[1]


class TestTestDevice(BotorchTestCase):
    def test_cpu_unless_asked(self):
        self.assertEqual(resolve_test_device({}), torch.device("cpu"))
        self.assertEqual(
            resolve_test_device({DEVICE_VARIABLE: " "}), torch.device("cpu")
        )
        self.assertEqual(
            resolve_test_device({DEVICE_VARIABLE: "cpu"}), torch.device("cpu")
        )

    def test_the_session_uses_the_named_device(self):
        self.assertEqual(self.device, resolve_test_device(os.environ))

    def test_a_session_with_the_variable_set_runs_on_that_device(self):
        # The "meta" device exists on every machine: a pytest session started
        # with the variable naming it must give the test cases that device.
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env[DEVICE_VARIABLE] = "meta"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            + ["tests/test_device.py", "-k", "test_the_session_uses_the_named_device"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stdout[-2000:])
        self.assertIn("1 passed", proc.stdout)

    def test_cuda_is_used_when_present_and_refused_when_absent(self):
        env = {DEVICE_VARIABLE: "cuda"}
        with (
            mock.patch.object(torch.cuda, "is_available", return_value=True),
            mock.patch.object(torch.cuda, "device_count", return_value=1),
        ):
            self.assertEqual(resolve_test_device(env), torch.device("cuda"))
            with self.assertRaisesRegex(pytest.UsageError, "1 CUDA device"):
                resolve_test_device({DEVICE_VARIABLE: "cuda:1"})
        with mock.patch.object(torch.cuda, "is_available", return_value=False):
            with self.assertRaisesRegex(pytest.UsageError, "0 CUDA device"):
                resolve_test_device(env)
        with self.assertRaisesRegex(pytest.UsageError, "gpu0"):
            resolve_test_device({DEVICE_VARIABLE: "gpu0"})
