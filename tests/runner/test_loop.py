import dataclasses
import pickle
import tempfile
from pathlib import Path
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner import methods
from botorch_ext.runner import turbo as turbo_module
from botorch_ext.runner.checkpoint import state_path
from botorch_ext.runner.loop import RunConfig, initial_design, run_bo
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import get_problem
from botorch_ext.runner.results import CsvWriter, read_results
from botorch_ext.runner.schema import columns

FAST = MethodOptions(num_restarts=2, raw_samples=16)


class TestLoop(BotorchTestCase):
    def test_rows_and_budget(self):
        seen = []
        config = RunConfig("branin", "random", budget=11, n_init=4, q=3, seed=1)
        rows = run_bo(config, on_row=seen.append)
        self.assertEqual(len(rows), 11)  # the last batch is cut to fit the budget
        self.assertEqual(rows, seen)
        self.assertEqual([r["n_evals"] for r in rows], list(range(1, 12)))
        for r in rows:
            self.assertEqual(tuple(r), columns(2))
            self.assertGreaterEqual(r["regret"], 0.0)
        best = [r["best_value"] for r in rows]
        self.assertEqual(
            best, [min(r["value"] for r in rows[: i + 1]) for i in range(11)]
        )
        self.assertAlmostEqual(rows[-1]["regret"], best[-1] - 0.397887, places=6)

    def test_model_diagnostics_columns(self):
        config = RunConfig("branin", "qlogei", budget=7, n_init=5, q=1, options=FAST)
        rows = run_bo(config)
        for row in rows[:5]:  # initial design: no model
            self.assertEqual(row["model_noise"], "")
        for row in rows[5:]:
            self.assertGreater(row["model_noise"], 0.0)
            self.assertEqual(len(row["model_lengthscales"].split(";")), 2)
            self.assertEqual(row["model_elbo"], "")  # exact GP: no ELBO
            self.assertEqual(row["model_angular_weights"], "")  # not BOCK
        config = RunConfig(
            "branin", "bock", budget=7, n_init=5, q=1, init="center", options=FAST
        )
        for row in run_bo(config)[5:]:
            weights = [float(v) for v in row["model_angular_weights"].split(";")]
            self.assertEqual(len(weights), 4)
            self.assertAlmostEqual(sum(weights), 1.0, delta=1e-3)
            self.assertGreaterEqual(weights[1], 0.05 - 1e-3)  # the runner's floor
            alpha, beta = (float(v) for v in row["model_warp"].split(";"))
            self.assertTrue(0.5 <= alpha <= 1.0 and 1.0 <= beta <= 2.0)

    def test_reproducible_from_seed(self):
        for method in ("random", "sobol", "qucb"):
            config = RunConfig(
                "branin", method, budget=8, n_init=5, q=1, seed=3, options=FAST
            )
            a = [r["value"] for r in run_bo(config)]
            b = [r["value"] for r in run_bo(config)]
            self.assertEqual(a, b)

    def test_initial_designs(self):
        X = initial_design(3, 5, seed=0, init="center")
        self.assertTrue(torch.equal(X[0], torch.full((3,), 0.5, dtype=X.dtype)))
        sobol = initial_design(3, 5, seed=0, init="sobol")
        self.assertTrue(torch.equal(X[1:], sobol[:4]))
        U = initial_design(3, 50, seed=1, init="uniform")
        self.assertEqual(U.shape, torch.Size([50, 3]))
        self.assertTrue(((U >= 0) & (U <= 1)).all())
        self.assertTrue(torch.equal(U, initial_design(3, 50, seed=1, init="uniform")))
        self.assertFalse(torch.equal(U, initial_design(3, 50, seed=2, init="uniform")))
        config = RunConfig(
            "rosenbrock", "random", budget=3, dim=4, n_init=3, init="center"
        )
        self.assertAlmostEqual(run_bo(config)[0]["value"], 8608.36, places=2)

    def test_sobol_method_continues_the_initial_sequence(self):
        rows = run_bo(RunConfig("branin", "sobol", budget=10, n_init=4, q=2, seed=2))
        X = initial_design(2, 10, seed=2, init="sobol")
        expected = get_problem("branin")(X).tolist()
        self.assertAllClose(
            torch.tensor([r["value"] for r in rows]), torch.tensor(expected)
        )

    def test_validation(self):
        bad = {
            "unknown problem": RunConfig("nope", "random", budget=5),
            "unknown method": RunConfig("branin", "nope", budget=5),
            "q must be": RunConfig("branin", "random", budget=5, n_init=2, q=0),
            "at least the initial design": RunConfig("branin", "random", budget=5),
            "unknown init": RunConfig("branin", "random", budget=5, n_init=2, init="x"),
            "unknown outcome transform 'x'; choose from standardize": RunConfig(
                "branin",
                "random",
                budget=5,
                n_init=2,
                options=MethodOptions(outcome_transform="x"),
            ),  # fmt: skip
            "needs a positive objective": RunConfig(
                "hartmann6",
                "random",
                budget=5,
                n_init=2,
                options=MethodOptions(outcome_transform="log"),
            ),  # fmt: skip
            "Gaussian posterior": RunConfig(
                "branin",
                "qes",
                budget=5,
                n_init=2,
                options=MethodOptions(outcome_transform="bilog"),
            ),  # fmt: skip
            "method 'qjes' needs a Gaussian posterior": RunConfig(
                "branin",
                "qjes",
                budget=5,
                n_init=2,
                options=MethodOptions(outcome_transform="bilog"),
            ),  # fmt: skip
            "'gibbon' builds its batch point by point.*bock": RunConfig(
                "branin",
                "gibbon",
                budget=5,
                n_init=2,
                options=MethodOptions(initial_conditions="bock"),
            ),  # fmt: skip
            "options.num_inducing_points must be >= 1, got 0": RunConfig(
                "branin",
                "elbo-svgp",
                budget=5,
                n_init=2,
                options=MethodOptions(num_inducing_points=0),
            ),  # fmt: skip
            "unknown BoTorch test function 'Nope'": RunConfig(
                "botorch:Nope", "random", budget=5, n_init=2
            ),
        }
        for message, config in bad.items():
            with self.assertRaisesRegex(ValueError, message):
                run_bo(config)


