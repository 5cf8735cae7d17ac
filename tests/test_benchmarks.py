r"""The benchmarks folder: the results compaction, the m-sweep's resume and the
repository's layout."""

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
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
                # The runner's columns: wall time since the start (cumulative);
                # a batch's (q rows after 3 initial points) seconds on each row.
                "iteration": str(0 if i <= 3 else 1 + (i - 4) // q),
                "seconds": str(0.5 * i),
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
            # The runner's wall time at that evaluation (cumulative).
            self.assertAlmostEqual(float(r["seconds"]), 0.5 * n)
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

    def test_a_batchs_seconds_count_once(self):
        # q = 3: a batch's fit and acquisition seconds stand on each of its rows.
        out = compact_rows(_rows("qes", 0, 12, q=3), every=6)
        by_n = {r["n_evals"]: r for r in out}
        self.assertEqual(sorted(by_n), [6, 12])
        # After 6 evaluations: batches (4, 5, 6) -> 1; after 12: 3 batches.
        self.assertAlmostEqual(float(by_n[6]["fit_seconds_total"]), 0.25)
        self.assertAlmostEqual(float(by_n[12]["fit_seconds_total"]), 0.75)
        self.assertAlmostEqual(float(by_n[12]["acq_seconds_total"]), 0.375)
        # Wall time is the runner's cumulative stamp, not a sum of stamps.
        self.assertAlmostEqual(float(by_n[12]["seconds"]), 6.0)

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
            self.assertEqual(target.name, "results.checkpoints.csv.gz")
            self.assertFalse(raw.exists())
            first = target.read_bytes()
            with gzip.open(target, "rt", newline="") as f:
                reader = csv.DictReader(f)
                self.assertEqual(tuple(reader.fieldnames), COLUMNS)
                self.assertEqual([r["n_evals"] for r in reader], ["5", "10", "12"])
            # The same rows give the same bytes (no timestamp in the gzip header).
            with open(raw, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            self.assertEqual(compact_file(raw, every=5).read_bytes(), first)


class TestStoredResultsRead(unittest.TestCase):
    def test_kernel_decision_reads_the_gzipped_checkpoints(self):
        # The README's kernel table, from the stored (gzipped) run summaries.
        script = load_script("benchmarks/eulbo/kernel_decision.py")
        folder = ROOT / "benchmarks" / "eulbo" / "results" / "converged-fit"
        runs = script.best_values(
            [str(folder / name) for name in ("rover-ablation", "rover-kernel")]
        )
        self.assertAlmostEqual(runs[("ARD", 0)][300], 2.47, places=2)
        self.assertAlmostEqual(runs[("isotropic", 3)][300], -4.28, places=2)

    def test_bock_summary_reads_the_compacted_first_grid(self):
        # The BOCK README's section-1 table comes from the stored checkpoint
        # summaries (no results.csv is kept); the command once printed nothing.
        script = load_script("benchmarks/bock/summary.py")
        folder = ROOT / "benchmarks" / "bock" / "results" / "direction-rule"
        lines = script.summarize(folder / "rosenbrock20-bilog")
        readme = (ROOT / "benchmarks" / "bock" / "README.md").read_text()
        section = readme.split("## 1. ", 1)[1].split("\n## 2. ", 1)[0]
        (row,) = [r for r in section.splitlines() if r.startswith("| Rosenbrock-20 |")]
        for method, cell in zip(
            ("bock", "matern", "gpytorch-cylindrical", "qlogei"),
            row.split("|")[2:6],
            strict=True,
        ):
            (line,) = [x for x in lines if x.split("|")[2].strip() == method]
            self.assertEqual(line.split("|")[3].strip(), cell.strip(), method)
            self.assertEqual(line.split("|")[4].strip(), "3", method)


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
        self.assertLess(size, 10e6)
        raw = [
            p
            for p in paths
            if p.name == "results.csv"
            or (p.name.startswith("seed") and p.name[4:-4].isdigit())
        ]
        self.assertEqual(raw, [])


def _msweep():
    return load_script("benchmarks/eulbo/msweep.py")


def _write_msweep_rows(msweep, rows, folder):
    r"""Write made-up msweep rows, one CSV per method as the runs do; the paths."""
    paths = []
    for method in ("turbo-elbo-svgp", "turbo-eulbo-ei"):
        paths.append(f"{folder}/{method}.csv")
        with open(paths[-1], "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=msweep.FIELDS)
            writer.writeheader()
            writer.writerows(r for r in rows if r["method"] == method)
    return paths


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
            # Each row holds the proposal's diagnostics (they were read from the
            # run object, which no longer carries them, and came out empty).
            for row in rows(uncut):
                for key in ("noise", "moved", "w_moved", "eulbo"):
                    self.assertNotEqual(row[key], "", key)
            self.assertEqual(rows(f"{tmp}/plain.csv"), rows(uncut)[:2])


class TestCorrectedKGTables(unittest.TestCase):
    def test_readme_tables_are_the_stored_rows_summary(self):
        # The m = 25 soft-KG rerun: the README's two tables are msweep's
        # Markdown summary of the stored (compacted) rows, as its command says.
        import contextlib
        import io

        msweep = _msweep()
        R = ROOT / "benchmarks" / "eulbo" / "results" / "msweep" / "kg-m25-corrected"
        files = [
            str(R / f"hartmann6-m25-{n}.csv") for n in ("elbo-300", "kg-a", "kg-b")
        ]
        files_300 = files + [str(R / f"hartmann6-m25-kg-300-{p}.csv") for p in "ab"]
        readme = (ROOT / "benchmarks" / "eulbo" / "README.md").read_text()
        section = readme.split('<a id="kg-m25-corrected"></a>', 1)[1]
        for at, names in (("150", files), ("300", files_300)):
            out = io.StringIO()
            argv = ["msweep.py", "--markdown", "--at", at, "--summary", ",".join(names)]
            with mock.patch("sys.argv", argv), contextlib.redirect_stdout(out):
                msweep.main()
            rows = [
                r for r in out.getvalue().splitlines() if r.startswith("| hartmann6")
            ]
            self.assertEqual(len(rows), 2, at)
            for row in rows:
                self.assertIn(row, section, at)


class TestMSweepSummary(unittest.TestCase):
    def test_markdown_table_against_statistics(self):
        # Every EULBO verdict number comes from this table: check its means,
        # standard errors, paired differences and evidence medians against the
        # standard library on made-up rows.
        import io
        import statistics
        from contextlib import redirect_stdout

        msweep = _msweep()
        base = {0: -3.1, 1: -2.4, 2: -2.9, 3: -3.3, 4: -2.7, 5: -3.0}  # at 140
        # Seed 3 stops at 120 (left out); seed 4 ties (not a win).
        eulbo = {0: -3.0, 1: -2.9, 2: -3.15, 4: -2.7, 5: -3.2}
        rows = []
        for method, finals in (("turbo-elbo-svgp", base), ("turbo-eulbo-ei", eulbo)):
            for seed in range(6):
                for n in (120, 140, 160):
                    if n > 120 and seed not in finals:
                        continue
                    k = 7 * seed + n / 20  # made-up diagnostics, one per step
                    joint = method == "turbo-eulbo-ei"
                    rows.append({
                        "problem": "rover", "method": method, "m": 50, "seed": seed,
                        "n_evals": n,
                        "best_value": finals[seed] if n == 140 else 9.0 + n,
                        "step_seconds": 1.0, "noise": 0.01 * k,
                        "moved": 0.1 * k if joint else "",
                        "w_moved": 0.2 * k if joint else "",
                        "utility_gradient_share": 0.9 if joint else "",
                        "warm_start_eulbo": -k if joint else "",
                        "eulbo": -k + 0.5 + 0.01 * k if joint else "",
                        "eulbo_steps": 10 if joint else "",
                        "utility": 0.3 * k if joint else "",
                        "warm_start_utility": 0.25 * k if joint else "",
                    })  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            paths = _write_msweep_rows(msweep, rows, tmp)
            out = io.StringIO()
            with redirect_stdout(out):
                msweep.summary(",".join(paths), 140, markdown=True)
            # Stored gzipped (only `path.gz` exists), the same paths give the same.
            import gzip
            import os

            for path in paths:
                with open(path, "rb") as fh, gzip.open(path + ".gz", "wb") as gz:
                    gz.write(fh.read())
                os.remove(path)
            packed = io.StringIO()
            with redirect_stdout(packed):
                msweep.summary(",".join(paths), 140, markdown=True)
            self.assertEqual(packed.getvalue(), out.getvalue())
        table = {}
        for line in out.getvalue().splitlines()[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            table[cells[1].strip("`")] = cells

        def mean_se(xs):
            se = statistics.stdev(xs) / len(xs) ** 0.5
            return f"{statistics.mean(xs):.3f} +/- {se:.3f}"

        b, e = table["turbo-elbo-svgp"], table["turbo-eulbo-ei"]
        self.assertEqual((b[2], e[2]), ("6", "5"))
        self.assertEqual(b[3], mean_se(list(base.values())))
        self.assertEqual(e[3], mean_se(list(eulbo.values())))
        self.assertEqual(e[4], " / ".join(f"{eulbo[s]:.3f}" for s in sorted(eulbo)))
        diffs = [eulbo[s] - base[s] for s in sorted(eulbo)]
        se = statistics.stdev(diffs) / len(diffs) ** 0.5
        self.assertEqual(e[5], f"{statistics.mean(diffs):+.3f} +/- {se:.3f} (3 of 5)")
        self.assertEqual(b[5], "")
        # Evidence: medians over every joint step up to 140 evaluations (all
        # seeds at 120, those in ``eulbo`` at 140), the final noise over the
        # runs at 140.
        ks = [7 * s + 6 for s in range(6)] + [7 * s + 7 for s in eulbo]
        self.assertEqual(e[6], format(statistics.median([0.1 * k for k in ks]), ".3g"))
        self.assertEqual(e[7], format(statistics.median([0.2 * k for k in ks]), ".3g"))
        self.assertEqual(
            e[8], format(statistics.median([0.05 * k for k in ks]), "+.3g")
        )
        # d ELBO = d EULBO - d utility = (0.5 + 0.01 k) - 0.05 k.
        self.assertEqual(
            e[9], format(statistics.median([0.5 - 0.04 * k for k in ks]), "+.3g")
        )
        self.assertEqual(
            e[10], format(statistics.median([0.07 * s + 0.07 for s in eulbo]), ".3g")
        )
        self.assertEqual(b[6:10], ["", "", "", ""])

    def test_text_summary_window_phases_hours_and_per_seed(self):
        # The text summary's extra lines (the counts of joint phases that raised
        # the EULBO, hours per run, the per-step noise, the per-seed paired
        # differences) and ``after``, which keeps the evidence to a window.
        import io
        import re
        import statistics
        from contextlib import redirect_stdout

        msweep = _msweep()
        base = {0: -3.0, 1: -2.0, 2: -2.5, 3: -1.0, 4: -1.2}  # best values at 140
        eulbo = {0: -3.5, 1: -1.5, 2: -2.5}  # seeds 3 and 4 stop at 120
        gains = {120: 9.0, 140: None, 160: -9.0}  # 140: per seed below
        rows = []
        for method, finals in (("turbo-elbo-svgp", base), ("turbo-eulbo-ei", eulbo)):
            joint = method == "turbo-eulbo-ei"
            for seed in range(5):
                for n in (120, 140, 160):
                    if n > 120 and seed not in finals:
                        continue
                    gain = gains[n]
                    if gain is None:
                        gain = (-0.5, 0.0, 2.0, 0.0, 0.0)[seed]
                    rows.append({
                        "problem": "rover", "method": method, "m": 50, "seed": seed,
                        "n_evals": n,
                        "best_value": finals[seed] if n == 140 else 9.0 + n,
                        "step_seconds": 360.0 * (seed + 1) + n,
                        "noise": 0.001 * (10 * seed + n / 20 + (5 if joint else 0)),
                        "moved": 0.1 if joint else "",
                        "w_moved": 0.2 if joint else "",
                        "utility_gradient_share": 0.9 if joint else "",
                        "warm_start_eulbo": 1.0 if joint else "",
                        "eulbo": 1.0 + gain if joint else "",
                        "eulbo_steps": 10 if joint else "",
                        "utility": 0.0 if joint else "",
                        "warm_start_utility": 0.0 if joint else "",
                    })  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            paths = _write_msweep_rows(msweep, rows, tmp)
            out = io.StringIO()
            with redirect_stdout(out):
                msweep.summary(",".join(paths), 140, after=120)
            with self.assertRaisesRegex(ValueError, r"`after` \(140\)"):
                msweep.summary(",".join(paths), 140, after=140)
        text = out.getvalue()
        # Only the steps at 140 are in the window (120 < n <= 140): gains
        # -0.5, 0.0 and 2.0, of which one is a rise (a zero gain is not).
        self.assertIn("joint phases 3, EULBO rose in 1, smallest gain -0.5,", text)
        self.assertIn("median gain 0\n", text)
        hours = re.findall(
            r"hours per run ([0-9.]+), noise median per step ([0-9.]+)", text
        )
        # Hours: the whole run to 140 (both steps), over the runs that reached it.
        expected_hours = []
        for finals in (base, eulbo):
            runs = [sum(360.0 * (s + 1) + n for n in (120, 140)) / 3600 for s in finals]
            expected_hours.append(f"{statistics.mean(runs):.2f}")
        self.assertEqual([h for h, _ in hours], expected_hours)
        # Noise: the median over the steps at 140 only (5 and 3 of them).
        self.assertEqual(
            [float(v) for _, v in hours],
            [
                float(
                    format(
                        statistics.median(0.001 * (10 * s + 7 + j) for s in f), ".3g"
                    )
                )
                for f, j in ((base, 0), (eulbo, 5))
            ],
        )
        diffs = [eulbo[s] - base[s] for s in sorted(eulbo)]
        per_seed = ", ".join(f"{d:+.3f}" for d in diffs)
        self.assertIn(
            f"per seed {per_seed}, median {statistics.median(diffs):+.3f}", text
        )


class TestGrid2x2Table(unittest.TestCase):
    def test_paired_differences_and_compacted_rows(self):
        table = load_script("benchmarks/eulbo/grid2x2_table.py")
        with tempfile.TemporaryDirectory() as tmp:
            # Two arms, two seeds; "a" is 1.0 and 3.0 below "b" at n = 4, and
            # "b"'s seed 1 is stored compacted (only every second row).
            best = {("a", 0): -2.0, ("a", 1): -4.0, ("b", 0): -1.0, ("b", 1): -1.0}
            for (method, seed), value in best.items():
                folder = Path(tmp) / f"{method}-{seed}"
                folder.mkdir()
                name = "results.csv"
                ns = [1, 2, 3, 4]
                if (method, seed) == ("b", 1):
                    name, ns = "results.checkpoints.csv.gz", [2, 4]
                opener = gzip.open if name.endswith(".gz") else open
                with opener(folder / name, "wt", newline="") as fh:
                    writer = csv.writer(fh)
                    writer.writerow(["method", "seed", "n_evals", "best_value"])
                    for n in ns:
                        writer.writerow([method, seed, n, value if n == 4 else 0.0])
            runs = table.load([tmp])
            self.assertEqual(table.best_at(runs["b", 1], 4), -1.0)
            text = table.tables(runs, [4], [("a", "b")])
        # Mean -2.0, standard error of (-1, -3): stdev sqrt(2) / sqrt(2) = 1.
        self.assertIn("| `a` - `b` | -2.000 +/- 1.000 (2), 2 better |", text)
        self.assertIn("| `a` | -3.000 +/- 1.000 (2) |", text)


class TestRover20kReport(unittest.TestCase):
    def _write_run(self, folder: Path) -> None:
        # Two initial points, then 12 steps of q = 2; step i costs i + 0.5 s
        # (fit 0.5, acquisition i), written on both of its rows as the runner does.
        with (folder / "results.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(
                [
                    "method",
                    "seed",
                    "iteration",
                    "n_evals",
                    "fit_seconds",
                    "acq_seconds",
                    "best_value",
                    "model_noise",
                    "x0",
                ]
            )
            for n in (1, 2):
                writer.writerow(["m", 0, 0, n, 0, 0, -n, "", 0.1])
            for i in range(1, 13):
                for j in (1, 2):
                    n = 2 + 2 * (i - 1) + j
                    writer.writerow(["m", 0, i, n, 0.5, i, -n, 0.01 * i, 0.2])

    def test_step_costs_and_their_stored_rows(self):
        report = load_script("benchmarks/eulbo/rover20k_report.py")
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            self._write_run(folder)
            direct = report.step_costs(folder / "results.csv", [10, 26], window=3)
            steps = report.step_rows(folder / "results.csv")
            self.assertEqual(len(steps), 12)
            self.assertEqual([int(r["n_evals"]) for r in steps], list(range(4, 27, 2)))
            self.assertEqual(steps[-1]["best_value"], "-26")
            stored = folder / "steps.csv.gz"
            report.write_steps(steps, stored)
            self.assertEqual(report.step_rows(stored), steps)
            self.assertEqual(report.step_costs(stored, [10, 26], window=3), direct)
            # A count the run has not reached has no step cost.
            beyond = report.step_costs(stored, [30], window=3)["m"]["step_s_at_30"]
            self.assertIsNone(beyond)
        summary = direct["m"]
        self.assertEqual(summary["evaluations"], 26)
        self.assertEqual(summary["steps"], 12)
        self.assertAlmostEqual(summary["proposal_hours"] * 3600, 6.0 + 78.0)
        # n = 10 ends step 4: the median of steps 2-4 is step 3's 3.5 s.
        self.assertEqual(summary["step_s_at_10"], 3.5)
        self.assertEqual(summary["step_s_at_26"], 11.5)

    def test_cpu_record_from_each_segments_last_sample(self):
        report = load_script("benchmarks/eulbo/rover20k_report.py")
        samples = [
            {"segment": "a", "cpu": 10.0, "wall": 12.0, "peak_rss_mb": 100.0},
            {"segment": "a", "cpu": 20.0, "wall": 25.0, "peak_rss_mb": 300.0},
            {"segment": "b", "cpu": 5.0, "wall": 6.0, "peak_rss_mb": 200.0},
            {"segment": "b", "cpu": 7.0, "wall": 9.0, "peak_rss_mb": 250.0},
        ]
        with tempfile.TemporaryDirectory() as tmp:
            full = Path(tmp) / "cpu.jsonl"
            full.write_text("".join(json.dumps(s) + "\n" for s in samples))
            record = report.cpu_record(full)
            self.assertEqual(
                record,
                {"cpu_s": 27.0, "wall_s": 34.0, "peak_rss_mb": 300.0, "segments": 2},
            )
            lasts = report.segment_lasts(full)
            self.assertEqual(lasts, [samples[1], samples[3]])
            short = Path(tmp) / "last.jsonl"
            short.write_text("".join(json.dumps(s) + "\n" for s in lasts))
            self.assertEqual(report.cpu_record(short), record)


class TestStepCostFitBudget(unittest.TestCase):
    def test_the_fit_budget_reaches_the_stored_runs_fit(self):
        import torch

        from botorch_ext.runner.checkpoint import save_state
        from botorch_ext.runner.methods import get_method
        from botorch_ext.runner.problems import get_problem

        step_cost = load_script("benchmarks/eulbo/step_cost.py")
        problem = get_problem("rover")
        gen = torch.Generator().manual_seed(0)
        bounds = problem.bounds.double()
        X = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
            40, bounds.shape[1], generator=gen, dtype=torch.double
        )
        Y = problem(X).reshape(-1, 1)
        method = get_method("turbo-elbo-svgp").new_run()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "state.pt"
            save_state(path, "key", X, Y, method)
            row = step_cost.from_state(str(path), None, fit_max_iter=2)
        self.assertEqual(row["n"], 40)
        self.assertEqual(row["fit_max_iter"], 2)
        self.assertLessEqual(row["fit_steps"], 2)
        # Without it, the stored run's own budget (EULBOOptions.turbo()'s 100 on
        # all the data, 10 on the subset above lbfgs_max_n points).
        self.assertEqual(method.base_options.elbo.lbfgs_max_iter, 100)
        self.assertEqual(step_cost._fit_budget(method.base_options, 40), 100)
        self.assertEqual(step_cost._fit_budget(method.base_options, 2001), 10)
        # --fit-max-iter sets the budget of the subset's fit too.
        options = method.base_options.replace(lbfgs_max_n=30)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "state.pt"
            method.base_options = options
            save_state(path, "key", X, Y, method)
            row = step_cost.from_state(str(path), None, fit_max_iter=3)
        self.assertEqual(row["fit_max_iter"], 3)
        self.assertLessEqual(row["fit_steps"], 3)


# Two SVGP methods that differ only in their ELBO fit's settings (fork_run.py's
# test): on at most 8 points the fit uses all of them; above, a random 8 with a
# budget of 2 iterations in FORK_SUBSET.
def _fork_methods():
    from botorch_ext.eulbo import ELBOFitOptions, EULBOOptions
    from botorch_ext.runner.svgp import SVGPMethod

    base = EULBOOptions(elbo=ELBOFitOptions(lbfgs_max_iter=5), lbfgs_max_n=8)
    subset = base.replace(elbo=ELBOFitOptions(lbfgs_max_iter=5, subset_max_iter=2))
    return SVGPMethod(None, options=base), SVGPMethod(None, options=subset)


FORK_BASE, FORK_SUBSET = _fork_methods()


class TestForkRun(unittest.TestCase):
    RUN = [
        "compare", "--problem", "branin", "--n-init", "6", "--q", "2",
        "--init", "uniform", "--num-inducing-points", "6", "--num-restarts", "2",
        "--raw-samples", "16", "--seeds", "0", "--workers", "1",
    ]  # fmt: skip
    BASE = "tests.test_benchmarks:FORK_BASE"
    SUBSET = "tests.test_benchmarks:FORK_SUBSET"

    def _compare(self, method: str, budget: int, out: Path, *extra: str) -> None:
        from contextlib import redirect_stderr, redirect_stdout
        from io import StringIO

        from botorch_ext.runner import cli

        argv = [*self.RUN, "--methods", method, "--budget", str(budget)]
        with redirect_stdout(StringIO()), redirect_stderr(StringIO()):
            code = cli.main([*argv, "--output", str(out), *extra])
        self.assertEqual(code, 0)

    @staticmethod
    def _read(out: Path) -> list[dict]:
        with (out / "results.csv").open(newline="") as fh:
            return list(csv.DictReader(fh))

    def test_a_fork_continues_the_stored_run(self):
        import torch

        from botorch_ext.runner import methods

        fork_run = load_script("benchmarks/eulbo/fork_run.py")
        threads = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, threads)
        # The module:attribute names register themselves: undo it afterwards.
        for registry in (methods.METHODS, methods.METHOD_SUMMARIES):
            patcher = mock.patch.dict(registry)
            patcher.start()
            self.addCleanup(patcher.stop)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            self._compare(self.BASE, 10, tmp / "src")
            self._compare(self.BASE, 14, tmp / "whole")
            # Forked as itself and continued: the run that went on without a stop.
            record = fork_run.fork(tmp / "src", self.BASE, 0, self.BASE, 14, tmp / "a")
            self.assertEqual((record["rows"], record["options_replaced"]), (10, False))
            # The resume starts from the forked state: only the two new batches
            # are proposed (a replay of the stored ones would be four).
            run_class = type(FORK_BASE.new_run())
            with mock.patch.object(
                run_class, "propose", autospec=True, side_effect=run_class.propose
            ) as spy:
                self._compare(self.BASE, 14, tmp / "a", "--resume")
            self.assertEqual(spy.call_count, 2)
            keys = ("n_evals", "value", "x0", "x1", "model_elbo")
            whole, same = self._read(tmp / "whole"), self._read(tmp / "a")
            self.assertEqual(len(same), 14)
            for a, b in zip(whole, same, strict=True):
                self.assertEqual([a[k] for k in keys], [b[k] for k in keys])
            # Forked under the other settings: the stored rows renamed, then the
            # subset fit's budget of 2 (10 and 12 points are above 8).
            record = fork_run.fork(
                tmp / "src", self.BASE, 0, self.SUBSET, 14, tmp / "b"
            )
            self.assertTrue(record["options_replaced"])
            self._compare(self.SUBSET, 14, tmp / "b", "--resume")
            rows = self._read(tmp / "b")
            self.assertEqual({r["method"] for r in rows}, {self.SUBSET})
            for a, b in zip(whole[:10], rows[:10], strict=True):
                self.assertEqual([a[k] for k in keys], [b[k] for k in keys])
            steps = [int(r["model_fit_steps"]) for r in rows[10:]]
            self.assertEqual(len(steps), 4)
            self.assertLessEqual(max(steps), 2)
            self.assertGreater(max(int(r["model_fit_steps"]) for r in whole[10:]), 2)
            # What a fork refuses, naming the argument.
            for args, pattern in (
                ((self.BASE, 0, self.BASE, 10, tmp / "c"), "--budget 10"),
                ((self.BASE, 1, self.BASE, 14, tmp / "c"), "no rows .* seed 1"),
                ((self.BASE, 0, "turbo-elbo-svgp", 14, tmp / "c"), "'turbo'"),
                ((self.BASE, 0, self.BASE, 14, tmp / "a"), "--output .* not empty"),
            ):
                with self.assertRaisesRegex(ValueError, pattern):
                    fork_run.fork(tmp / "src", *args)


class TestQESCostStates(unittest.TestCase):
    # qes_cost.py --states: a compare output holds several methods' runs with the
    # same seeds and evaluation counts; a state must come from one run.
    def _write(self, directory: Path) -> Path:
        path = directory / "results.csv"
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["method", "seed", "n_evals", "value", "x0", "x1"])
            for method, offset in (("a", 0.0), ("b", 0.5)):
                for seed in (0, 1):
                    for k in range(1, 5):
                        x = (offset + 0.1 * k, seed + 0.01 * k)
                        writer.writerow([method, seed, k, -k - offset, *x])
        return path

    def test_a_state_is_one_methods_run(self):
        qes_cost = load_script("benchmarks/reparam_acq/qes_cost.py")
        with tempfile.TemporaryDirectory() as tmp:
            path = str(self._write(Path(tmp)))
            X, Y = qes_cost._run_state(path, 1, 3, 2, method="b")
            self.assertEqual(X.tolist(), [[0.6, 1.01], [0.7, 1.02], [0.8, 1.03]])
            # Negated values (BoTorch maximizes).
            self.assertEqual(Y.flatten().tolist(), [1.5, 2.5, 3.5])
            with self.assertRaisesRegex(ValueError, r"several methods \['a', 'b'\]"):
                qes_cost._run_state(path, 1, 3, 2)
            with self.assertRaisesRegex(ValueError, "--states-method 'c'"):
                qes_cost._run_state(path, 1, 3, 2, method="c")
            with self.assertRaisesRegex(ValueError, "has 4 rows of seed 0, not 5"):
                qes_cost._run_state(path, 0, 5, 2, method="a")


class TestBOCKFitEvaluations(unittest.TestCase):
    # fit_evaluations.py counts the marginal-likelihood evaluations of one fit.
    def test_counts_scipys_function_evaluations(self):
        import botorch.optim.core as core
        import torch

        script = load_script("benchmarks/bock/fit_evaluations.py")
        real, seen = core.minimize_with_timeout, []

        def spy(*args, **kwargs):
            result = real(*args, **kwargs)
            seen.append(result.nfev)
            return result

        torch.manual_seed(0)
        X = torch.rand(12, 3, dtype=torch.double)
        Y = -(X - 0.5).pow(2).sum(-1, keepdim=True)
        for kernel in ("bock", "bock-square"):
            seen.clear()
            with mock.patch.object(core, "minimize_with_timeout", spy):
                row = script.fit_once(X, Y, kernel, {"ftol": 1e-6})
            self.assertEqual([row["evaluations"]], seen, kernel)
            self.assertGreater(row["evaluations"], 1)

    def test_configs(self):
        script = load_script("benchmarks/bock/fit_evaluations.py")
        self.assertEqual(script.parse_config("bock@1e-6"), ("bock", {"ftol": 1e-6}))
        self.assertEqual(
            script.parse_config("matern-scaled@scipy"), ("matern-scaled", None)
        )
        self.assertEqual(
            script.parse_config("bock-square@1e-5"), ("bock-square", {"ftol": 1e-5})
        )
        with self.assertRaisesRegex(ValueError, "KERNEL@FTOL.*'bock'"):
            script.parse_config("bock")
        with self.assertRaisesRegex(ValueError, "unknown kernel 'rbf'"):
            script.parse_config("rbf@1e-6")
        with self.assertRaisesRegex(ValueError, "FTOL must be a number.*'tight'"):
            script.parse_config("bock@tight")


class TestBOCKAcqfEvaluations(unittest.TestCase):
    # acqf_evaluations.py counts acquisition calls of one optimize_acqf, in x or
    # in the power-mapped coordinates.
    def test_power_map_is_the_cube_onto_itself(self):
        import torch

        script = load_script("benchmarks/bock/acqf_evaluations.py")
        X = torch.rand(
            50, 4, dtype=torch.double, generator=torch.Generator().manual_seed(0)
        )
        for power in (1.0, 1.6, 2.0):
            Y = script.from_cube(X, power)
            self.assertTrue(bool(((Y >= 0) & (Y <= 1)).all()))
            back = script.to_cube(Y, power)
            self.assertLess((back - X).abs().max().item(), 1e-12)
        corners = torch.tensor([[0.0, 0.5, 1.0]], dtype=torch.double)
        self.assertEqual(script.to_cube(corners, 2.0).tolist(), corners.tolist())
        # Finer near the center: y = 0.6 maps to 0.5 + 0.5 * 0.2^2.
        self.assertAlmostEqual(script.to_cube(torch.tensor([0.6]), 2.0).item(), 0.52, 6)

    def test_counts_the_acquisitions_calls(self):
        import torch
        from botorch.acquisition import qSimpleRegret
        from botorch.utils.testing import MockModel, MockPosterior

        script = load_script("benchmarks/bock/acqf_evaluations.py")
        seen = []

        class Spy(qSimpleRegret):
            def forward(self, X):
                seen.append(X.detach().clone())
                return -(X - 0.3).pow(2).sum(dim=(-1, -2))

        model = MockModel(MockPosterior(mean=torch.zeros(1, 1, dtype=torch.double)))
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        ics = torch.tensor([[[0.9, 0.8]], [[0.1, 0.6]]], dtype=torch.double)
        for power in (1.0, 2.0):
            seen.clear()
            row = script.maximize(Spy(model), ics, bounds, 1e-9, power)
            self.assertEqual(row["evaluations"], len(seen) - 1)  # and the final value
            # The search starts at the initial conditions, whatever its coordinates.
            self.assertLess((seen[0] - ics).abs().max().item(), 1e-12)
            self.assertAlmostEqual(row["value"], 0.0, places=6)
            rho = ((torch.tensor([0.3, 0.3]) - 0.5).norm() / (2**0.5 / 2)).item()
            self.assertAlmostEqual(row["rho"], rho, places=3)

    def test_configs(self):
        script = load_script("benchmarks/bock/acqf_evaluations.py")
        self.assertEqual(script.parse_config("1e-6"), (1e-6, None))
        self.assertEqual(script.parse_config("1e-5@alpha"), (1e-5, "alpha"))
        self.assertEqual(script.parse_config("1e-6@2"), (1e-6, "2"))
        for bad, pattern in (
            ("tight", "FTOL or FTOL@POWER, got 'tight'"),
            ("-1", "positive, got '-1'"),
            ("1e-6@0.5", "POWER must be a number >= 1 or 'alpha', got '1e-6@0.5'"),
            ("1e-6@beta", "got '1e-6@beta'"),
        ):
            with self.assertRaisesRegex(ValueError, pattern):
                script.parse_config(bad)


CHECKPOINTS = "results.checkpoints.csv.gz"


class TestGridSummaryReadsCheckpoints(unittest.TestCase):
    # grid_summary.py on compact_results.py's summaries gives the best values and
    # paired differences it gives on the raw rows (at a checkpoint).
    def _write(self, folder: Path) -> None:
        for method, seeds in (("a", (0, 1, 2)), ("b", (0, 1, 2, 3))):
            run = folder / method
            run.mkdir(parents=True)
            rows = [r for s in seeds for r in _rows(method, s, 20)]
            # Different values per method.
            if method == "b":
                for r in rows:
                    r["best_value"] = str(float(r["best_value"]) + 0.5 * int(r["seed"]))
            with open(run / "results.csv", "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)

    def _summary(self, folder: Path, at: int) -> str:
        out = subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks/grid_summary.py"),
                str(folder),
                "--at",
                str(at),
                "--pairs",
                "a:b",
                "--checkpoints",
                "10,20",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "MPLBACKEND": "Agg"},
        ).stdout
        return out

    def test_same_table_from_raw_rows_and_checkpoints(self):
        with tempfile.TemporaryDirectory() as tmp:
            raw, compact = Path(tmp) / "raw", Path(tmp) / "compact"
            self._write(raw)
            self._write(compact)
            for path in compact.glob("*/results.csv"):
                compact_file(path, every=10, remove=True)
            self.assertEqual(list(compact.glob("*/results.csv")), [])
            want = self._summary(raw, 20)
            got = self._summary(compact, 20)
            self.assertIn("paired a - b over 3 seeds", want)

            # The same table (the rows' steps all take 0.5 s, so the summary's
            # mean step over its span is the raw rows' mean step).
            self.assertIn("| 0.50 |", want)
            self.assertEqual(got, want)
            # Summaries compacted before the `seconds` column (with the old,
            # meaningless `seconds_total`) give no seconds per step.
            for path in compact.glob(f"*/{CHECKPOINTS}"):
                with gzip.open(path, "rt") as f:
                    text = f.read()
                with gzip.open(path, "wt") as f:
                    f.write(text.replace(",seconds,", ",seconds_total,", 1))
            old = self._summary(compact, 20)
            self.assertNotIn("| 0.50 |", old)
            self.assertIn("|  | ", old)  # the empty seconds-per-step cell
            # At an evaluation count that is no checkpoint, the runs are left out.
            self.assertIn("Runs short of", self._summary(compact, 25))


