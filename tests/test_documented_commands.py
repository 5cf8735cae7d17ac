r"""Every command in the documentation's ``bash`` blocks runs.

The commands are collected from the fenced ``bash`` (``sh``, ``shell``,
``console``) blocks of ``README.md`` and ``docs/**/*.md``, whatever they say, so
that a command added or edited in the docs is checked without touching this file.
Each runs in a temporary directory of its own, through ``bash``, and a failure is
reported with its file and line.

Collection:

* a line ending in ``\`` continues on the next; ``# comments`` are dropped; in a
  ``console`` block only the lines after a ``$`` prompt are commands;
* ``VAR=value`` and ``export VAR=value`` lines are the environment of the block's
  later commands (they are not commands themselves);
* in a ``&&`` chain, the ``pip install`` parts are left out and the rest runs; a
  command with ``sphinx-build`` or ``pytest`` is left aside (the docs build and
  the test suite are CI's own jobs);
* usage-style optional groups (``[more-results ...]``) are dropped;
* a ``python`` block whose first line is ``# NAME.py`` is written to ``NAME.py``
  in the directory of every later command of the same file (the docs' example
  modules, such as a ``module:callable`` problem).

Rewriting to the smallest budget that still exercises a command (``REWRITES``):

* ``botorch-ext run`` / ``compare`` (and ``python -m botorch_ext``):
  ``--n-init 2``, ``--budget`` 2 + ``--q`` (the initial design and one batch
  proposed by the method), ``--num-restarts 2``, ``--raw-samples 16``,
  ``--seeds`` its first seed, ``--workers 1``; everything else (problem,
  dimension, methods, ``q``, backend, ...) as documented;
* ``botorch-ext demo``: the demo's own code with ``DEMO`` shrunk to one seed and
  one batch (``botorch-ext`` is a shim on ``PATH`` that shrinks it and runs this
  checkout's console script);
* ``python benchmarks/...py``: with ``--help`` (the benchmarks run for hours);
* ``botorch-ext summary`` / ``plot`` of directories that do not exist: each gets
  a small stored comparison (Branin, one seed each, distinct seeds) first.

A command with elided arguments (a ``...`` word), or on ``NEEDS_OUTSIDE`` (a
cluster, a remote machine, an outside checkout), runs with ``--help`` instead:
``PROGRAM [SUBCOMMAND] --help``. ``KNOWN_BROKEN`` lists commands that fail
because of an error in the docs, with the reason; such a command must still fail
(once the docs are fixed, its entry matches nothing and is reported as unused).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
import unittest
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.failsafe import FailsafeExpired, run_with_failsafe

ROOT = Path(__file__).resolve().parents[1]

#: Commands that need something from outside or hours, by a regular expression
#: searched in the command, with the reason; they run with ``--help``.
NEEDS_OUTSIDE = {
    r"--scheduler\s+(tcp|tls)://": "needs a running Dask scheduler (a cluster)",
    r"^dask\s+(scheduler|worker)\b": "starts a Dask scheduler or worker, which "
    "serves until stopped, on a cluster's address",
    r"^ssh\b": "needs a remote head node",
    r"^openssl\b": "makes the TLS certificates of a Dask cluster (the recipe's "
    "scheduler and workers need machines)",
    r"^chmod\b": "works on the certificate keys of the openssl commands",
    r"--aabo\b": "needs a checkout of the EULBO authors' code (--aabo PATH)",
}

#: Commands that fail because of an error in the docs, by a regular expression
#: searched in the command, with the reason. They must fail until the docs are
#: fixed; an entry that matches no command any more is reported as unused.
KNOWN_BROKEN = {
    r"python\s+benchmarks/mamba_logistic\.py": "the script is "
    "benchmarks/sgmcmc/mamba_logistic.py (docs/papers/sgmcmc.md names a path "
    "that does not exist)",
}

#: Parts of a ``&&`` chain left out, and commands left aside, with the reason.
PIP = re.compile(r"\bpip\s+install\b")
ASIDE = re.compile(r"\b(sphinx-build|pytest)\b")

#: The rewrite of ``botorch-ext run`` / ``compare`` flags (see the module
#: docstring); ``--budget`` becomes ``N_INIT + q``.
N_INIT = 2
REWRITES = {"--n-init": str(N_INIT), "--num-restarts": "2", "--raw-samples": "16"}
ADDED = ("--n-init", "--num-restarts", "--raw-samples")

#: Seconds one command may run (a failsafe; each takes seconds to a minute).
LIMIT_S = 240

#: ``botorch-ext`` on the commands' ``PATH``: this checkout's console script, with
#: the demo shrunk to one seed and one batch of each method.
SHIM = """#!{python}
import sys