def _without_times(rows):
    return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in rows]


def _through_csv(rows, dim):
    # Stored rows come back from results.csv, as on a real resume.
    with tempfile.TemporaryDirectory() as tmp:
        writer = CsvWriter(Path(tmp) / "results.csv", columns(dim))
        for row in rows:
            writer.write(row)
        writer.close()
        return read_results(Path(tmp) / "results.csv").rows


class TestRowContents(BotorchTestCase):
    def test_point_iteration_and_batch_position(self):
        config = RunConfig("branin", "qlogei", budget=9, n_init=4, q=2, options=FAST)
        rows = run_bo(config)
        self.assertEqual([r["iteration"] for r in rows], [0] * 4 + [1, 1, 2, 2, 3])
        self.assertEqual(
            [r["batch_position"] for r in rows], [0, 1, 2, 3, 0, 1, 0, 1, 0]
        )
        X = torch.tensor([[r["x0"], r["x1"]] for r in rows], dtype=torch.double)
        self.assertTrue(((X >= 0) & (X <= 1)).all())
        # The point is the one evaluated: re-scoring it gives the stored value.
        values = get_problem("branin")(X)
        self.assertEqual(values.tolist(), [r["value"] for r in rows])
        self.assertTrue(torch.equal(X[:4], initial_design(2, 4, 0, "sobol")))

    def test_timings_split_fitting_from_acquisition(self):
        config = RunConfig("branin", "qlogei", budget=6, n_init=4, q=1, options=FAST)
        rows = run_bo(config)
        for row in rows[:4]:
            self.assertEqual((row["fit_seconds"], row["acq_seconds"]), (0.0, 0.0))
            self.assertGreater(row["eval_seconds"], 0.0)
        for row in rows[4:]:
            self.assertGreater(row["fit_seconds"], 0.0)
            self.assertGreater(row["acq_seconds"], 0.0)
        self.assertGreaterEqual(
            rows[-1]["seconds"], rows[-1]["fit_seconds"] + rows[-1]["acq_seconds"]
        )
        # Model-free methods: the whole proposal is acquisition time.
        rows = run_bo(RunConfig("branin", "sobol", budget=6, n_init=4))
        self.assertEqual({r["fit_seconds"] for r in rows}, {0.0})


