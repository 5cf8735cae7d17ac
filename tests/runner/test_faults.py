r"""Failed evaluations are rows, not crashes; damaged and duplicated results files
are reported, never silently cut; library errors name arguments, the CLI flags.

The objective is ``tests.runner.faulty:branin``, whose faults are set through
environment variables (see that module).
"""

import csv
import json
import math
import os
import tempfile
from pathlib import Path
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner import loop
from botorch_ext.runner.cli import resume_command
from botorch_ext.runner.compare import format_summary, summarize
from botorch_ext.runner.errors import ArgumentError, flag_message
from botorch_ext.runner.evaluation import (
    EvaluationFailed,
    Evaluator,
    FaultPolicy,
    outcomes,
)
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.metadata import redact, run_metadata
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.plotting import plot_regret
from botorch_ext.runner.problems import get_problem
from botorch_ext.runner.protocol import FunctionMethod
from botorch_ext.runner.results import (
    CsvWriter,
    drop_duplicates,
    open_output,
    read_results,
)
from botorch_ext.runner.schema import FIXED_COLUMNS, build_row, columns, parse_row
from tests.failsafe import failsafe
from tests.test_cli import _main

PROBLEM = "tests.runner.faulty:branin"
OPTIONS = MethodOptions(num_restarts=2, raw_samples=16)
# Seconds after which a test with an hour-long evaluation fails instead of hanging
# (it normally ends in a few seconds, evaluation processes included).
HANG_FAILSAFE_S = 120


def _config(method="sobol", budget=10, n_init=4, q=1, seed=0):
    return RunConfig(PROBLEM, method, budget, n_init=n_init, q=q, seed=seed,
                     options=OPTIONS)  # fmt: skip


class FaultEnv(BotorchTestCase):
    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.log = self.tmp / "evaluations.log"
        keys = [k for k in os.environ if k.startswith("FAULTY_")]
        saved = {k: os.environ.pop(k) for k in keys}
        self.addCleanup(self._restore, saved)
        self.env(FAULTY_LOG=self.log, FAULTY_MARKER=self.tmp / "marker")

    def _restore(self, saved):
        for k in [k for k in os.environ if k.startswith("FAULTY_")]:
            del os.environ[k]
        os.environ.update(saved)

    def env(self, **values):
        os.environ.update({k: str(v) for k, v in values.items()})

    def evaluated(self):
        if not self.log.exists():
            return []
        return self.log.read_text().splitlines()


