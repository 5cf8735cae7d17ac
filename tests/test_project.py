r"""Checks that the README, CI, the changelog and the package metadata stay in sync."""

import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
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

    def test_readme_installs_the_runner_extra_first(self):
        self.assertIn('pip install -e ".[runner]"', _readme_commands()[0])
        self.assertIn('pip install -e ".[test]"', _readme_commands()[1])

    def test_readme_is_an_entry_page(self):
        lines = (ROOT / "README.md").read_text().splitlines()
        self.assertLessEqual(len(lines), 250)
        for heading in ("## Install", "## Quick start"):
            self.assertIn(heading, lines[:80])
        self.assertIn("botorch-ext demo", "\n".join(lines[:80]))

    def test_changelog_has_unreleased_section(self):
        self.assertIn("## [Unreleased]", (ROOT / "CHANGELOG.md").read_text())

    def test_changelog_has_a_section_for_the_package_version(self):
        version = re.search(
            r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M
        ).group(1)
        self.assertRegex(
            (ROOT / "CHANGELOG.md").read_text(),
            rf"\n## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}\n",
        )

    def test_ci_builds_the_docs_with_warnings_as_errors(self):
        ci = (ROOT / ".ci" / "run").read_text()
        self.assertIn('pip install -e ".[docs]"', ci)
        self.assertRegex(ci, r"sphinx-build -W .*-b html docs ")


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
