r"""A real ``botorch-ext compare --workers 2`` stopped by a real signal: the rows
evaluated so far are in ``results.csv``, which stays parseable, and ``--resume``
finishes the grid with the rows of an uncut grid.

Every process of the grid (parent, workers) logs each evaluated value to a file
through a ``sitecustomize`` module on ``PYTHONPATH`` that wraps
``Problem.__call__`` when ``botorch_ext.runner.problems`` is imported, so the
tests can compare what was evaluated with what was written.
"""

import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from collections import Counter
from pathlib import Path

from botorch_ext.runner.compare import run_grid
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.results import CsvWriter
from botorch_ext.runner.schema import columns

ROOT = Path(__file__).resolve().parents[1]
# Two runs: sobol finishes at once, qlogei takes a few iterations to cut into.
GRID = ["compare", "--problem", "branin", "--methods", "qlogei,sobol", "--seeds",
        "0", "--budget", "12", "--n-init", "4", "--q", "2", "--num-restarts", "2",
        "--raw-samples", "16", "--workers", "2"]  # fmt: skip
BUDGET = 12
# A failsafe only: the grid normally shows a partial run within seconds.
FAILSAFE_S = 300

SITECUSTOMIZE = r"""
import importlib.abc
import importlib.util
import os
import sys

_LOG = os.environ.get("BOTORCH_EXT_TEST_EVALUATIONS")


class _LogEvaluations(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "botorch_ext.runner.problems":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def patched(module):
            exec_module(module)
            call = module.Problem.__call__

            def logged(self, U):
                values = call(self, U)
                text = "".join(f"{v!r}\n" for v in values.tolist())
                fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                os.write(fd, text.encode())
                os.close(fd)
                return values

            module.Problem.__call__ = logged

        spec.loader.exec_module = patched
        return spec


if _LOG:
    sys.meta_path.insert(0, _LogEvaluations())
"""


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _without_times(rows):
    key = lambda r: (r["method"], r["seed"], int(r["n_evals"]))
    return [
        {k: v for k, v in r.items() if not k.endswith("seconds")}
        for r in sorted(rows, key=key)
    ]


class TestInterruptedCompare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = Path(cls._tmp.name)
        (cls.tmp / "hook").mkdir()
        (cls.tmp / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        # The uncut grid, in this process, through the same CSV writer and reader.
        options = MethodOptions(num_restarts=2, raw_samples=16)
        base = RunConfig("branin", "qlogei", budget=BUDGET, n_init=4, q=2,
                         options=options)  # fmt: skip
        writer = CsvWriter(cls.tmp / "uncut.csv", columns(2))
        run_grid(base, ["qlogei", "sobol"], [0], on_row=writer.write, threads=1)
        writer.close()
        cls.uncut = _without_times(_read_csv(cls.tmp / "uncut.csv"))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def _env(self, log):
        env = dict(os.environ)
        paths = [str(self.tmp / "hook"), str(ROOT), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env["BOTORCH_EXT_TEST_EVALUATIONS"] = str(log)
        return env

    def _start_and_stop(self, out, sig):
        r"""Start the grid, wait until results.csv holds a partial run, signal
        the whole process group; return the process's stderr."""
        log = out.parent / f"{out.name}-evaluations.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "botorch_ext", *GRID, "--output", str(out)],
            env=self._env(log),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + FAILSAFE_S
            while time.monotonic() < deadline and proc.poll() is None:
                path = out / "results.csv"
                rows = _read_csv(path) if path.exists() else []
                counts = Counter(r["method"] for r in rows)
                if 0 < counts["qlogei"] < BUDGET:
                    break
                time.sleep(0.05)
            self.assertIsNone(proc.poll(), "the grid ended before it was cut")
            self.assertLess(time.monotonic(), deadline, "no partial run appeared")
            os.killpg(proc.pid, sig)
            _, err = proc.communicate(timeout=FAILSAFE_S)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return proc.returncode, err, log

    def _resume(self, out):
        log = out.parent / f"{out.name}-resume-evaluations.log"
        proc = subprocess.run(
            [sys.executable, "-m", "botorch_ext", *GRID, "--output", str(out),
             "--resume"],
            env=self._env(log),
            capture_output=True,
            text=True,
            timeout=FAILSAFE_S,
            check=False,
        )  # fmt: skip
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        return log

    @staticmethod
    def _logged(log):
        return Counter(log.read_text().split()) if log.exists() else Counter()

    def _assert_resume_finishes(self, out, cut_rows):
        log = self._resume(out)
        final = _read_csv(out / "results.csv")
        self.assertEqual(_without_times(final), self.uncut)
        # Nothing evaluated twice: the resume evaluated exactly the missing rows.
        self.assertEqual(
            self._logged(log), Counter(r["value"] for r in final[len(cut_rows) :])
        )
        self.assertEqual(final[: len(cut_rows)], cut_rows)  # appended, not rewritten

    def test_sigint_keeps_every_evaluated_row_and_resume_finishes(self):
        out = self.tmp / "sigint"
        code, err, log = self._start_and_stop(out, signal.SIGINT)
        self.assertEqual(code, 130, err[-2000:])
        self.assertIn("--resume", err)
        self.assertNotIn("Traceback", err)
        rows = _read_csv(out / "results.csv")
        for row in rows:
            self.assertNotIn(None, row.values())  # every row complete
            self.assertNotIn(None, row)
        self.assertTrue((out / "results.csv").read_bytes().endswith(b"\n"))
        # Every evaluated value is in the CSV, and nothing else.
        self.assertEqual(Counter(r["value"] for r in rows), self._logged(log))
        counts = Counter(r["method"] for r in rows)
        self.assertLess(counts["qlogei"], BUDGET)  # it really was cut
        self._assert_resume_finishes(out, rows)

    def test_sigkill_of_the_process_group_leaves_a_parseable_csv(self):
        out = self.tmp / "sigkill"
        code, _, log = self._start_and_stop(out, signal.SIGKILL)
        self.assertEqual(code, -signal.SIGKILL)
        data = (out / "results.csv").read_bytes()
        self.assertTrue(data.endswith(b"\n"))  # whole lines only
        rows = _read_csv(out / "results.csv")
        for row in rows:
            self.assertNotIn(None, row.values())
            self.assertNotIn(None, row)
        # What was written was evaluated (rows still queued may be lost).
        self.assertFalse(Counter(r["value"] for r in rows) - self._logged(log))
        self._assert_resume_finishes(out, rows)


if __name__ == "__main__":
    unittest.main()