class TestFailedEvaluations(FaultEnv):
    def test_nan_objective_finishes_its_budget_with_failures_recorded(self):
        self.env(FAULTY_NAN=1)
        for method in ("sobol", "qlogei"):
            rows = run_bo(_config(method, budget=12))
            self.assertEqual(len(rows), 12)
            self.assertEqual([r["n_evals"] for r in rows], list(range(1, 13)))
            failed = [r for r in rows if r["status"] == "failed"]
            ok = [r for r in rows if r["status"] == "ok"]
            self.assertTrue(failed and ok)
            for r in failed:
                self.assertGreater(r["x0"], 0.5)  # the NaN region
                self.assertEqual(r["value"], "")
                self.assertIn("nan", r["error"])
            for r in ok:
                self.assertTrue(math.isfinite(r["value"]))
                self.assertEqual(r["error"], "")
            # The best value is the running minimum over the ok rows only.
            best = math.inf
            for r in rows:
                if r["status"] == "ok":
                    best = min(best, r["value"])
                if math.isinf(best):
                    self.assertEqual(r["best_value"], "")
                else:
                    self.assertEqual(r["best_value"], best)
            self.assertTrue(math.isfinite(rows[-1]["best_value"]))

    def test_failed_points_never_reach_a_model_and_sobol_moves_on(self):
        self.env(FAULTY_NAN=1)
        seen = []

        def method(X, Y, bounds, q, seed, options):
            seen.append((X.clone(), Y.clone()))
            return torch.rand(q, X.shape[-1], dtype=X.dtype)

        with mock.patch.object(loop, "get_method", return_value=FunctionMethod(method)):
            rows = run_bo(_config("qlogei", budget=12))
        ok_points = [[r["x0"], r["x1"]] for r in rows if r["status"] == "ok"]
        self.assertTrue(seen)
        for X, Y in seen:
            self.assertTrue(torch.isfinite(Y).all())
            # Exactly the ok points so far, in order.
            self.assertEqual(X.tolist(), ok_points[: X.shape[0]])
        # A model-free method continues its sequence past failed points: every
        # proposal is new.
        rows = run_bo(_config("sobol", budget=12))
        points = [(r["x0"], r["x1"]) for r in rows]
        self.assertEqual(len(set(points)), len(points))

    def test_raise_stops_by_default_keeps_the_rows_and_resume_continues(self):
        self.env(FAULTY_RAISE_AT=6)
        written = []
        config = _config("sobol", budget=10)
        with self.assertRaisesRegex(
            EvaluationFailed,
            r"evaluation 7 of sobol seed 0 failed at x = \[.*"
            r"RuntimeError: planted failure",
        ) as caught:
            run_bo(config, on_row=written.append)
        self.assertEqual(len(written), 7)
        self.assertEqual(caught.exception.row, written[-1])
        self.assertEqual(written[-1]["status"], "failed")
        self.assertEqual(len(self.evaluated()), 6)
        # The stored rows continue: the failed point is not evaluated again.
        del os.environ["FAULTY_RAISE_AT"]
        rows = run_bo(config, stored_rows=written)
        self.assertEqual(len(rows), 10)
        # The best value goes on from the stored ok rows (the failed one aside).
        best = math.inf
        for row in rows:
            if row["status"] == "ok":
                best = min(best, row["value"])
            self.assertEqual(row["best_value"], best)
        self.assertEqual(len(self.evaluated()), 6 + 3)
        self.assertEqual(len(set(self.evaluated())), 9)

    def test_on_error_choices(self):
        self.env(FAULTY_RAISE_AT=5)
        rows = run_bo(_config(budget=8), faults=FaultPolicy("skip"))
        self.assertEqual([r["status"] for r in rows].count("failed"), 1)
        self.assertEqual(len(rows), 8)
        del os.environ["FAULTY_RAISE_AT"]
        self.env(FAULTY_NAN=1)
        with self.assertRaisesRegex(EvaluationFailed, "returned nan"):
            run_bo(_config(budget=8), faults=FaultPolicy("stop"))
        policy = FaultPolicy()
        self.assertTrue(policy.stops("exception"))
        self.assertFalse(policy.stops("nonfinite"))
        self.assertFalse(policy.stops("timeout"))
        self.assertTrue(FaultPolicy("stop").stops("timeout"))
        self.assertFalse(FaultPolicy("skip").stops("exception"))

    def test_a_raising_batch_fails_all_its_points_once(self):
        self.env(FAULTY_RAISE_AT=1)
        problem = get_problem(PROBLEM)
        out = outcomes(problem, torch.rand(3, 2, dtype=torch.double))
        self.assertEqual([o.kind for o in out], ["exception"] * 3)
        self.assertEqual(out[0].error, "RuntimeError: planted failure")
        self.assertEqual(self.evaluated(), [])

    def test_a_wrong_shape_fails_the_batch_and_failures_pickle_by_row(self):
        # An objective returning one value for two points fails both, naming
        # the shapes; a stopped run's EvaluationFailed travels by its row.
        import pickle

        def pair_sum(X):
            return X.sum()

        out = outcomes(pair_sum, torch.rand(2, 3, dtype=torch.double))
        self.assertEqual([o.kind for o in out], ["exception"] * 2)
        self.assertEqual(
            out[0].error,
            "ValueError: the objective returned shape () for 2 points, expected (2,)",
        )
        row = {
            "n_evals": 3, "method": "sobol", "seed": 1, "dim": 2,
            "x0": 0.25, "x1": 0.5, "error": out[0].error,
        }  # fmt: skip
        failed = pickle.loads(pickle.dumps(EvaluationFailed(row)))
        self.assertIsInstance(failed, EvaluationFailed)
        self.assertEqual(failed.row, row)
        self.assertEqual(str(failed), str(EvaluationFailed(row)))
        self.assertIn(
            "evaluation 3 of sobol seed 1 failed at x = [0.25, 0.5]", str(failed)
        )

    def test_eval_timeout_abandons_a_hang_and_goes_on(self):
        self.env(FAULTY_HANG_AT=5)
        # The objective hangs for an hour: without the timeout, fail, not hang.
        with failsafe(HANG_FAILSAFE_S, "a run with an hour-long evaluation"):
            rows = run_bo(_config(budget=8), faults=FaultPolicy(eval_timeout=1.5))
        self.assertEqual(len(rows), 8)
        (failed,) = [r for r in rows if r["status"] == "failed"]
        self.assertEqual(failed["n_evals"], 6)
        self.assertIn("timed out after 1.5 s", failed["error"])
        # Values computed in the child process equal those computed here.
        os.environ.pop("FAULTY_HANG_AT")
        self.log.unlink()
        plain = run_bo(_config(budget=8))
        for a, b in zip(rows, plain, strict=True):
            if a["status"] == "ok":
                self.assertEqual(a["value"], b["value"])

    def test_evaluator_child_process_reports_failures(self):
        self.env(FAULTY_NAN=1)
        problem = get_problem(PROBLEM)
        X = torch.tensor([[0.2, 0.5], [0.8, 0.5]], dtype=torch.double)
        with Evaluator(problem, (PROBLEM, None), timeout=60.0) as evaluate:
            out = evaluate(X)
        self.assertEqual(out, outcomes(problem, X))
        self.assertTrue(out[0].ok)
        self.assertEqual(out[1].kind, "nonfinite")

    def test_fault_policy_errors_name_the_argument(self):
        for policy, name in (
            (FaultPolicy("retry"), "on_error"),
            (FaultPolicy(eval_timeout=0.0), "eval_timeout"),
            (FaultPolicy(eval_timeout=math.nan), "eval_timeout"),
        ):
            with self.assertRaisesRegex(ArgumentError, name) as caught:
                policy.validate()
            self.assertEqual(caught.exception.argument, name)

    def test_plot_counts_failed_evaluations(self):
        self.env(FAULTY_NAN=1)
        rows = run_bo(_config(budget=8))
        n_failed = sum(r["status"] == "failed" for r in rows)
        import matplotlib.pyplot as plt

        figures = []
        close = plt.close
        with mock.patch.object(plt, "close", lambda f: figures.append(f) or close(f)):
            plot_regret(rows, self.tmp / "regret.png")
        labels = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
        self.assertEqual(labels, [f"sobol (1 seeds, {n_failed} failed evals)"])

    def test_summary_counts_failed_evaluations_per_run(self):
        self.env(FAULTY_NAN=1)
        rows = run_bo(_config(budget=8)) + run_bo(_config(budget=8, seed=1))
        (s,) = summarize(rows)
        by_hand = [sum(r["status"] == "failed" for r in rows if r["seed"] == k)
                   for k in (0, 1)]  # fmt: skip
        self.assertEqual(s["failed"], sum(by_hand))
        self.assertEqual(s["failed_runs"], sum(n > 0 for n in by_hand))
        self.assertIn(f"{sum(by_hand)} in ", format_summary([s]))


