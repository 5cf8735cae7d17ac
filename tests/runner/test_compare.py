import csv
import itertools
import tempfile
from pathlib import Path
from unittest import mock

from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.backends import streaming
from botorch_ext.runner.backends.streaming import stream_until_done
from botorch_ext.runner.compare import format_summary, run_grid, summarize
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.plotting import plot_regret
from botorch_ext.runner.results import CsvWriter
from botorch_ext.runner.schema import columns


def _row(method, seed, n, value, best, seconds):
    return {
        "problem": "p", "dim": 1, "method": method, "seed": seed, "n_evals": n,
        "value": value, "best_value": best, "regret": best, "seconds": seconds,
        "init": "sobol", "outcome_transform": "standardize",
    }  # fmt: skip


class TestCompare(BotorchTestCase):
    def test_summarize_by_hand(self):
        rows = [
            # seed 0: initial design at t=1, then batches at t=3 and t=5
            _row("a", 0, 1, 5.0, 5.0, 1.0),
            _row("a", 0, 2, 4.0, 4.0, 3.0),
            _row("a", 0, 3, 2.0, 2.0, 5.0),
            # seed 1: initial design at t=0, one batch at t=4
            _row("a", 1, 1, 3.0, 3.0, 0.0),
            _row("a", 1, 2, 6.0, 3.0, 4.0),
        ]
        (s,) = summarize(rows)
        self.assertEqual(s["runs"], 2)
        self.assertEqual(s["best_mean"], 2.5)
        self.assertAlmostEqual(s["best_std"], 0.7071067811865476)
        self.assertEqual(s["seconds_per_iteration"], (2.0 + 4.0) / 2)
        self.assertIn("| a | 2 | 3 | 2.5 +/- 0.71 |", format_summary([s]))

    def test_grid_in_workers_matches_serial(self):
        base = RunConfig("branin", "random", budget=5, n_init=3, q=1)
        serial = run_grid(base, ["random", "sobol"], [0, 1], workers=1)
        parallel = run_grid(base, ["random", "sobol"], [0, 1], workers=2)
        key = lambda r: (r["method"], r["seed"], r["n_evals"])
        self.assertEqual(
            [r["value"] for r in sorted(serial, key=key)],
            [r["value"] for r in sorted(parallel, key=key)],
        )

    def test_csv_writer_and_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = run_grid(
                RunConfig("branin", "random", budget=4, n_init=2), ["random"], [0, 1]
            )
            writer = CsvWriter(Path(tmp) / "r.csv", columns(2))
            for row in rows:
                writer.write(row)
            writer.close()
            with open(Path(tmp) / "r.csv") as f:
                read = list(csv.DictReader(f))
            self.assertEqual(len(read), 8)
            self.assertEqual(tuple(read[0]), columns(2))
            plot_regret(rows, Path(tmp) / "p.png", title="t")
            self.assertEqual((Path(tmp) / "p.png").read_bytes()[:4], b"\x89PNG")

    def test_resumed_grid_matches_the_uncut_grid(self):
        base = RunConfig("branin", "random", budget=7, n_init=3, q=2)
        uncut = run_grid(base, ["random", "sobol"], [0, 1], workers=1)
        run = lambda m, s: [r for r in uncut if (r["method"], r["seed"]) == (m, s)]
        stored = run("random", 0) + run("sobol", 1)[:4]  # one finished, one cut
        key = lambda r: (r["method"], r["seed"], r["n_evals"])
        strip = lambda rs: [
            {k: v for k, v in r.items() if not k.endswith("seconds")}
            for r in sorted(rs, key=key)
        ]
        for workers in (1, 2):
            new, done = [], []
            rows = run_grid(base, ["random", "sobol"], [0, 1], workers=workers,
                            on_row=new.append, on_run_done=done.append,
                            stored_rows=stored)  # fmt: skip
            self.assertEqual(strip(rows), strip(uncut))
            self.assertEqual(len(new), 28 - len(stored))
            self.assertNotIn(("random", 0), {(r["method"], r["seed"]) for r in new})
            self.assertEqual(min(r["n_evals"] for r in new if r["method"] == "sobol"
                                 and r["seed"] == 1), 5)  # fmt: skip
            self.assertEqual(len(done), 4)

    def test_each_run_saves_its_method_state_in_workers_too(self):
        options = MethodOptions(num_restarts=2, raw_samples=16)
        base = RunConfig("branin", "turbo", budget=6, n_init=4, q=1, options=options)
        for workers in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                run_grid(base, ["turbo", "random"], [0, 1], workers=workers,
                         state_dir=tmp)  # fmt: skip
                names = sorted(p.name for p in (Path(tmp) / "state").iterdir())
                self.assertEqual(names, ["turbo-s0.pt", "turbo-s1.pt"], workers)

    def test_every_worker_row_arrives_before_its_run_is_done(self):
        events = []
        base = RunConfig("branin", "random", budget=6, n_init=3, q=1)
        run_grid(
            base, ["random", "sobol"], [0], workers=2,
            on_row=lambda r: events.append(("row", r["method"])),
            on_run_done=lambda c: events.append(("done", c.method)),
        )  # fmt: skip
        for method in ("random", "sobol"):
            mine = [e for e in events if e[1] == method]
            self.assertEqual(mine, [("row", method)] * 6 + [("done", method)])

    def test_threads_must_be_positive(self):
        base = RunConfig("branin", "random", budget=4, n_init=3)
        with self.assertRaisesRegex(ValueError, "threads must be >= 1, got 0"):
            run_grid(base, ["random"], [0], threads=0)


class TestStreamUntilDone(BotorchTestCase):
    r"""The wait-and-drain loop both backends share, with fake futures."""

    def test_every_drain_precedes_the_done_it_follows(self):
        events, queued = [], []
        finishing = iter([{"a"}, set(), {"b", "c"}])

        def wait_first(futures, timeout):
            done = next(finishing)
            queued.append(f"rows of {sorted(done)}")  # queued before the end
            return done, futures - done

        pending = {"a", "b", "c"}
        left = stream_until_done(
            pending,
            wait_first,
            drain=lambda: events.extend(queued) or queued.clear(),
            on_done=lambda future: events.append(f"done {future}"),
        )
        self.assertIs(left, pending)
        self.assertEqual(left, set())
        self.assertEqual(events[:2], ["rows of ['a']", "done a"])
        self.assertEqual(events[2:4], ["rows of []", "rows of ['b', 'c']"])
        self.assertEqual(sorted(events[4:]), ["done b", "done c"])

    def test_pending_holds_the_runs_still_going_after_an_error(self):
        def on_done(future):
            raise RuntimeError(f"run {future} failed")

        pending = {"a", "b"}
        with self.assertRaisesRegex(RuntimeError, "run a failed"):
            stream_until_done(
                pending, lambda fs, t: ({"a"}, fs - {"a"}), lambda: None, on_done
            )
        self.assertEqual(pending, {"b"})

    def test_timeout_gives_up_with_the_pending_futures(self):
        waits = []
        clock = itertools.count(0.0, 1.0)  # a fake clock: one second per reading
        with mock.patch.object(streaming.time, "monotonic", lambda: next(clock)):
            left = stream_until_done(
                {"a"},
                lambda fs, t: waits.append(t) or (set(), fs),
                drain=lambda: None,
                on_done=self.fail,
                timeout=3.0,
            )
        self.assertEqual(left, {"a"})
        # Read at 0 (deadline 3), then at 1, 2 (waiting) and 3 (given up).
        self.assertEqual(waits, [streaming.DRAIN_INTERVAL_S] * 2)
