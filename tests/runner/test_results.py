import csv
import json
import os
import signal
import tempfile
from pathlib import Path

from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.checkpoint import state_path
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.metadata import config_differences, run_metadata
from botorch_ext.runner.results import (
    CsvWriter,
    load_results,
    open_output,
    read_results,
)
from botorch_ext.runner.schema import FIXED_COLUMNS, SCHEMA_VERSION, columns, parse_row
from botorch_ext.runner.signals import holding_interrupts

CONFIG = {"command": "run", "problem": "branin", "budget": 5, "options": {"q": 1}}


def _rows(n=5):
    return run_bo(RunConfig("branin", "random", budget=n, n_init=2, seed=3))


class TestSchema(BotorchTestCase):
    def test_columns_are_fixed_then_the_point(self):
        self.assertEqual(columns(3), (*FIXED_COLUMNS, "x0", "x1", "x2"))
        for name in ("iteration", "batch_position", "fit_seconds", "acq_seconds",
                     "eval_seconds", "seconds", "model_noise"):  # fmt: skip
            self.assertIn(name, FIXED_COLUMNS)

    def test_parse_row_types(self):
        row = parse_row(
            {"dim": "2", "value": "1.5", "model_noise": "", "x0": "0.25",
             "model_fit_steps": "7", "model_warp": "1;2", "method": "qucb"}
        )  # fmt: skip
        self.assertEqual(
            row,
            {"dim": 2, "value": 1.5, "model_noise": "", "x0": 0.25,
             "model_fit_steps": 7, "model_warp": "1;2", "method": "qucb",
             "status": "ok", "error": ""},
        )  # fmt: skip


class TestCsvWriterAndReader(BotorchTestCase):
    def test_round_trip_is_exact_and_appends(self):
        rows = _rows()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.csv"
            writer = CsvWriter(path, columns(2))
            for row in rows[:3]:
                writer.write(row)
            writer.close()
            writer = CsvWriter(path, columns(2), append=True)
            for row in rows[3:]:
                writer.write(row)
            writer.close()
            stored = read_results(path)
        self.assertEqual(stored.header, columns(2))
        self.assertEqual(stored.rows, rows)  # floats round-trip bit for bit
        self.assertEqual(stored.partial_line, "")

    def test_every_row_is_on_disk_before_close(self):
        rows = _rows()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.csv"
            writer = CsvWriter(path, columns(2))
            for i, row in enumerate(rows):
                writer.write(row)
                # Another reader sees the complete row at once (no buffering).
                self.assertEqual(len(read_results(path).rows), i + 1)
                self.assertTrue(path.read_bytes().endswith(b"\n"))
            writer.close()

    def test_truncated_last_line_is_dropped_and_repaired(self):
        rows = _rows()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.csv"
            writer = CsvWriter(path, columns(2))
            for row in rows:
                writer.write(row)
            writer.close()
            data = path.read_bytes()
            path.write_bytes(data[:-20])  # as if killed in the middle of a write
            stored = read_results(path)
            self.assertEqual(stored.rows, rows[:-1])
            self.assertGreater(len(stored.partial_line), 0)
            self.assertEqual(path.read_bytes(), data[:-20])  # read only
            read_results(path, repair=True)
            self.assertTrue(path.read_bytes().endswith(b"\n"))
            writer = CsvWriter(path, columns(2), append=True)
            writer.write(rows[-1])
            writer.close()
            self.assertEqual(read_results(path).rows, rows)
            with open(path) as f:
                self.assertEqual(len(list(csv.DictReader(f))), len(rows))

    def test_compressed_results_read_like_the_plain_file(self):
        # results.csv.gz: the same rows from read_results and load_results;
        # a plain results.csv is preferred when both are there.
        import gzip

        from botorch_ext.runner.results import load_results, stored_results_path

        rows = _rows()
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain" / "results.csv"
            plain.parent.mkdir()
            writer = CsvWriter(plain, columns(2))
            for row in rows:
                writer.write(row)
            writer.close()
            packed = Path(tmp) / "packed" / "results.csv.gz"
            packed.parent.mkdir()
            packed.write_bytes(gzip.compress(plain.read_bytes()))
            self.assertEqual(read_results(packed).rows, rows)
            self.assertEqual(stored_results_path(packed.parent), packed)
            self.assertEqual(stored_results_path(plain.parent), plain)
            self.assertIsNone(stored_results_path(Path(tmp)))
            self.assertEqual(load_results([packed.parent]), rows)
            with self.assertRaisesRegex(ValueError, "cannot repair"):
                read_results(packed, repair=True)
            packed.write_bytes(gzip.compress(plain.read_bytes())[:-30])
            with self.assertRaisesRegex(ValueError, "not a complete gzip file"):
                read_results(packed)

    def test_damaged_complete_line_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.csv"
            path.write_text("a,b\n1,2\n3\n")
            message = r"line 3 is damaged \(1 fields, expected 2\)"
            with self.assertRaisesRegex(ValueError, message):
                read_results(path)