class TestBOCKWarmVsColdReplay(unittest.TestCase):
    # warm_vs_cold_fits.py: the warm chain starts where a cold fit starts.
    def test_first_state_is_a_cold_fit_and_states_follow_the_run(self):
        import torch

        script = load_script("benchmarks/bock/warm_vs_cold_fits.py")
        torch.manual_seed(0)
        X = torch.rand(7, 3, dtype=torch.double)
        Y = -(X - 0.5).pow(2).sum(-1, keepdim=True)
        out = script.replay(X, Y, "bock", n_init=5, at=[5, 7], ftol=1e-6)
        self.assertEqual([r["n"] for r in out], [5, 7])
        # At the first state the warm chain has nothing to start from.
        self.assertEqual(out[0]["warm_ll"], out[0]["cold_ll"])
        self.assertEqual(out[0]["warm_weights"], out[0]["cold_weights"])
        # A run's rows in evaluation order, outcomes negated (BoTorch maximizes).
        rows = [
            {"method": m, "seed": "0", "n_evals": n, "value": v, "x0": a, "x1": b}
            for m, n, v, a, b in (
                ("m", "2", "2.0", "0.2", "0.5"),
                ("m", "1", "1.0", "0.1", "0.4"),
                ("m", "3", "3.0", "0.3", "0.6"),
                ("o", "1", "9.0", "0.9", "0.9"),
            )
        ]
        Xr, Yr = script.run_states(rows, "m", 0)
        self.assertEqual(Xr.tolist(), [[0.1, 0.4], [0.2, 0.5], [0.3, 0.6]])
        self.assertEqual(Yr.flatten().tolist(), [-1.0, -2.0, -3.0])
        with self.assertRaisesRegex(ValueError, r"method 'z' and seed 0.*\['m', 'o'\]"):
            script.run_states(rows, "z", 0)