sys.path.insert(0, {root!r})
if __name__ == "__main__":  # not in worker processes, which import this file
    from botorch_ext.console import main
    from botorch_ext.runner import commands

    commands.DEMO.update(seeds=(0,), n_init={n_init},
                         budget={n_init} + commands.DEMO["q"],
                         num_restarts=2, raw_samples=16)
    sys.exit(main())
"""

_BENCHMARK = re.compile(r"^benchmarks/.*\.py$")
_BLOCK_START = re.compile(r"^```\s*(bash|sh|shell|console)\s*$")
_PYTHON_START = re.compile(r"^```\s*python\s*$")


def _is_assignment(text: str) -> bool:
    # `VAR=value ...` or `export VAR=value ...`, with no command.
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    if words[:1] == ["export"]:
        words = words[1:]
    return bool(words) and all(re.match(r"^[A-Za-z_]\w*=", w) for w in words)


@dataclass
class Command:
    r"""One documented command: where it is, its text, the block's environment."""

    path: str
    line: int
    text: str
    prelude: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def documentation() -> list[Path]:
    r"""The Markdown files whose commands are checked."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _strip_comment(line: str) -> str:
    # Drops a '#' comment that is outside quotes and starts a word.
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def collect(path: Path, root: Path = ROOT) -> list[Command]:
    r"""The commands of ``path``'s shell blocks (see the module docstring)."""
    rel = str(path.relative_to(root))
    lines = path.read_text().splitlines()
    commands: list[Command] = []
    files: dict[str, str] = {}
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if _PYTHON_START.match(stripped):
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            indent = min(
                (len(b) - len(b.lstrip()) for b in body if b.strip()), default=0
            )
            body = [b[indent:] for b in body]
            name = re.match(r"^#\s*([\w.]+\.py)\s*$", body[0]) if body else None
            if name:
                files[name.group(1)] = "\n".join(body) + "\n"
        elif block := _BLOCK_START.match(stripped):
            # In a console block, only the lines after a "$ " prompt are commands.
            console = block.group(1) == "console"
            prelude: list[str] = []
            i += 1
            pending, start = "", 0
            while i < len(lines) and not lines[i].strip().startswith("```"):
                text = _strip_comment(lines[i].strip())
                if not pending:
                    start = i + 1
                if text.endswith("\\"):
                    pending += text[:-1] + " "
                    i += 1
                    continue
                text = " ".join((pending + text).split())
                pending = ""
                if text.startswith("$ "):
                    text = text[2:]
                elif console:
                    text = ""  # output
                if text and _is_assignment(text):
                    prelude.append(text)
                elif text:
                    commands.append(
                        Command(rel, start, text, list(prelude), dict(files))
                    )
                i += 1
        i += 1
    return commands


def _matching(patterns: dict[str, str], text: str) -> str | None:
    for pattern in patterns:
        if re.search(pattern, text):
            return pattern
    return None


def help_command(text: str) -> str | None:
    r"""``PROGRAM [SUBCOMMAND] --help`` of a command, or None for ``ssh``."""
    words = [w for w in text.split() if not re.match(r"^[A-Za-z_]\w*=", w)]
    program = words[0]
    if program == "ssh":
        return None
    if program == "openssl":
        return f"openssl {words[1]} -help"
    if program in ("botorch-ext", "dask") and len(words) > 1:
        return f"{program} {words[1]} --help"
    if program.startswith("python") and len(words) > 1:
        if words[1] == "-m":
            return f"{program} -m {words[2]} --help"
        return f"{program} {words[1]} --help"
    return f"{program} --help"


def _set(tokens: list[str], flag: str, value: str, add: bool) -> None:
    if flag in tokens:
        tokens[tokens.index(flag) + 1] = value
    elif add:
        tokens += [flag, value]