class TestOpenOutput(BotorchTestCase):
    def _write(self, directory, config=CONFIG, rows=None, **kwargs):
        output = open_output(directory, config, 2, argv=["x"], log=lambda m: None,
                             **kwargs)  # fmt: skip
        for row in rows if rows is not None else _rows():
            output.writer.write(row)
        output.close("finished")
        return output

    def test_config_json_records_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp))
            config = json.loads((Path(tmp) / "config.json").read_text())
        self.assertEqual(config["schema_version"], SCHEMA_VERSION)
        self.assertEqual(config["budget"], 5)
        self.assertEqual(config["argv"], ["x"])
        for package in ("botorch_ext", "botorch", "gpytorch", "torch", "python"):
            self.assertIsInstance(config["versions"][package], str)
        for key in ("git_revision", "host", "torch_threads", "start_time"):
            self.assertIn(key, config)
        self.assertLessEqual(config["start_time"], config["end_time"])
        self.assertEqual(config["status"], "finished")

    def test_refuses_results_without_a_flag(self):
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp))
            before = (Path(tmp) / "results.csv").read_bytes()
            with self.assertRaisesRegex(ValueError, "holds 5 result rows.*--resume.*"
                                        "--overwrite"):  # fmt: skip
                open_output(Path(tmp), CONFIG, 2)
            self.assertEqual((Path(tmp) / "results.csv").read_bytes(), before)
            with self.assertRaisesRegex(ValueError, "exclude each other"):
                open_output(Path(tmp), CONFIG, 2, resume=True, overwrite=True)

    def test_a_header_without_rows_is_not_results(self):
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp), rows=[])
            self._write(Path(tmp))  # no flag needed
            self.assertEqual(len(read_results(Path(tmp) / "results.csv").rows), 5)

    def test_overwrite_starts_afresh(self):
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp))
            state = state_path(tmp, "turbo", 0)
            state.parent.mkdir()
            state.write_bytes(b"a method state")
            self._write(Path(tmp), rows=_rows()[:2], resume=True)
            self.assertTrue(state.exists())  # a resume keeps the method states
            self._write(Path(tmp), rows=_rows()[:2], overwrite=True)
            self.assertEqual(len(read_results(Path(tmp) / "results.csv").rows), 2)
            self.assertFalse(state.parent.exists())  # those of discarded rows go

    def test_resume_appends_and_checks_the_settings(self):
        rows = _rows()
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp), rows=rows[:3])
            changed = {**CONFIG, "budget": 6, "options": {"q": 2}, "workers": 4}
            with self.assertRaisesRegex(
                ValueError, r"budget: 5 -> 6; options.q: 1 -> 2\)"
            ):
                open_output(Path(tmp), changed, 2, resume=True)
            output = open_output(Path(tmp), {**CONFIG, "workers": 4}, 2, resume=True,
                                 log=lambda m: None)  # fmt: skip
            self.assertEqual(output.stored_rows, rows[:3])
            for row in rows[3:]:
                output.writer.write(row)
            output.close("finished")
            self.assertEqual(read_results(Path(tmp) / "results.csv").rows, rows)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(len(config["resumed"]), 1)
            self.assertEqual(config["resumed"][0]["workers"], 4)

    def test_close_records_the_peak_memory(self):
        import resource

        def now_mib(who):
            return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB

        with tempfile.TemporaryDirectory() as tmp:
            output = open_output(Path(tmp), CONFIG, 2)
            before = now_mib(resource.RUSAGE_SELF)
            output.close("finished")
            after = max(
                now_mib(resource.RUSAGE_SELF), now_mib(resource.RUSAGE_CHILDREN)
            )
            config = json.loads((Path(tmp) / "config.json").read_text())
        # The process's own peak so far, in MiB, rounded to 0.1.
        self.assertGreaterEqual(config["peak_rss_mb"], before - 0.1)
        self.assertLessEqual(config["peak_rss_mb"], after + 0.1)
        # A metadata key: a resume does not compare it.
        self.assertEqual(config_differences(CONFIG, {**CONFIG, "peak_rss_mb": 1.0}), [])

    def test_resume_refuses_another_schema(self):
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp))
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps({**CONFIG, "schema_version": 1}))
            with self.assertRaisesRegex(ValueError, "schema version 1"):
                open_output(Path(tmp), CONFIG, 2, resume=True)

    def test_resume_reports_a_dropped_partial_line(self):
        notes = []
        with tempfile.TemporaryDirectory() as tmp:
            self._write(Path(tmp))
            path = Path(tmp) / "results.csv"
            path.write_bytes(path.read_bytes()[:-7])
            output = open_output(Path(tmp), CONFIG, 2, resume=True, log=notes.append)
            output.close("finished")
            self.assertEqual(len(output.stored_rows), 4)
        self.assertEqual(len(notes), 1)
        self.assertIn("dropped an incomplete last line", notes[0])

    def test_config_differences(self):
        self.assertEqual(config_differences(CONFIG, {**CONFIG, "host": "h"}), [])
        self.assertEqual(
            config_differences(CONFIG, {**CONFIG, "seeds": [1]}),
            ["seeds: '(missing)' -> [1]"],
        )

    def test_run_metadata_git_revision_fails_silently(self):
        meta = run_metadata(["a"])
        self.assertTrue(meta["git_revision"] is None or len(meta["git_revision"]) == 40)
        self.assertEqual(meta["argv"], ["a"])