class TestSchema(BotorchTestCase):
    def test_one_declaration_builds_header_parser_and_row(self):
        self.assertEqual(columns(1), (*FIXED_COLUMNS, "x0"))
        self.assertLess(FIXED_COLUMNS.index("value"), FIXED_COLUMNS.index("status"))
        fields = {**dict.fromkeys(FIXED_COLUMNS, ""), "dim": 1}
        row = build_row([0.5], **fields)
        self.assertEqual(tuple(row), columns(1))
        with self.assertRaisesRegex(ValueError, r"missing \['status'\]"):
            build_row([0.5], **{k: v for k, v in fields.items() if k != "status"})
        with self.assertRaisesRegex(ValueError, "unknown"):
            build_row([0.5], **fields, extra=1)
        # Files without the status column read as ok.
        self.assertEqual(parse_row({"value": "1.5"})["status"], "ok")
        with self.assertRaisesRegex(ValueError, "column 'n_evals' holds 'x'"):
            parse_row({"n_evals": "x"})


def _write(path, rows, dim=2):
    writer = CsvWriter(path, columns(dim))
    for row in rows:
        writer.write(row)
    writer.close()


class TestDamagedAndDuplicated(FaultEnv):
    def _rows(self, seed=0):
        return run_bo(_config(budget=6, seed=seed))

    def test_a_damaged_middle_line_stops_with_its_number_and_changes_nothing(self):
        path = self.tmp / "results.csv"
        _write(path, self._rows())
        lines = path.read_bytes().splitlines(keepends=True)
        typed = lines[3].replace(b",2,sobol,", b",two,sobol,")
        self.assertNotEqual(typed, lines[3])
        for damage in (b"garbage\n", b"\xff\xfe\n", typed):
            data = b"".join(lines[:3] + [damage] + lines[4:]) + b"half a li"
            path.write_bytes(data)
            with self.assertRaisesRegex(
                ValueError, r"line 4 is damaged .*nothing was changed.*--overwrite"
            ):
                read_results(path, repair=True)
            self.assertEqual(path.read_bytes(), data)  # not even the cut line

    def test_resume_moves_duplicates_aside_and_says_so(self):
        out = self.tmp / "out"
        out.mkdir()
        config = {"command": "run", "x": 1}
        first = self._rows()
        output = open_output(out, config, 2)
        for row in first[:5]:
            output.writer.write(row)
        # A second attempt wrote rows 3.. again (another history).
        for row in first[2:]:
            output.writer.write({**row, "value": row["value"] + 1})
        output.close("interrupted")
        notes = []
        output = open_output(out, config, 2, resume=True, log=notes.append)
        output.close("interrupted")
        self.assertEqual([r["n_evals"] for r in output.stored_rows], [1, 2, 3, 4, 5])
        self.assertEqual(
            [r["value"] for r in output.stored_rows], [r["value"] for r in first[:5]]
        )
        self.assertRegex(notes[0], "held 4 rows of runs that had started again")
        side = read_results(out / "results.duplicates.csv").rows
        self.assertEqual([r["n_evals"] for r in side], [3, 4, 5, 6])
        kept = read_results(out / "results.csv").rows
        self.assertEqual(kept, output.stored_rows)
        self.assertEqual(drop_duplicates(kept), (kept, []))

    def test_resume_upgrades_a_schema_2_file(self):
        out = self.tmp / "out"
        out.mkdir()
        rows = self._rows()
        old = [c for c in columns(2) if c not in ("status", "error")]
        writer = CsvWriter(out / "results.csv", old)
        for row in rows[:3]:
            writer.write(row)
        writer.close()
        config = {"command": "run", "x": 1}
        (out / "config.json").write_text(json.dumps({**config, "schema_version": 2}))
        notes = []
        output = open_output(out, config, 2, resume=True, log=notes.append)
        output.close("interrupted")
        self.assertEqual(output.stored_rows, rows[:3])
        self.assertIn("upgraded", notes[0])
        self.assertEqual(read_results(out / "results.csv").header, columns(2))
        saved = json.loads((out / "config.json").read_text())
        self.assertEqual(saved["schema_version"], 3)