class TestResume(BotorchTestCase):
    def test_resumed_run_matches_the_uncut_run(self):
        # Cuts inside the initial design, at a batch boundary and inside a batch.
        for method in ("random", "sobol", "qlogei", "turbo"):
            config = RunConfig("branin", method, budget=9, n_init=4, q=2, seed=1,
                               options=FAST)  # fmt: skip
            uncut = run_bo(config)
            for cut in (2, 6, 7):
                new = []
                stored = _through_csv(uncut[:cut], 2)
                resumed = run_bo(config, on_row=new.append, stored_rows=stored)
                self.assertEqual(
                    _without_times(resumed), _without_times(uncut), (method, cut)
                )
                self.assertEqual(resumed[:cut], stored)  # stored rows kept as is
                self.assertEqual(_without_times(new), _without_times(uncut[cut:]))

    def test_nothing_stored_is_evaluated_again(self):
        config = RunConfig("branin", "sobol", budget=9, n_init=4, q=2, seed=1)
        uncut = run_bo(config)
        problem = get_problem("branin")
        calls = []

        def counting(U):
            calls.append(U.shape[0])
            return problem.function(U)

        counted = dataclasses.replace(problem, function=counting)
        with mock.patch("botorch_ext.runner.loop.get_problem", return_value=counted):
            run_bo(config, stored_rows=_through_csv(uncut[:7], 2))
        self.assertEqual(calls, [1, 1])  # the rest of the cut batch, the last one

    def test_a_finished_run_is_returned_without_any_call(self):
        config = RunConfig("branin", "turbo", budget=6, n_init=4, options=FAST)
        rows = run_bo(config)
        with mock.patch.object(methods.METHODS["turbo"], "new_run") as new_run:
            self.assertEqual(run_bo(config, stored_rows=rows), rows)
        new_run.return_value.propose.assert_not_called()

    def test_seconds_continue_from_the_stored_rows(self):
        config = RunConfig("branin", "random", budget=6, n_init=4, q=1)
        stored = [dict(r, seconds=100.0) for r in run_bo(config)[:5]]
        rows = run_bo(config, stored_rows=stored)
        self.assertGreaterEqual(rows[-1]["seconds"], 100.0)

    def test_bad_stored_rows(self):
        config = RunConfig("branin", "random", budget=6, n_init=4, q=1)
        rows = run_bo(config)
        with self.assertRaisesRegex(ValueError, r"evaluations 1..n.*\[1, 3\]"):
            run_bo(config, stored_rows=[rows[0], rows[2]])
        old = [{k: v for k, v in r.items() if k != "x1"} for r in rows[:2]]
        with self.assertRaisesRegex(ValueError, "schema version 2"):
            run_bo(config, stored_rows=old)

    def test_stored_points_that_differ_from_the_replay_warn(self):
        config = RunConfig("branin", "sobol", budget=7, n_init=4, q=2)
        stored = run_bo(config)[:5]
        stored[4] = dict(stored[4], x0=0.123)
        with self.assertWarnsRegex(RuntimeWarning, "differ from the stored points"):
            rows = run_bo(config, stored_rows=stored)
        self.assertEqual(rows[4]["x0"], 0.123)  # the stored point is the data

    def test_should_stop_before_a_proposal_or_an_evaluation(self):
        config = RunConfig("branin", "random", budget=9, n_init=3, q=2, seed=2)
        uncut = run_bo(config)
        random = methods.METHODS["random"]
        # should_stop is asked before each proposal and each evaluation: the
        # iteration-0 pair, then (proposal, evaluation) per batch. True on the
        # k-th call stops there, with the rows of the uncut run so far.
        for k, n_rows, proposals in ((1, 0, 0), (2, 0, 0), (3, 3, 0), (4, 3, 1),
                                     (5, 5, 1), (6, 5, 2)):  # fmt: skip
            calls = []

            def stop(calls=calls, k=k):
                calls.append(None)
                return len(calls) >= k

            with mock.patch.object(random, "propose", wraps=random.propose) as propose:
                seen = []
                rows = run_bo(config, on_row=seen.append, should_stop=stop)
                self.assertEqual(propose.call_count, proposals, k)
            self.assertEqual(_without_times(rows), _without_times(uncut[:n_rows]), k)
            self.assertEqual(seen, rows)
            self.assertEqual(len(calls), k)  # nothing asked after the stop
        # A stopped run is continued by resuming from its rows.
        never = run_bo(config, should_stop=lambda: False)
        self.assertEqual(_without_times(never), _without_times(uncut))
        cut = run_bo(config, should_stop=iter([False] * 5 + [True]).__next__)
        resumed = run_bo(config, stored_rows=_through_csv(cut, 2))
        self.assertEqual(_without_times(resumed), _without_times(uncut))

    def test_stateful_svgp_run_is_rebuilt_by_replay(self):
        # elbo-svgp carries its SVGP from step to step; resuming replays the
        # stored steps to rebuild it, so the rows after the cut are the uncut ones.
        options = MethodOptions(num_restarts=2, raw_samples=16, num_inducing_points=8)
        config = RunConfig("branin", "elbo-svgp", budget=7, n_init=5, seed=1,
                           options=options)  # fmt: skip
        uncut = run_bo(config)
        resumed = run_bo(config, stored_rows=_through_csv(uncut[:6], 2))
        self.assertEqual(_without_times(resumed), _without_times(uncut))
        # The same from its saved state: the SVGP the cut run carried, unpickled.
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "svgp.pt"
            seen = []
            run_bo(config, on_row=seen.append, should_stop=lambda: len(seen) >= 6,
                   state_path=path)  # fmt: skip
            with mock.patch("botorch_ext.runner.svgp.EULBOModel") as new_model:
                resumed = run_bo(config, stored_rows=_through_csv(seen, 2),
                                 state_path=path)  # fmt: skip
            new_model.assert_not_called()  # carried over, not built again
        self.assertEqual(_without_times(resumed), _without_times(uncut))