class TestHoldingInterrupts(BotorchTestCase):
    def test_sigint_waits_for_the_block(self):
        done = []
        with self.assertRaises(KeyboardInterrupt):
            with holding_interrupts():
                os.kill(os.getpid(), signal.SIGINT)
                done.append("row written")  # still runs
        self.assertEqual(done, ["row written"])
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)


class TestLoadResults(BotorchTestCase):
    def _write(self, directory: Path, rows):
        directory.mkdir()
        writer = CsvWriter(directory / "results.csv", columns(2))
        for row in rows:
            writer.write(row)
        writer.close()

    def test_merges_directories_and_refuses_duplicates(self):
        seed0 = run_bo(RunConfig("branin", "random", budget=3, n_init=2, seed=0))
        seed1 = run_bo(RunConfig("branin", "random", budget=3, n_init=2, seed=1))
        with tempfile.TemporaryDirectory() as tmp:
            a, b, c = Path(tmp) / "a", Path(tmp) / "b", Path(tmp) / "c"
            self._write(a, seed0)
            self._write(b, seed1)
            self._write(c, seed1[:2])
            rows = load_results([a, b])
            self.assertEqual([r["seed"] for r in rows], [0, 0, 0, 1, 1, 1])
            self.assertEqual(rows[3]["x1"], seed1[0]["x1"])
            with self.assertRaisesRegex(ValueError, "seed 1 on branin is in both"):
                load_results([a, b, c])
            with self.assertRaisesRegex(ValueError, "is given twice"):
                load_results([a, a])
            with self.assertRaisesRegex(ValueError, "no results.csv in"):
                load_results([a, Path(tmp)])
