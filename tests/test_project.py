r"""Checks that the README's set-up commands and CI stay in sync."""

import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)


class TestProject(unittest.TestCase):
    def test_readme_has_exactly_two_setup_commands_installing_torch_first(self):
        commands = _readme_commands()
        self.assertEqual(len(commands), 2)
        for command in commands:
            self.assertEqual(len(command.splitlines()), 1)
            self.assertTrue(
                command.startswith("python -m pip install torch==2.13.0 && ")
            )

    def test_ci_runs_the_readme_test_command_verbatim(self):
        test_command = _readme_commands()[1]
        self.assertIn("pytest", test_command)
        ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
        self.assertIn(test_command, ci_lines)

    def test_changelog_has_unreleased_section(self):
        self.assertIn("## [Unreleased]", (ROOT / "CHANGELOG.md").read_text())


class TestReadmeQuickStart(unittest.TestCase):
    def test_quick_start_runs_and_is_at_most_15_lines(self):
        text = (ROOT / "README.md").read_text()
        section = text.split("## Quick start", 1)[1]
        code = re.search(r"```python\n(.+?)\n```", section, flags=re.S).group(1)
        self.assertLessEqual(len(code.splitlines()), 15)
        namespace: dict = {}
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
        X_next = namespace["X_next"]
        self.assertEqual(tuple(X_next.shape), (3, 2))
        self.assertTrue(((X_next >= 0) & (X_next <= 1)).all())
