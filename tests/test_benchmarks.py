r"""The benchmarks folder: the results compaction, the m-sweep's resume and the
repository's layout."""

import csv
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from benchmarks.compact_results import COLUMNS, compact_file, compact_rows
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ("reparam_acq", "bock", "eulbo", "sgmcmc", "runner")


def _rows(method, seed, n, q=1):
    rows, best = [], float("inf")
    for i in range(1, n + 1):
        value = float((7 * i + seed) % 11)
        best = min(best, value)
        rows.append(
            {
                "problem": "branin",
                "dim": "2",
                "method": method,
                "seed": str(seed),
                "n_evals": str(i),
                "value": str(value),
                "best_value": str(best),
                "regret": str(best - 0.4),
                "seconds": "0.5",
                "fit_seconds": "0.25" if i > 3 else "0",
                "acq_seconds": "0.125" if i > 3 else "0",
                "model_noise": "" if i <= 3 else str(0.01 * i),
                "model_lengthscales": "" if i <= 3 else f"{i};0.5;2",
                "x0": "0.1",
            }
        )
    return rows


class TestCompactResults(unittest.TestCase):
    def test_checkpoints_best_values_and_diagnostics(self):
        rows = _rows("qlogei", 0, 23) + _rows("qlogei", 1, 17)
        out = compact_rows(rows, every=10)
        # Every 10 evaluations and each run's last row, per run.
        keys = [(r["seed"], r["n_evals"]) for r in out]
        self.assertEqual(keys, [("0", 10), ("0", 20), ("0", 23), ("1", 10), ("1", 17)])
        by_key = {(r["seed"], r["n_evals"]): r for r in out}
        for (seed, n), r in by_key.items():
            run = _rows("qlogei", int(seed), n)
            best = min(float(x["value"]) for x in run)
            self.assertEqual(float(r["best_value"]), best)
            # Cumulative seconds up to and including that evaluation.
            self.assertAlmostEqual(float(r["seconds_total"]), 0.5 * n)
            self.assertAlmostEqual(float(r["fit_seconds_total"]), 0.25 * (n - 3))
            self.assertAlmostEqual(float(r["model_noise"]), 0.01 * n)
            # Lengthscales n, 0.5, 2: their count, min, median and max.
            self.assertEqual(r["n_lengthscales"], 3)
            self.assertEqual(float(r["lengthscale_min"]), 0.5)
            self.assertEqual(float(r["lengthscale_median"]), 2.0)
            self.assertEqual(float(r["lengthscale_max"]), float(n))
        self.assertNotIn("x0", out[0])
        with self.assertRaisesRegex(ValueError, "every must be >= 1"):
            compact_rows(rows, every=0)

    def test_compact_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "results.csv"
            rows = _rows("random", 3, 12)
            with open(raw, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            other = Path(tmp) / "probe.csv"
            other.write_text("a,b\n1,2\n")
            self.assertIsNone(compact_file(other, every=5, remove=True))
            self.assertTrue(other.exists())  # not a runner CSV: left alone
            target = compact_file(raw, every=5, remove=True)
            self.assertEqual(target.name, "results.checkpoints.csv")
            self.assertFalse(raw.exists())
            with open(target) as f:
                reader = csv.DictReader(f)
                self.assertEqual(tuple(reader.fieldnames), COLUMNS)
                self.assertEqual([r["n_evals"] for r in reader], ["5", "10", "12"])


class TestRepositoryLayout(unittest.TestCase):
    def test_one_folder_per_paper_with_a_readme(self):
        for name in PAPERS:
            self.assertTrue((ROOT / "benchmarks" / name / "README.md").is_file(), name)
        index = (ROOT / "benchmarks" / "README.md").read_text()
        for name in PAPERS:
            self.assertIn(f"{name}/README.md", index)
        eulbo = (ROOT / "benchmarks" / "eulbo" / "README.md").read_text()
        self.assertIn("## The m-sweep and the rover (current)", eulbo)

    @unittest.skipUnless(
        shutil.which("git") and (ROOT / ".git").exists(), "needs a git checkout"
    )
    def test_tracked_files_are_light_and_hold_no_raw_results(self):
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.split(b"\0")
        paths = [ROOT / f.decode() for f in files if f]
        size = sum(p.stat().st_size for p in paths if p.is_file())
        self.assertLess(size, 15e6)
        raw = [
            p
            for p in paths
            if p.name == "results.csv"
            or (p.name.startswith("seed") and p.name[4:-4].isdigit())
        ]
        self.assertEqual(raw, [])


def _msweep():
    return load_script("benchmarks/eulbo/msweep.py")


class TestMSweepResume(unittest.TestCase):
    def test_a_checkpointed_run_goes_on_as_the_uncut_run(self):
        # turbo-eulbo-ei carries its SVGP and its trust region from step to step:
        # a run cut at 7 evaluations and extended to 11 from its checkpoint
        # writes the rows of the uncut run, each once.
        msweep = _msweep()
        common = ["--problem", "branin", "--methods", "turbo-eulbo-ei", "--m", "5"]
        common += ["--seeds", "0", "--n-init", "5", "--q", "2"]
        with tempfile.TemporaryDirectory() as tmp:
            uncut, cut = f"{tmp}/uncut.csv", f"{tmp}/cut.csv"
            checkpoint = ["--checkpoint", f"{tmp}/checkpoints"]
            runs = (
                ["--budget", "11", "--output", uncut],
                ["--budget", "7", "--output", cut, *checkpoint],
                ["--budget", "11", "--output", cut, *checkpoint],
                ["--budget", "11", "--output", cut, *checkpoint],  # nothing left
                # Without a checkpoint a run starts again: no row twice.
                ["--budget", "7", "--output", f"{tmp}/plain.csv"],
                ["--budget", "9", "--output", f"{tmp}/plain.csv"],
            )
            fresh = []  # runs started from their initial design, per call
            for extra in runs:
                with (
                    mock.patch("sys.argv", ["msweep.py", *common, *extra]),
                    mock.patch.object(msweep, "_method", wraps=msweep._method) as m,
                ):
                    msweep.main()
                fresh.append(m.call_count)
            self.assertEqual(fresh, [1, 1, 0, 0, 1, 1])

            def rows(path):
                with open(path) as handle:
                    out = list(csv.DictReader(handle))
                for row in out:
                    row.pop("step_seconds")
                return out

            self.assertEqual([r["n_evals"] for r in rows(cut)], ["7", "9", "11"])
            self.assertEqual(rows(cut), rows(uncut))
            self.assertEqual(rows(f"{tmp}/plain.csv"), rows(uncut)[:2])