class TestNoCredentials(BotorchTestCase):
    def test_addresses_and_argv_are_recorded_without_user_or_password(self):
        self.assertEqual(redact("tls://me:secret@h:8786"), "tls://***@h:8786")
        self.assertEqual(redact("tcp://10.0.0.5:8786"), "tcp://10.0.0.5:8786")
        argv = ["compare", "--scheduler", "tcp://me:secret@h:1"]
        self.assertNotIn("secret", json.dumps(run_metadata(argv)))


class TestCli(FaultEnv):
    def test_raising_objective_names_the_failure_and_the_resume_command(self):
        self.env(FAULTY_RAISE_AT=6)
        out = self.tmp / "out"
        argv = ["run", "--problem", PROBLEM, "--method", "sobol", "--budget", "9",
                "--n-init", "4", "--output", str(out)]  # fmt: skip
        code, stdout, err = _main(argv)
        self.assertEqual(code, 1, err)
        line = err.strip().splitlines()[-1]
        self.assertIn("evaluation 7 of sobol seed 0 failed at x = [", line)
        self.assertIn("RuntimeError: planted failure", line)
        self.assertIn(f"continue with: {resume_command(argv)}", line)
        self.assertTrue(resume_command(argv).endswith("--resume"))
        self.assertEqual(len(read_results(out / "results.csv").rows), 7)
        del os.environ["FAULTY_RAISE_AT"]
        code, stdout, err = _main([*argv, "--resume"])
        self.assertEqual(code, 0, err)
        rows = read_results(out / "results.csv").rows
        self.assertEqual(len(rows), 9)
        self.assertIn("(1 failed)", stdout)
        self.assertEqual(len(set(self.evaluated())), len(self.evaluated()))
        code, stdout, err = _main(["summary", str(out)])
        self.assertIn("| 1 in 1 of 1 runs |", stdout)

    def test_eval_timeout_flag_reaches_the_loop(self):
        # --eval-timeout, through the command line to the evaluations: the hung
        # evaluation (the 6th) is a failed row, and the run goes on to its budget.
        self.env(FAULTY_HANG_AT=5)
        out = self.tmp / "out"
        argv = ["run", "--problem", PROBLEM, "--method", "sobol", "--budget", "8",
                "--n-init", "4", "--eval-timeout", "1.5",
                "--output", str(out)]  # fmt: skip
        with failsafe(HANG_FAILSAFE_S, "botorch-ext run with an hour-long evaluation"):
            code, stdout, err = _main(argv)
        self.assertEqual(code, 0, err)
        self.assertIn("(1 failed)", stdout)
        rows = read_results(out / "results.csv").rows
        self.assertEqual(len(rows), 8)
        (failed,) = [r for r in rows if r["status"] == "failed"]
        self.assertEqual(failed["n_evals"], 6)
        self.assertIn("timed out after 1.5 s", failed["error"])
        config = json.loads((out / "config.json").read_text())
        self.assertEqual(config["eval_timeout"], 1.5)

    def test_a_failed_row_keeps_its_point(self):
        # The written row of a failed evaluation holds the point that failed: its
        # x columns, read back from results.csv, evaluate to NaN again.
        self.env(FAULTY_NAN=1)
        out = self.tmp / "out"
        argv = ["run", "--problem", PROBLEM, "--method", "sobol", "--budget", "8",
                "--n-init", "4", "--output", str(out)]  # fmt: skip
        code, _, err = _main(argv)
        self.assertEqual(code, 0, err)
        with open(out / "results.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertTrue(failed)
        problem = get_problem(PROBLEM)
        os.environ.pop("FAULTY_LOG")
        for row in failed:
            point = [float(row[f"x{i}"]) for i in range(2)]
            self.assertTrue(all(0 <= u <= 1 for u in point), point)
            self.assertGreater(point[0], 0.5)  # the NaN region
            value = problem(torch.tensor([point], dtype=torch.double))
            self.assertTrue(torch.isnan(value).all(), (point, value))

    def test_library_errors_become_flags(self):
        self.assertEqual(
            flag_message("n_init must be >= 1; use options.outcome_transform='log'"),
            "--n-init must be >= 1; use --outcome-transform log",
        )
        code, _, err = _main(["run", "--problem", "branin", "--method", "qes",
                              "--budget", "5", "--n-init", "3",
                              "--outcome-transform", "log"])  # fmt: skip
        self.assertEqual(code, 2)
        self.assertIn("use --outcome-transform standardize", err)
        self.assertNotIn("options.", err)
        code, _, err = _main(["run", "--problem", "branin", "--method", "sobol",
                              "--budget", "5", "--n-init", "3",
                              "--on-error", "x"])  # fmt: skip
        self.assertIn("unknown --on-error 'x'", err)
        with self.assertRaisesRegex(ArgumentError, "^n_init must be"):
            _config(n_init=0).validate()


class TestRetriedAttempts(BotorchTestCase):
    r"""The Dask client's side of a retried run, with the scheduler's queues faked:
    a new attempt gets the rows its run has, and rows of a superseded attempt
    are dropped."""

    def test_superseded_attempt_rows_are_dropped(self):
        from botorch_ext.runner.backends import dask as backend
        from botorch_ext.runner.backends.streaming import GridSink

        replies = {}

        class FakeQueue:
            def __init__(self, name, client=None):
                self.name = name

            def put(self, value):
                replies[self.name] = value

        config = _config()
        rows = [{"method": "sobol", "seed": 0, "n_evals": n} for n in (1, 2, 3)]
        grid = backend.GridClient.__new__(backend.GridClient)
        grid.sink, notes = GridSink(rows[:1], log=lambda m: None), []
        grid.sink.note = notes.append
        grid.configs = {("sobol", 0): config}
        grid.names = backend.GridNames("rows", "reply", "stop")
        grid.client, grid.attempts = None, {}
        with mock.patch("distributed.Queue", FakeQueue):
            grid._take(("hello", "sobol", 0, "a"))
            self.assertEqual(replies["reply-a"], rows[:1])
            grid._take(("row", "a", rows[1]))
            grid._take(("hello", "sobol", 0, "b"))  # the worker was lost
            self.assertEqual(replies["reply-b"], rows[:2])
            self.assertIn("started again", notes[-1])
            grid._take(("row", "a", rows[2]))  # late, from the lost attempt
            self.assertIn("superseded", notes[-1])
            grid._take(("row", "b", rows[2]))
            grid._take(("row", "b", rows[2]))  # a duplicate key
            self.assertIn("dropped a second row", notes[-1])
        self.assertEqual(grid.sink.rows_of(config), rows)
