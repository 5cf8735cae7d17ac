import itertools
import math
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.sgmcmc import run_and_score_arm as exported
from botorch_ext.sgmcmc import samplers
from botorch_ext.sgmcmc.arms import (
    ArmSettings,
    MambaArm,
    arm_settings,
    mamba_arms,
    run_and_score_arm,
    stein_metric,
)
from botorch_ext.sgmcmc.mamba import mamba, round_budgets
from botorch_ext.sgmcmc.samplers import (
    SamplerState,
    log_posterior_gradient,
    sghmc,
    sgld,
)
from botorch_ext.sgmcmc.stein import (
    finite_set_stein_discrepancy,
    kernel_stein_discrepancy,
)


def logistic_problem(n=500, d=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    theta = torch.randn(d, generator=gen, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(X @ theta), generator=gen)

    def log_lik(t, idx):
        Xb, yb = (X, y) if idx is None else (X[idx], y[idx])
        z = t @ Xb.T  # batch x n
        return (yb * z - torch.nn.functional.softplus(z)).sum(-1)

    grad = log_posterior_gradient(lambda t: -0.05 * t.pow(2).sum(-1), log_lik, n)
    # A rough MAP by gradient ascent, the paper's starting point.
    t = torch.zeros(d, dtype=torch.float64)
    for _ in range(300):
        t = t + 1e-3 * grad(t, None)
    return grad, t


class TestRoundBudgets(BotorchTestCase):
    def test_budgets(self):
        for M, eta, K in ((27, 3, 3), (26, 3, 2), (9, 3, 2), (8, 2, 3), (56, 3, 3)):
            r = round_budgets(1.0, M, eta)
            self.assertEqual(len(r), K)
            self.assertAlmostEqual(sum(r), 1.0)
            for a, b in zip(r, r[1:], strict=False):
                self.assertAlmostEqual(b / a, eta)
        # Fewer arms than eta: one round with the whole budget.
        self.assertEqual(round_budgets(2.0, 2, 3), [2.0])
        self.assertEqual(round_budgets(2.0, 1, 3), [2.0])

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "budget"):
            round_budgets(0.0, 3)
        with self.assertRaisesRegex(ValueError, "num_arms"):
            round_budgets(1.0, 0)
        with self.assertRaisesRegex(ValueError, "eta"):
            round_budgets(1.0, 4, eta=1)
        with self.assertRaisesRegex(ValueError, "eta"):
            round_budgets(1.0, 4, eta=2.5)


class TestMambaArms(BotorchTestCase):
    def test_grid(self):
        arms = mamba_arms([1e-3, 1e-4], [10, 100], [5, 10])
        self.assertEqual(len(arms), 8)
        self.assertIn(MambaArm(1e-4, 100, 5), arms)
        self.assertEqual(len(mamba_arms([1e-3], [10, 10])), 1)  # duplicates merged
        self.assertIsNone(mamba_arms([1e-3], [10])[0].num_leapfrog_steps)

    def test_empty_or_bad_grid(self):
        with self.assertRaisesRegex(ValueError, "empty"):
            mamba_arms([], [10])
        with self.assertRaisesRegex(ValueError, "empty"):
            mamba_arms([1e-3], [])
        with self.assertRaisesRegex(ValueError, "empty"):
            mamba_arms([1e-3], [10], [])
        with self.assertRaisesRegex(ValueError, "step_sizes"):
            mamba_arms([-1.0], [10])
        with self.assertRaisesRegex(ValueError, "batch_sizes"):
            mamba_arms([1e-3], [0])
        with self.assertRaisesRegex(ValueError, "num_leapfrog_steps"):
            mamba_arms([1e-3], [10], [0])
        # One number where a grid is asked for (it failed on len()).
        with self.assertRaisesRegex(
            ValueError, r"`step_sizes` must be a sequence.*\[0.001\]"
        ):
            mamba_arms(1e-3, [10])
        with self.assertRaisesRegex(
            ValueError, "`num_leapfrog_steps` must be a sequence"
        ):
            mamba_arms([1e-3], [10], 5)
        self.assertEqual(len(mamba_arms(torch.tensor([1e-3, 1e-4]), [10])), 2)