class TestSavedMethodState(BotorchTestCase):
    # TuRBO carries its trust region between iterations; each call of a run fits
    # one GP, so counting the fits counts the method's calls.
    config = RunConfig(
        "branin", "turbo", budget=12, n_init=4, q=2, seed=2, options=FAST
    )

    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp())
        self.state = state_path(self.dir, "turbo", 2)
        self.uncut = run_bo(self.config)

    def _cut(self, n, path):
        # A run stopped after its first n rows, saving its state to ``path``.
        seen = []
        run_bo(
            self.config,
            on_row=seen.append,
            should_stop=lambda: len(seen) >= n,
            state_path=path,
        )
        return _through_csv(seen, 2)

    def _resume(self, stored, path):
        with mock.patch(
            "botorch_ext.runner.turbo.fit_model", wraps=turbo_module.fit_model
        ) as fit:
            rows = run_bo(self.config, stored_rows=stored, state_path=path)
        self.assertEqual(_without_times(rows), _without_times(self.uncut))
        return fit.call_count

    def test_a_resume_continues_from_the_saved_state_without_replay(self):
        stored = self._cut(8, self.state)
        self.assertTrue(self.state.exists())
        # Batches at 8 and 10 rows only; a replay would also redo those at 4 and 6.
        self.assertEqual(self._resume(stored, self.state), 2)
        self.assertEqual(self._resume(stored, None), 4)

    def test_a_state_of_another_run_or_of_other_rows_is_ignored(self):
        stored = self._cut(8, self.state)
        # Ahead of the rows: the rows of its last batch were not written.
        self.assertEqual(self._resume(stored[:6], self.state), 4)  # as without
        other = dataclasses.replace(self.config, seed=3)
        run_bo(other, state_path=self.state)  # another seed's state, same file
        self.assertEqual(self._resume(stored, self.state), 4)
        # Other settings (a longer budget), the same first rows.
        seen = []
        run_bo(dataclasses.replace(self.config, budget=14), on_row=seen.append,
               should_stop=lambda: len(seen) >= 8, state_path=self.state)  # fmt: skip
        self.assertEqual(self._resume(stored, self.state), 4)
        self._cut(8, self.state)
        changed = [dict(r) for r in stored]
        changed[5]["value"] += 1.0  # other values at the same points
        with mock.patch(
            "botorch_ext.runner.turbo.fit_model", wraps=turbo_module.fit_model
        ) as fit:
            run_bo(self.config, stored_rows=changed, state_path=self.state)
        self.assertEqual(fit.call_count, 4)

    def test_a_replayed_resume_saves_the_state_for_the_next_one(self):
        stored = self._cut(8, None)
        self.assertFalse(self.state.exists())
        # Stopped after the replay of the batches at 4 and 6, before the next
        # proposal (should_stop is asked once per stored or proposed batch).
        asked = iter([False, False, False, True])
        rows = run_bo(self.config, stored_rows=stored, should_stop=asked.__next__,
                      state_path=self.state)  # fmt: skip
        self.assertEqual(rows, stored)
        self.assertEqual(self._resume(stored, self.state), 2)

    def test_an_unreadable_state_warns_and_replays(self):
        stored = self._cut(8, self.state)
        self.state.write_bytes(b"not a pickle")
        with self.assertWarnsRegex(RuntimeWarning, "cannot read the method state"):
            self.assertEqual(self._resume(stored, self.state), 4)

    def test_a_state_that_cannot_be_saved_warns_once(self):
        with (
            mock.patch(
                "botorch_ext.runner.loop.save_state",
                side_effect=pickle.PicklingError("a lambda"),
            ) as save,
            self.assertWarnsRegex(RuntimeWarning, "cannot save the method"),
        ):
            rows = run_bo(self.config, state_path=self.state)
        self.assertEqual(save.call_count, 1)
        self.assertEqual(_without_times(rows), _without_times(self.uncut))

    def test_stateless_methods_save_nothing(self):
        config = dataclasses.replace(self.config, method="random")
        run_bo(config, state_path=self.state)
        self.assertFalse(self.state.parent.exists())
