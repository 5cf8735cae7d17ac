r"""Every benchmark script under ``benchmarks/`` imports and answers ``--help``.

A broken import (a renamed helper module, a moved function) otherwise shows only
when someone runs the benchmark, possibly hours into a grid. Each script runs in
its own Python process, from the repository root, as the READMEs run them
(``python benchmarks/X.py --help``), with a time limit so that a script that
ignores ``--help`` and starts its work fails instead of hanging the suite.
"""

import os
import subprocess
import sys
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

#: Python files under ``benchmarks/`` that are modules, not scripts: they take no
#: arguments, so they are run without ``--help`` (which imports them) instead.
MODULES = {
    "benchmarks/common.py": "helpers the scripts import (environment, write_csv)",
    "benchmarks/bock/ablations.py": "runner methods, used as --method module:attr",
    "benchmarks/bock/kernels.py": "the BOCK ablations' kernels (ablations.py)",
    "benchmarks/eulbo/ablations.py": "runner methods, used as --method module:attr",
    "benchmarks/reparam_acq/qes_speed.py": "runner methods of the qES cost screen",
}

#: Seconds one script may take to import and print its help (a failsafe: about
#: 3 s on a busy 2-core machine).
LIMIT_S = 120


def benchmark_scripts() -> list[str]:
    r"""The Python files under ``benchmarks/``, relative to the repository root."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in BENCHMARKS.rglob("*.py")
        if p.name != "__init__.py" and "results" not in p.relative_to(ROOT).parts
    )


def shell_scripts() -> list[str]:
    r"""The shell scripts under ``benchmarks/``, relative to the repository root."""
    return sorted(str(p.relative_to(ROOT)) for p in BENCHMARKS.rglob("*.sh"))


def _run(command: list[str]) -> tuple[int, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    try:
        proc = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return -1, f"still running after {LIMIT_S} s (does it ignore --help?)"
    return proc.returncode, proc.stdout + proc.stderr


class TestBenchmarkScripts(unittest.TestCase):
    def test_modules_listed_exist(self):
        scripts = benchmark_scripts()
        for path in MODULES:
            self.assertIn(path, scripts, f"{path} is listed but gone; unlist it")

    def test_every_script_imports_and_prints_its_help(self):
        def check(path: str) -> tuple[str, int, str]:
            args = [] if path in MODULES else ["--help"]
            code, output = _run([sys.executable, path, *args])
            return path, code, output

        scripts = benchmark_scripts()
        self.assertGreater(len(scripts), 30)
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(check, scripts))
        failures = []
        for path, code, output in results:
            tail = output.strip().splitlines()[-1:] or ["(no output)"]
            if code != 0:
                failures.append(f"{path}: exit status {code}: {tail[0]}")
            elif path not in MODULES and "usage:" not in output:
                failures.append(f"{path}: --help printed no usage: {tail[0]}")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_shell_scripts_parse(self):
        # They launch hours of runs; `bash -n` reads them without running any.
        failures = []
        for path in shell_scripts():
            code, output = _run(["bash", "-n", path])
            if code != 0:
                failures.append(f"{path}: {output.strip()}")
        self.assertEqual(failures, [], "\n".join(failures))


if __name__ == "__main__":
    unittest.main()