def rewrite(text: str) -> str:
    r"""A command with the smallest budget that exercises it (module docstring)."""
    text = re.sub(r"\s*\[[^\]]*\]", "", text)
    parts = []
    for part in text.split("&&"):
        part = part.strip()
        try:
            tokens = shlex.split(part)
        except ValueError:
            parts.append(part)
            continue
        tokens = [t for token in tokens for t in (token.split("=", 1)
                  if token.startswith("--") and "=" in token else [token])]  # fmt: skip
        if "botorch-ext" in tokens:
            args = tokens[tokens.index("botorch-ext") + 1 :]
        elif "-m" in tokens and tokens[tokens.index("-m") + 1 :][:1] == ["botorch_ext"]:
            args = tokens[tokens.index("-m") + 2 :]
        else:
            args = None
        if args is not None and args[:1] in (["run"], ["compare"]):
            q = args[args.index("--q") + 1] if "--q" in args else "1"
            for flag, value in REWRITES.items():
                _set(tokens, flag, value, add=flag in ADDED)
            _set(tokens, "--budget", str(N_INIT + int(q)), add=False)
            if "--seeds" in tokens:
                seeds = tokens[tokens.index("--seeds") + 1]
                _set(tokens, "--seeds", seeds.split(",")[0], add=False)
            _set(tokens, "--workers", "1", add=False)
            part = shlex.join(tokens)
        else:
            scripts = [i for i, t in enumerate(tokens) if _BENCHMARK.match(t)]
            if scripts and any(t.startswith("python") for t in tokens[: scripts[0]]):
                part = shlex.join([*tokens[: scripts[0] + 1], "--help"])
        parts.append(part)
    return " && ".join(parts)


def plan(command: Command) -> tuple[str, str | None, str]:
    r"""What to do with a command: ``(kind, run, note)``.

    ``kind`` is ``"run"``, ``"help"`` (run ``run``, the command's ``--help``),
    ``"broken"`` (run it; it must fail), ``"aside"`` or ``"install"`` (not run).
    """
    text = command.text
    if ASIDE.search(text):
        return "aside", None, "the docs build or the test suite (CI runs them)"
    parts = [p.strip() for p in text.split("&&") if not PIP.search(p)]
    if not parts:
        return "install", None, "installs only"
    text = " && ".join(parts)
    outside = _matching(NEEDS_OUTSIDE, text)
    if outside is not None:
        return "help", help_command(text), NEEDS_OUTSIDE[outside]
    if re.search(r"(^|\s)\.\.\.(\s|$)", re.sub(r"\s*\[[^\]]*\]", "", text)):
        return "help", help_command(text), "its arguments are elided (...)"
    broken = _matching(KNOWN_BROKEN, text)
    if broken is not None:
        return "broken", rewrite(text), KNOWN_BROKEN[broken]
    return "run", rewrite(text), ""


def _fixture_dirs(run: str) -> list[str]:
    # The DIR arguments of `botorch-ext summary/plot` in a command.
    try:
        tokens = shlex.split(run)
    except ValueError:
        return []
    if "botorch-ext" not in tokens:
        return []
    args = tokens[tokens.index("botorch-ext") + 1 :]
    if args[:1] not in (["summary"], ["plot"]):
        return []
    dirs, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg in ("--output", "--band"):
            skip = True
        elif not arg.startswith("-") and arg not in ("&&", ";"):
            dirs.append(arg)
    return dirs


class TestDocumentedCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="documented-commands-"))
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        bin_dir = cls.tmp / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "botorch-ext"
        shim.write_text(
            SHIM.format(python=sys.executable, root=str(ROOT), n_init=N_INIT)
        )
        shim.chmod(0o755)
        cls.env = {
            **os.environ,
            "PATH": os.pathsep.join(
                [
                    str(bin_dir),
                    str(Path(sys.executable).parent),
                    os.environ.get("PATH", ""),
                ]
            ),  # fmt: skip
            "PYTHONPATH": str(ROOT),
            "OMP_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        }

    def _stored_results(self, n: int) -> list[Path]:
        # n small stored comparisons (distinct seeds), made once and copied.
        from tests.test_cli import _main

        stored = [self.tmp / f"stored-{seed}" for seed in range(n)]
        for seed, out in enumerate(stored):
            if not out.exists():
                argv = ["compare", "--problem", "branin", "--methods", "sobol,random",
                        "--seeds", str(seed), "--budget", "4", "--n-init", "2",
                        "--output", str(out)]  # fmt: skip
                code, _, err = _main(argv)
                self.assertEqual(code, 0, err)
        return stored

    def _execute(self, command: Command, run: str, workdir: Path):
        workdir.mkdir(parents=True)
        for name, text in command.files.items():
            (workdir / name).write_text(text)
        for name in ("benchmarks", "tutorials"):
            (workdir / name).symlink_to(ROOT / name)
        names = _fixture_dirs(run)
        for stored, name in zip(self.stored[: len(names)], names, strict=True):
            if not (workdir / name).exists():
                shutil.copytree(stored, workdir / name)
        script = "\n".join([*command.prelude, run])
        try:
            proc = run_with_failsafe(
                ["bash", "-c", script], LIMIT_S, cwd=workdir, env=self.env
            )
        except FailsafeExpired as e:
            return -1, str(e)
        return proc.returncode, proc.stdout + proc.stderr

    def test_collection_and_rewrites(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = Path(tmp) / "page.md"
            doc.write_text(
                "```python\n# mod.py\nX = 1\n```\n"
                "```bash\n"
                "python -m pip install torch==9 && python -m pip install -e . "
                "&& botorch-ext demo\n"
                "export A=1\n"
                "botorch-ext compare --problem hartmann6 --methods qlogei,qes \\\n"
                "   --seeds 3,4,5 --budget 60 --q 3 --workers 2   # a comment\n"
                "botorch-ext summary results [more-results ...]\n"
                "botorch-ext compare ... --resume\n"
                "python -m pip install -e '.[test]' && python -m pytest -q tests\n"
                "```\n"
                "```console\n$ botorch-ext problems\nproblem dim optimum\n```\n"
            )
            commands = collect(doc, root=Path(tmp))
        self.assertEqual([c.line for c in commands], [6, 8, 10, 11, 12, 15])
        self.assertEqual(commands[-1].text, "botorch-ext problems")
        self.assertEqual(commands[1].prelude, ["export A=1"])
        self.assertEqual(commands[1].files, {"mod.py": "# mod.py\nX = 1\n"})
        plans = [plan(c) for c in commands]
        self.assertEqual(plans[0][:2], ("run", "botorch-ext demo"))
        self.assertEqual(
            plans[1][:2],
            ("run", "botorch-ext compare --problem hartmann6 --methods qlogei,qes "
                    "--seeds 3 --budget 5 --q 3 --workers 1 --n-init 2 "
                    "--num-restarts 2 --raw-samples 16"),
        )  # fmt: skip
        self.assertEqual(plans[2][:2], ("run", "botorch-ext summary results"))
        self.assertEqual(_fixture_dirs(plans[2][1]), ["results"])
        self.assertEqual(plans[3][:2], ("help", "botorch-ext compare --help"))
        self.assertEqual(plans[4][0], "aside")
        self.assertEqual(
            rewrite("OMP_NUM_THREADS=1 python benchmarks/x/y.py --seeds 0,1"),
            "OMP_NUM_THREADS=1 python benchmarks/x/y.py --help",
        )
        self.assertEqual(
            plan(Command("f", 1, "botorch-ext run --aabo /x --budget 9"))[:2],
            ("help", "botorch-ext run --help"),
        )

    def test_every_documented_command_runs(self):
        commands = [c for path in documentation() for c in collect(path)]
        self.assertGreater(len(commands), 10, "no commands found in the docs?")
        plans = [(c, *plan(c)) for c in commands]
        # Identical commands (the same rewrite and files) run once.
        unique: dict[tuple, list[Command]] = {}
        for command, kind, run, _ in plans:
            if run is not None:
                key = (kind, run, tuple(command.prelude), tuple(command.files.items()))
                if kind == "help":  # the environment and files change nothing
                    key = (kind, run, (), ())
                unique.setdefault(key, []).append(command)
        # The stored results that summary and plot commands read, made before
        # the threads start (in this process).
        needed = [len(_fixture_dirs(run)) for _, _, run, _ in plans if run]
        self.stored = self._stored_results(max(needed, default=0))

        def execute(item):
            (kind, run, *_), where = item
            first = where[0]
            workdir = self.tmp / f"{Path(first.path).stem}-{first.line}-{kind}"
            return item, self._execute(first, run, workdir)

        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(execute, unique.items()))
        failures = []
        for ((kind, run, *_), where), (code, output) in results:
            places = ", ".join(c.where() for c in where)
            tail = " | ".join(output.strip().splitlines()[-3:])
            if kind == "broken":
                if code == 0:
                    failures.append(
                        f"{places}: `{run}` passes now; remove its KNOWN_BROKEN entry"
                    )
            elif code != 0:
                failures.append(f"{places}: `{run}` exited {code}: {tail}")
        used = {_matching(KNOWN_BROKEN, c.text) for c in commands}
        for pattern in set(KNOWN_BROKEN) - used:
            warnings.warn(
                f"KNOWN_BROKEN entry {pattern!r} matches no documented command "
                "(fixed in the docs?); remove it",
                stacklevel=1,
            )
        self.assertEqual(failures, [], "\n" + "\n".join(failures))


if __name__ == "__main__":
    unittest.main()
