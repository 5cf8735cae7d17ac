import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.loop import RunConfig, initial_design, run_bo
from botorch_ext.runner.methods import MethodOptions
from botorch_ext.runner.results import columns

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
        from botorch_ext.runner.problems import get_problem

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
        }
        for message, config in bad.items():
            with self.assertRaisesRegex(ValueError, message):
                run_bo(config)