class TestMamba(BotorchTestCase):
    def test_eliminates_divergent_arms_and_picks_a_good_one(self):
        grad, t_map = logistic_problem()
        steps = [1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5]
        batches = [500, 50, 5]
        budget = 270  # iterations of the surviving arm
        res = mamba(
            grad,
            t_map,
            500,
            steps,
            batches,
            budget=budget,
            budget_unit="steps",
            thin=3,
            generator=torch.Generator().manual_seed(0),
            progress=False,
        )
        # 18 arms, eta = 3: floor(log_3 18) = 2 rounds, 18 -> 6 -> 1.
        self.assertEqual(len(res.history), 2)
        self.assertEqual(len(res.history[0].arms), 18)
        self.assertEqual(len(res.history[0].survivors), 6)
        self.assertEqual(len(res.history[1].arms), 6)
        self.assertEqual(res.history[1].survivors, [res.best_arm])
        r0, r1 = round_budgets(budget, 18)
        n0 = res.history[0].arms[0]["num_steps"]
        n1 = res.history[1].arms[0]["num_steps"]
        self.assertLessEqual(abs(n0 - r0), 1)
        self.assertLessEqual(abs(n1 - r1), 1)
        self.assertEqual(n0 + n1, budget)  # the winner ran exactly R iterations
        # The largest step size makes the chain jump around wildly (the logistic
        # gradient is bounded, so it stays finite): ranked below every survivor
        # and pruned in the first round.
        first = {a["arm"]: a for a in res.history[0].arms}
        worst_survivor = max(first[a]["metric"] for a in res.history[0].survivors)
        for n in batches:
            self.assertGreater(first[MambaArm(1.0, n)]["metric"], worst_survivor)
        self.assertNotIn(1.0, [a.step_size for a in res.history[0].survivors])
        self.assertTrue(math.isfinite(res.metric))
        # Thinning follows each chain: steps 3, 6, ... of the winner's chain.
        self.assertEqual(res.samples.shape[0], (n0 + n1) // 3 - n0 // 3)
        # Grid search with the same per-arm budget: every arm runs for `budget`
        # iterations from the start, KSD of its thinned samples. MAMBA's arm
        # is within a small factor of the grid's best.
        grid = {}
        for arm in first:
            out = sgld(
                grad,
                t_map.clone(),
                arm.step_size,
                arm.batch_size,
                500,
                num_steps=budget,
                thin=3,
                generator=torch.Generator().manual_seed(1),
            )
            if out.state.diverged or out.samples.shape[0] < 2:
                continue
            s = out.samples[-res.samples.shape[0] :]
            grid[arm] = float(kernel_stein_discrepancy(s, grad(s, None)))
        best = min(grid.values())
        self.assertLess(grid[res.best_arm], 1.5 * best)

    def test_diverged_arms_rank_last(self):
        # A Gaussian target: steps above 2 make SGLD blow up to inf.
        def grad(t, idx=None):
            return -t

        res = mamba(
            grad,
            torch.zeros(2, dtype=torch.float64),
            1,
            [1e3, 1e2, 0.5, 0.1],
            [1],
            budget=400,
            budget_unit="steps",
            progress=False,
            generator=torch.Generator().manual_seed(0),
            thin=1,
        )
        first = {a["arm"]: a for a in res.history[0].arms}
        for h in (1e3, 1e2):
            self.assertTrue(first[MambaArm(h, 1)]["diverged"])
            self.assertEqual(first[MambaArm(h, 1)]["metric"], math.inf)
        self.assertEqual(
            {a.step_size for a in res.history[0].survivors}, {0.5}
        )  # 4 arms, eta 3: one round, one survivor
        self.assertIn(res.best_arm.step_size, (0.5, 0.1))

    def test_sghmc_and_fssd(self):
        grad, t_map = logistic_problem(n=200, d=2)
        res = mamba(
            grad,
            t_map,
            200,
            [1e-2, 1e-3, 1e-4],
            [200, 20],
            budget=40,
            num_leapfrog_steps=[2, 4],
            sampler="sghmc",
            metric="fssd",
            budget_unit="steps",
            thin=1,
            progress=False,
            generator=torch.Generator().manual_seed(0),
        )
        self.assertEqual(len(res.history[0].arms), 12)
        self.assertIsNotNone(res.best_arm.num_leapfrog_steps)
        self.assertGreaterEqual(res.metric, 0.0)
        self.assertTrue(bool(torch.isfinite(res.samples).all()))

    def test_reproducible_in_steps_and_continues_chains(self):
        grad, t_map = logistic_problem(n=100, d=2)
        kwargs = dict(
            step_sizes=[1e-2, 1e-3, 1e-4],
            batch_sizes=[100],
            budget=40,
            budget_unit="steps",
            thin=1,
            progress=False,
        )
        a = mamba(
            grad, t_map, 100, generator=torch.Generator().manual_seed(3), **kwargs
        )
        b = mamba(
            grad, t_map, 100, generator=torch.Generator().manual_seed(3), **kwargs
        )
        self.assertEqual(a.best_arm, b.best_arm)
        self.assertAllClose(a.samples, b.samples)
        # One round (3 arms, eta 3): the winner ran exactly the budget.
        self.assertIsInstance(a.state, SamplerState)
        self.assertEqual(a.state.num_steps, 40)

    def test_short_rounds_chunked_scores_and_metric_kwargs(self):
        grad, t_map = logistic_problem(n=100, d=2)
        calls = []

        def counting_grad(t, idx=None):
            if t.dim() > 1:
                calls.append(t.shape[0])
            return grad(t, idx)

        kwargs = dict(
            step_sizes=[1e-3, 1e-4, 1e-5],
            batch_sizes=[100],
            budget=12,
            budget_unit="steps",
            progress=False,
            score_chunk_size=5,
        )
        # thin = 5: two samples in the 12 iterations of the round.
        res = mamba(counting_grad, t_map, 100, thin=5, **kwargs)
        self.assertEqual(res.samples.shape[0], 2)
        self.assertTrue(math.isfinite(res.metric))
        self.assertLessEqual(max(calls), 5)
        # thin = 50 > the 12 iterations: no arm has samples; all rank last.
        with self.assertWarnsRegex(RuntimeWarning, "No MAMBA arm"):
            res = mamba(counting_grad, t_map, 100, thin=50, **kwargs)
        self.assertEqual(res.metric, math.inf)
        self.assertEqual(res.samples.shape[0], 0)
        # The discrepancy's options reach it: the reported metric is the KSD
        # with c = 0.1 of the winner's samples.
        res = mamba(grad, t_map, 100, thin=1, metric_kwargs={"c": 0.1}, **kwargs)
        expected = kernel_stein_discrepancy(res.samples, grad(res.samples, None), c=0.1)
        self.assertAlmostEqual(res.metric, float(expected), places=10)
        with self.assertRaisesRegex(ValueError, "score_chunk_size"):
            mamba(grad, t_map, 100, **{**kwargs, "score_chunk_size": 0})

    def test_wall_clock_budget(self):
        # A fake clock, 1/64 s per reading: the time budget becomes deterministic.
        # A run reads the clock at its start, before each step and at its end, so
        # it takes ceil(r / tick) - 1 steps and reports ceil(r / tick) + 1 ticks.
        grad, t_map = logistic_problem(n=100, d=2)
        tick = 1 / 64
        readings = itertools.count()
        with mock.patch.object(
            samplers.time, "perf_counter", lambda: next(readings) * tick
        ):
            res = mamba(
                grad,
                t_map,
                100,
                [1e-3, 1e-4, 1e-5],
                [100, 50, 10],
                budget=1.0,
                thin=1,
                progress=False,
            )
        # 9 arms, eta 3: rounds of 0.25 and 0.75 seconds.
        self.assertEqual([r.budget for r in res.history], [0.25, 0.75])
        for r in res.history:
            for a in r.arms:
                self.assertEqual(a["num_steps"], math.ceil(r.budget / tick) - 1)
                # Fake-clock ticks (exact: 1/64 is a binary fraction).
                self.assertEqual(a["seconds"] / tick, math.ceil(r.budget / tick) + 1)
        winner = [a for r in res.history for a in r.arms if a["arm"] == res.best_arm]
        self.assertEqual(len(winner), 2)
        # The winner ran for the budget R = 1 s, plus one tick per round.
        self.assertEqual(sum(a["seconds"] for a in winner) / tick, 1.0 / tick + 2)
        # Its chain continued across the rounds.
        self.assertEqual(res.state.num_steps, sum(a["num_steps"] for a in winner))

    def test_settings_object_equals_keywords(self):
        # ArmSettings groups the per-arm settings; keywords override its fields.
        grad, t_map = logistic_problem(n=100, d=2)
        grid = dict(step_sizes=[1e-2, 1e-3, 1e-4], batch_sizes=[100, 10], budget=30)
        settings = ArmSettings(sampler="sghmc", thin=2, budget_unit="steps")
        gen = lambda: torch.Generator().manual_seed(5)
        a = mamba(grad, t_map, 100, **grid, settings=settings, generator=gen(),
                  progress=False)  # fmt: skip
        b = mamba(grad, t_map, 100, **grid, sampler="sghmc", thin=2,
                  budget_unit="steps", generator=gen(), progress=False)  # fmt: skip
        c = mamba(grad, t_map, 100, **grid, settings=settings, thin=3,
                  generator=gen(), progress=False)  # fmt: skip
        self.assertEqual(a.best_arm, b.best_arm)
        self.assertIsNotNone(a.best_arm.num_leapfrog_steps)  # SGHMC arms
        self.assertAllClose(a.samples, b.samples, atol=0, rtol=0)
        self.assertEqual(a.metric, b.metric)
        # The override replaced the field: every third iterate is kept.
        n = c.history[-1].arms[0]["num_steps"]
        self.assertEqual(c.samples.shape[0], n // 3)
        self.assertEqual(settings.thin, 2)  # the base settings are untouched
        self.assertEqual(arm_settings(settings, thin=3).thin, 3)
        self.assertIs(arm_settings(settings), settings)
        self.assertEqual(arm_settings(), ArmSettings())
        with self.assertRaisesRegex(ValueError, "settings"):
            arm_settings({"thin": 2})
        with self.assertRaisesRegex(ValueError, "sampler"):
            ArmSettings(sampler="nuts")
        with self.assertRaises(TypeError):
            mamba(grad, t_map, 100, **grid, thinning=2)

    def test_bad_input(self):
        grad, t_map = logistic_problem(n=50, d=2)
        base = dict(
            step_sizes=[1e-3],
            batch_sizes=[10],
            budget=5,
            budget_unit="steps",
            progress=False,
        )
        cases = [
            ({"budget": 0.0}, "budget"),
            ({"budget": -1.0}, "budget"),
            ({"step_sizes": []}, "empty"),
            ({"batch_sizes": []}, "empty"),
            ({"sampler": "nuts"}, "sampler"),
            ({"metric": "mmd"}, "metric"),
            ({"budget_unit": "epochs"}, "budget_unit"),
            ({"num_leapfrog_steps": [5]}, "num_leapfrog_steps"),
            ({"eta": 1}, "eta"),
            ({"thin": 0}, "thin"),
        ]
        for change, msg in cases:
            kwargs = {**base, **change}
            with self.assertRaisesRegex(ValueError, msg):
                mamba(grad, t_map, 50, **kwargs)
        with self.assertRaisesRegex(ValueError, "theta0"):
            mamba(grad, torch.tensor([math.nan, 0.0]), 50, **base)


class TestRunAndScoreArm(BotorchTestCase):
    r"""The public "run and score one arm" step of MAMBA, against the samplers and
    the discrepancies called directly."""

    def setUp(self):
        super().setUp()
        self.grad, self.t_map = logistic_problem(n=200, d=2)

    def _gen(self):
        return torch.Generator().manual_seed(7)

    def test_sgld_arm_is_the_sampler_run_scored_on_evenly_spaced_samples(self):
        self.assertIs(exported, run_and_score_arm)
        arm = MambaArm(step_size=1e-3, batch_size=500)  # capped at N = 200
        scored = run_and_score_arm(self.grad, self.t_map, arm, 78, 200, thin=2,
                                   max_metric_samples=10, budget_unit="steps",
                                   generator=self._gen())  # fmt: skip
        direct = sgld(self.grad, self.t_map, 1e-3, 200, 200, num_steps=78, thin=2,
                      generator=self._gen())  # fmt: skip
        self.assertEqual(scored.run.num_steps, 78)
        self.assertAllClose(scored.run.samples, direct.samples, atol=0, rtol=0)
        # 39 samples -> 10, first and last kept, evenly spaced: every 38/9th.
        index = [0, 4, 8, 13, 17, 21, 25, 30, 34, 38]
        self.assertAllClose(scored.samples, direct.samples[index], atol=0, rtol=0)
        ksd = kernel_stein_discrepancy(
            direct.samples[index], self.grad(direct.samples[index], None)
        )
        self.assertEqual(scored.metric, float(ksd))
        # The metric's options reach the discrepancy.
        scored = run_and_score_arm(self.grad, self.t_map, arm, 78, 200, thin=2,
                                   max_metric_samples=10, budget_unit="steps",
                                   metric_kwargs={"c": 0.1},
                                   generator=self._gen())  # fmt: skip
        ksd = kernel_stein_discrepancy(
            scored.samples, self.grad(scored.samples, None), c=0.1
        )
        self.assertEqual(scored.metric, float(ksd))

    def test_sghmc_arm_and_fssd(self):
        arm = MambaArm(step_size=1e-4, batch_size=50, num_leapfrog_steps=3)
        scored = run_and_score_arm(self.grad, self.t_map, arm, 30, 200,
                                   sampler="sghmc", metric="fssd", friction=0.1,
                                   thin=1, budget_unit="steps",
                                   generator=self._gen())  # fmt: skip
        direct = sghmc(self.grad, self.t_map, 1e-4, 50, 200, num_leapfrog_steps=3,
                       friction=0.1, num_steps=30, generator=self._gen())  # fmt: skip
        self.assertAllClose(scored.run.samples, direct.samples, atol=0, rtol=0)
        fssd = finite_set_stein_discrepancy(
            direct.samples,
            self.grad(direct.samples, None),
            generator=torch.Generator().manual_seed(0),
        )
        self.assertEqual(scored.metric, float(fssd))

    def test_continues_a_chain_and_never_reruns_a_diverged_one(self):
        arm = MambaArm(step_size=1e-3, batch_size=200)
        state = SamplerState(theta=self.t_map.clone())
        gen = self._gen()
        for _ in range(2):
            run_and_score_arm(self.grad, state, arm, 10, 200, thin=1,
                              budget_unit="steps", generator=gen)  # fmt: skip
        self.assertEqual(state.num_steps, 20)
        # A Gaussian target and a step far above 2: the chain blows up.
        gauss = lambda t, idx=None: -t
        diverged = SamplerState(theta=torch.ones(2, dtype=torch.double))
        scored = run_and_score_arm(gauss, diverged, MambaArm(1e3, 1), 400, 1,
                                   thin=1, budget_unit="steps")  # fmt: skip
        self.assertTrue(scored.run.state.diverged)
        self.assertEqual(scored.metric, math.inf)
        again = run_and_score_arm(gauss, diverged, MambaArm(1e3, 1), 400, 1,
                                  thin=1, budget_unit="steps")  # fmt: skip
        self.assertEqual(again.run.num_steps, 0)
        self.assertEqual(again.run.samples.shape, torch.Size([0, 2]))
        self.assertEqual(again.metric, math.inf)

    def test_stein_metric_ranks_unusable_samples_last(self):
        samples = torch.randn(5, 2, generator=self._gen(), dtype=torch.double)
        score = lambda s: self.grad(s, None)
        value, used = stein_metric(samples, score)
        ksd = kernel_stein_discrepancy(samples, score(samples))
        self.assertEqual(value, float(ksd))
        self.assertIs(used, samples)  # no more than max_samples: all, as they are
        self.assertEqual(stein_metric(samples[:1], score)[0], math.inf)
        self.assertEqual(stein_metric(samples, score, diverged=True)[0], math.inf)
        nan_score = lambda s: torch.full_like(s, math.nan)
        self.assertEqual(stein_metric(samples, nan_score)[0], math.inf)

    def test_bad_input(self):
        arm, sghmc_arm = MambaArm(1e-3, 10), MambaArm(1e-3, 10, 5)
        cases = [
            ({"sampler": "nuts"}, "sampler"),
            ({"metric": "mmd"}, "metric"),
            ({"budget_unit": "epochs"}, "budget_unit"),
            ({"budget": 0.0}, "budget"),
            ({"num_data": 0}, "num_data"),
            ({"max_metric_samples": 0}, "max_samples"),
            ({"score_chunk_size": 0}, "score_chunk_size"),
            ({"sampler": "sghmc"}, "num_leapfrog_steps"),
            ({"arm": sghmc_arm}, "num_leapfrog_steps"),
        ]
        for change, msg in cases:
            kwargs = {"arm": arm, "budget": 5, "num_data": 50, "budget_unit": "steps",
                      **change}  # fmt: skip
            with self.assertRaisesRegex(ValueError, msg):
                run_and_score_arm(self.grad, self.t_map, **kwargs)
        with self.assertRaisesRegex(ValueError, "metric"):
            stein_metric(self.t_map.unsqueeze(0), lambda s: s, metric="mmd")


class TestMovedArmNames(BotorchTestCase):
    def test_arm_names_from_mamba_warn_and_resolve(self):
        import importlib

        import botorch_ext.sgmcmc.arms as arms

        # The package's `mamba` is the function: take the module by name.
        mamba_module = importlib.import_module("botorch_ext.sgmcmc.mamba")

        for name in ("MambaArm", "stein_metric", "run_and_score_arm"):
            with self.assertWarnsRegex(DeprecationWarning, "sgmcmc.arms"):
                self.assertIs(getattr(mamba_module, name), getattr(arms, name))
        with self.assertRaises(AttributeError):
            _ = mamba_module.no_such_name
