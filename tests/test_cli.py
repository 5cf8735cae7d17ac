import subprocess
import sys

from botorch.utils.testing import BotorchTestCase

from botorch_ext import cli


class TestCLI(BotorchTestCase):
    def test_help_via_python_m(self):
        out = subprocess.run(
            [sys.executable, "-m", "botorch_ext", "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("quickstart", out.stdout)

    def test_no_command_prints_help(self):
        self.assertEqual(cli.main([]), 0)

    def test_quickstart_runs(self):
        old = cli.QUICKSTART_METHODS
        try:
            cli.QUICKSTART_METHODS = ("qucb", "qlogsoftpi")
            self.assertEqual(
                cli.main(["quickstart", "--iterations", "1", "--q", "1"]), 0
            )
        finally:
            cli.QUICKSTART_METHODS = old

    def test_bad_arguments_exit_with_usage_error(self):
        for argv in (["quickstart", "--q", "0"], ["quickstart", "--iterations", "-1"]):
            with self.assertRaises(SystemExit) as ctx:
                cli.main(argv)
            self.assertEqual(ctx.exception.code, 2)
