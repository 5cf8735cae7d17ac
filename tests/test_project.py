r"""Checks that the README, CI, the changelog and the package metadata stay in sync."""

import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


#: The README's first setup command: install with the runner extra and run the demo.
INSTALL_AND_DEMO = (
    'python -m pip install torch==2.13.0 && python -m pip install -e ".[runner]" '
    "&& botorch-ext demo"
)
#: How the docs are built, wherever a page or CI says so.
SPHINX_BUILD = "sphinx-build -W -n -b html docs docs/_build/html"


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)


def _bash_lines(path: Path) -> list[str]:
    """The lines of the fenced bash blocks of a Markdown file."""
    blocks = re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S)
    return [line for block in blocks for line in block.splitlines()]


def _ci_steps() -> list[list[str]]:
    """.ci/run's lines, one list per fresh virtual environment it creates."""
    steps: list[list[str]] = [[]]
    for line in (ROOT / ".ci" / "run").read_text().splitlines():
        if line.startswith("python3 -m venv "):
            steps.append([])
        if line and not line.startswith("#"):
            steps[-1].append(line)
    return steps[1:]


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

    def test_readme_install_line_installs_and_runs_the_demo(self):
        self.assertEqual(_readme_commands()[0], INSTALL_AND_DEMO)

    def test_ci_and_getting_started_repeat_the_readme_setup_lines(self):
        demo, test = _readme_commands()
        ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
        self.assertIn(demo, ci_lines)
        self.assertIn(test, ci_lines)
        self.assertIn(demo, _bash_lines(ROOT / "docs" / "getting-started.md"))
        # Wherever a page or CI installs the runner or test extra, it is with one of
        # the README's two lines, verbatim.
        sources = {".ci/run": ci_lines, "README.md": _bash_lines(ROOT / "README.md")}
        for page in sorted((ROOT / "docs").rglob("*.md")):
            sources[str(page.relative_to(ROOT))] = _bash_lines(page)
        for source, lines in sources.items():
            for line in lines:
                if '".[runner]"' in line or '".[test]"' in line:
                    with self.subTest(source=source, line=line):
                        self.assertIn(line, (demo, test))

    def test_ci_runs_each_readme_line_in_a_fresh_environment(self):
        steps = _ci_steps()
        for command in _readme_commands():
            step = next(s for s in steps if command in s)
            self.assertRegex(step[0], r"^python3 -m venv --clear ")
            self.assertEqual(
                [line for line in step if "pip install" in line], [command]
            )

    def test_ci_builds_the_docs_in_a_fresh_environment_with_the_docs_extra_alone(self):
        (step,) = [s for s in _ci_steps() if any("sphinx-build" in x for x in s)]
        self.assertRegex(step[0], r"^python3 -m venv --clear (\S+)$")
        venv = step[0].split()[-1]
        self.assertIn(f"source {venv}/bin/activate", step)
        installs = [line for line in step if "pip install" in line]
        self.assertEqual(len(installs), 1)
        docs_install = (
            "python -m pip install torch==2.13.0 && "
            'python -m pip install -e ".[docs]" && BOTORCH_EXT_DOCS_OFFLINE=1 '
        )
        self.assertTrue(installs[0].startswith(docs_install))
        self.assertTrue(installs[0].endswith(SPHINX_BUILD))

    def test_docs_extra_holds_every_extra_the_package_imports(self):
        pyproject = (ROOT / "pyproject.toml").read_text()
        docs_extra = re.search(r"\ndocs = \[\n(.*?)\n\]", pyproject, flags=re.S)
        (pulled,) = re.findall(r'"botorch-ext\[(.*)\]"', docs_extra.group(1))
        # The modules autodoc imports: botorch_ext.runner (and its cli) needs
        # the runner extra, botorch_ext.ax the ax extra.
        self.assertEqual(set(pulled.split(",")), {"runner", "ax"})

    def test_every_docs_build_command_is_the_ci_one(self):
        files = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "docs" / "conf.py"]
        files += sorted((ROOT / "docs").rglob("*.md"))
        found = 0
        for path in files:
            for line in path.read_text().splitlines():
                if "sphinx-build" in line:
                    found += 1
                    with self.subTest(path=path.name, line=line):
                        self.assertIn(SPHINX_BUILD, line)
        self.assertGreaterEqual(found, 4)

    def test_license_file_is_the_declared_mit_license(self):
        pyproject = (ROOT / "pyproject.toml").read_text()
        self.assertIn('\nlicense = "MIT"\nlicense-files = ["LICENSE"]\n', pyproject)
        text = (ROOT / "LICENSE").read_text()
        self.assertEqual(text.splitlines()[0], "MIT License")
        self.assertRegex(text, r"Copyright \(c\) \d{4} botorch_ext contributors")
        self.assertIn("[LICENSE](LICENSE)", (ROOT / "README.md").read_text())

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
        exec(compile(code, "README.md", "exec"), namespace)
        X_next = namespace["X_next"]
        self.assertEqual(tuple(X_next.shape), (3, 2))
        self.assertTrue(((X_next >= 0) & (X_next <= 1)).all())
