r"""The ``botorch-ext`` console script: the runner-extra check before the CLI."""

import contextlib
import importlib.util
import io
import subprocess
import sys
from unittest import mock

from botorch.utils.testing import BotorchTestCase

from botorch_ext import console


def _find_spec_without(*absent):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name in absent else real(name, *args, **kwargs)

    return find_spec


class TestConsole(BotorchTestCase):
    def test_all_runner_modules_present_here(self):
        self.assertEqual(console.missing_runner_modules(), [])

    def test_missing_modules_are_named_in_order(self):
        with mock.patch.object(
            importlib.util, "find_spec", _find_spec_without("distributed", "tqdm")
        ):
            self.assertEqual(console.missing_runner_modules(), ["tqdm", "distributed"])

    def test_without_the_extra_main_names_the_extra_and_exits_1(self):
        stderr = io.StringIO()
        with (
            mock.patch.object(
                importlib.util, "find_spec", _find_spec_without("matplotlib")
            ),
            mock.patch("botorch_ext.runner.cli.main") as cli_main,
            contextlib.redirect_stderr(stderr),
        ):
            status = console.main(["problems"])
        self.assertEqual(status, 1)
        cli_main.assert_not_called()
        message = stderr.getvalue()
        self.assertIn("missing: matplotlib", message)
        self.assertIn('pip install "botorch-ext[runner]"', message)

    def test_with_the_extra_main_delegates_to_the_cli(self):
        with mock.patch("botorch_ext.runner.cli.main", return_value=7) as cli_main:
            self.assertEqual(console.main(["problems"]), 7)
        cli_main.assert_called_once_with(["problems"])

    def test_python_dash_m_goes_through_the_check(self):
        # sys.modules[name] = None makes the module unimportable (and find_spec
        # report it missing), as if the extra were not installed.
        code = (
            "import runpy, sys\n"
            "sys.modules['matplotlib'] = None\n"
            "sys.argv = ['botorch_ext', 'problems']\n"
            "runpy.run_module('botorch_ext', run_name='__main__')\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("botorch-ext[runner]", result.stderr)


class TestCoreDependencies(BotorchTestCase):
    def test_components_import_without_the_runner_and_ax_extras(self):
        # The core install has neither matplotlib, distributed nor ax-platform.
        code = (
            "import sys\n"
            "for name in ('matplotlib', 'distributed', 'dask', 'ax'):\n"
            "    sys.modules[name] = None\n"
            "import botorch_ext, botorch_ext.acquisition, botorch_ext.kernels\n"
            "import botorch_ext.eulbo, botorch_ext.optim, botorch_ext.sgmcmc\n"
            "import botorch_ext.ax\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        self.assertEqual(result.returncode, 0, result.stderr)
