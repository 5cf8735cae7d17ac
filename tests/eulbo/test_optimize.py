import copy
import math
from unittest import mock

import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import (
    EULBO,
    EULBOModel,
    EULBOOptions,
    JointOptions,
    fit_elbo,
    optimize_eulbo,
    warm_start,
)
from botorch_ext.eulbo.joint import IMPROVEMENT_EPS, JointProblem, exceeds
from botorch_ext.eulbo.objective import eulbo
from tests.eulbo.helpers import FAST, settings
from tests.eulbo.helpers import make_data as _data


def _utility_nan_after(finite_calls: int):
    r"""Patch ``EULBO.expected_log_utility`` to turn NaN after some calls."""
    real = EULBO.expected_log_utility
    calls = {"n": 0}

    def poisoned(self, model, X, *args, **kwargs):
        calls["n"] += 1
        out = real(self, model, X, *args, **kwargs)
        return out if calls["n"] <= finite_calls else out * float("nan")

    return mock.patch.object(EULBO, "expected_log_utility", poisoned)


def _no_grad_call_changed(at: int, change):
    r"""``EULBO.expected_log_utility`` with its ``at``-th call without gradient
    (the joint phase's criteria) changed by ``change``; the counter is returned so
    that a test can reset it (``calls.update(n=0, at=...)``)."""
    real = EULBO.expected_log_utility
    calls = {"n": 0, "at": at}

    def utility(self_, model_, X, *args, **kwargs):
        out = real(self_, model_, X, *args, **kwargs)
        if not torch.is_grad_enabled():
            calls["n"] += 1
            if calls["n"] == calls["at"]:
                return change(out)
        return out

    return utility, calls


class TestOptimizeEULBO(BotorchTestCase):
    def test_optimize_eulbo(self):
        for dtype in (torch.float, torch.double):
            X, Y = _data(dtype=dtype)
            bounds = torch.tensor([[0.1, 0.2], [0.6, 0.9]], dtype=dtype)
            for q in (1, 3):
                model = EULBOModel(X, Y, num_inducing_points=10)
                fit_elbo(model, FAST)
                before = {k: v.clone() for k, v in model.state_dict().items()}
                cand, value = optimize_eulbo(model, bounds, q=q, seed=1, options=FAST)
                self.assertEqual(cand.shape, torch.Size([q, 2]))
                self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
                info = model.last_optimization
                # The returned state is never below the warm start's EULBO.
                self.assertGreaterEqual(value.item(), info["warm_start_value"] - 1e-6)
                if q == 1:
                    # The value is the EULBO of the returned candidates under the
                    # returned state (all n <= check_size points in the ELBO).
                    with torch.no_grad():
                        full = eulbo(model, cand).item()
                    self.assertAlmostEqual(value.item(), full, delta=1e-5 * abs(full))
                after = model.state_dict()
                changed = [k for k in before if not torch.equal(before[k], after[k])]
                self.assertTrue(any("variational" in k for k in changed), changed)
                self.assertFalse(info["diverged"])

    def test_optimize_eulbo_against_a_grid(self):
        # d = 1: the joint ascent, started from a warm start displaced by 0.1,
        # ends at the maximizer of EULBO(x, w) over x under the returned w (the
        # ELBO part does not depend on x), found by a dense grid.
        def displaced(model, bounds, q, *args, **kwargs):
            x0 = warm_start(model, bounds, q, *args, **kwargs)
            return (x0 + 0.1).clamp(bounds[0], bounds[1])

        options = settings(
            EULBOOptions(),
            max_steps=100,
            check_every=10,
            num_restarts=2,
            raw_samples=32,
            lr_x=0.01,
            elbo_optimizer="adam",
            joint_optimizer="adam",
        )
        for dtype in (torch.float, torch.double):
            tkw = {"dtype": dtype, "device": self.device}
            gen = torch.Generator().manual_seed(0)
            X = torch.rand(20, 1, generator=gen, dtype=torch.double)
            Y = torch.sin(6 * X) - (X - 0.3) ** 2  # one maximum, near x = 0.26
            model = EULBOModel(X.to(**tkw), Y.to(**tkw), 8)
            bounds = torch.tensor([[0.0], [1.0]], **tkw)
            with mock.patch("botorch_ext.eulbo.optimize.warm_start", displaced):
                cand, value = optimize_eulbo(
                    model, bounds, q=1, seed=0, options=options
                )
            start = model.last_optimization["warm_start_candidates"]
            grid = torch.linspace(0, 1, 201, **tkw).unsqueeze(-1)  # step 0.005
            with torch.no_grad():
                grid_eulbo = torch.stack([eulbo(model, x.unsqueeze(0)) for x in grid])
            best = grid_eulbo.argmax()
            # The start is far from the grid maximizer, so the x-steps did the work.
            self.assertGreater((start - grid[best]).abs().item(), 0.05)
            near = (cand - grid[best]).abs().item() <= 0.005
            tol = 1e-4 * abs(grid_eulbo[best].item())
            self.assertTrue(
                near or value.item() >= grid_eulbo[best].item() - tol,
                f"x = {cand.item()}, grid argmax {grid[best].item()}; EULBO "
                f"{value.item()} vs grid max {grid_eulbo[best].item()}",
            )
            self.assertLessEqual(value.item(), grid_eulbo[best].item() + tol)

    def test_eulbo_scales_and_alternation(self):
        X, Y = _data()
        n = X.shape[0]
        x = torch.tensor([[0.3, 0.4]], dtype=torch.double)
        model = EULBOModel(X, Y, num_inducing_points=10)
        fit_elbo(model, FAST)  # initializes the variational parameters (jittered)
        s, mean, w = EULBO("sum"), EULBO("mean"), EULBO(utility_weight=3.0)
        u = s.expected_log_utility(model, x.unsqueeze(0)).item()
        self.assertAlmostEqual(
            s(model, x).item() - u, n * (mean(model, x).item() - u), places=6
        )
        self.assertAlmostEqual(w(model, x).item() - s(model, x).item(), 2 * u, places=6)
        self.assertEqual(eulbo(model, x, objective=w), w(model, x))
        # Both alternation schemes run and return candidates in the box.
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        for alternation in ("step", "epoch"):
            model = EULBOModel(X, Y, num_inducing_points=10)
            options = FAST.replace(
                joint=JointOptions(optimizer="adam", alternation=alternation)
            )
            cand, value = optimize_eulbo(model, bounds, q=1, options=options)
            self.assertEqual(model.last_optimization["optimizer"], "adam")
            self.assertTrue(((cand >= 0) & (cand <= 1)).all())
            self.assertTrue(math.isfinite(value.item()))

    def test_divergence_falls_back_to_warm_start(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        # Finite for the warm start's evaluation, NaN once the joint
        # optimization has started.
        with _utility_nan_after(1):
            with self.assertWarnsRegex(OptimizationWarning, "non-finite"):
                cand, _ = optimize_eulbo(model, bounds, q=1, options=FAST)
        info = model.last_optimization
        self.assertTrue(info["diverged"])
        self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
        self.assertTrue(torch.isfinite(cand).all())
        for p in model.parameters():
            self.assertTrue(torch.isfinite(p).all())

    def test_same_calls_give_the_same_numbers(self):
        X, Y = _data()
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        a = EULBOModel(X, Y, num_inducing_points=10)
        b = EULBOModel(X, Y, num_inducing_points=10)
        b.load_state_dict(a.state_dict())
        cand_a, value_a = optimize_eulbo(a, bounds, q=1, seed=3, options=FAST)
        cand_b, value_b = optimize_eulbo(b, bounds, q=1, seed=3, options=FAST)
        self.assertTrue(torch.equal(cand_a, cand_b))
        self.assertTrue(torch.equal(value_a, value_b))
        x = torch.tensor([[0.3, 0.4]], dtype=torch.double)
        self.assertTrue(torch.equal(eulbo(a, x), eulbo(b, x)))

    def test_kg_warm_start_acquisition_is_the_eulbo_term(self):
        # The warm start optimizes exactly the model's soft-KG term.
        from botorch_ext.eulbo.utilities import (
            qLogSoftKGModelScale,
            soft_kg_log_utility,
        )

        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        fit_elbo(model, FAST)
        eps = torch.randn(4, 2, dtype=torch.double)
        best = EULBO(incumbent=float(Y.max()) + 0.5).best_f(model)
        acqf = qLogSoftKGModelScale(model, eps, best)
        pts = torch.rand(5, 6, 2, dtype=torch.double)
        with torch.no_grad():
            self.assertTrue(
                torch.equal(acqf(pts), soft_kg_log_utility(model, pts, eps, best))
            )
        # The old path is a deprecated alias.
        with self.assertWarns(DeprecationWarning):
            from botorch_ext.acquisition.soft_kg import qLogSoftKGModelScale as old
        self.assertIs(old, qLogSoftKGModelScale)
        self.assertEqual(acqf.get_augmented_q_batch_size(2), 6)

    def test_bad_input(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        good = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        with self.assertRaisesRegex(ValueError, "bounds"):
            optimize_eulbo(model, torch.zeros(3, 2).double())
        with self.assertRaisesRegex(ValueError, "bounds"):
            optimize_eulbo(model, good.flip(0))
        with self.assertRaisesRegex(ValueError, "`q`"):
            optimize_eulbo(model, good, q=0)
        with self.assertRaisesRegex(ValueError, "unknown utility 'pi'"):
            optimize_eulbo(model, good, utility="pi")

    def test_bad_model_seed_refit_and_utility_name_the_argument(self):
        from botorch.models import SingleTaskGP

        X, Y = _data(dtype=torch.double)
        X, Y = X.to(self.device), Y.to(self.device)
        model = EULBOModel(X, Y, num_inducing_points=10)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).to(X)
        exact = SingleTaskGP(X, Y)
        for call in (
            lambda: optimize_eulbo(exact, bounds),
            lambda: fit_elbo(exact),
            lambda: warm_start(exact, bounds, q=1, seed=0),
        ):
            with self.assertRaisesRegex(TypeError, "`model` must be an EULBOModel"):
                call()
        for seed in (None, -1, 0.5):
            with self.assertRaisesRegex(ValueError, "`seed` must be a non-negative"):
                optimize_eulbo(model, bounds, seed=seed)
            with self.assertRaisesRegex(ValueError, "`seed` must be a non-negative"):
                fit_elbo(model, seed=seed)
        # Settings passed by position land in `refit` (they used to be ignored).
        with self.assertRaisesRegex(TypeError, "`refit` must be a bool"):
            optimize_eulbo(model, bounds, 1, "ei", 0, EULBOOptions.table1())
        # warm_start's own checks: "KG" used to run EI, and "kg" without its
        # draws failed on an assert.
        with self.assertRaisesRegex(ValueError, "unknown utility 'KG'"):
            warm_start(model, bounds, q=1, seed=0, utility="KG")
        with self.assertRaisesRegex(ValueError, "`base_samples`.*'kg'"):
            warm_start(model, bounds, q=1, seed=0, utility="kg")
        with self.assertRaisesRegex(ValueError, "`q`"):
            warm_start(model, bounds, q=0, seed=0)
        with self.assertRaisesRegex(ValueError, "bounds"):
            warm_start(model, torch.zeros(2, 3).to(X), q=1, seed=0)
        # The objective and the posterior refuse non-finite candidates (they
        # gave NaN) and the objective an unknown utility (it ran EI).
        bad = torch.tensor([[float("nan"), 0.5]]).to(X)
        with self.assertRaisesRegex(ValueError, "`X` contains NaN"):
            model.posterior(bad)
        with self.assertRaisesRegex(ValueError, "`X` contains NaN"):
            EULBO()(model, bad)
        with self.assertRaisesRegex(ValueError, "`utility` must be 'ei' or 'kg'"):
            EULBO()(model, X[:1], utility="pi")

    def test_a_batch_larger_than_the_inducing_points(self):
        # q = 10 candidates and 8 inducing points (all 8 data points): the q x q
        # utility covariance of the joint phase used to be wrong in train mode
        # and failed to factorize.
        X, Y = _data(n=8, dtype=torch.double)
        X, Y = X.to(self.device), Y.to(self.device)
        model = EULBOModel(X, Y)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).to(X)
        cand, value = optimize_eulbo(model, bounds, q=10, options=FAST)
        self.assertEqual(cand.shape, (10, 2))
        self.assertTrue(bool(torch.isfinite(value)))
        self.assertGreaterEqual(
            value.item(), model.last_optimization["warm_start_value"] - 1e-9
        )

    def test_bad_settings_are_refused_before_anything_runs(self):
        # Also without the refit, which used to be the only place they were
        # checked: a misspelt joint optimizer ran the Adam phase.
        X, Y = _data(dtype=torch.double)
        X, Y = X.to(self.device), Y.to(self.device)
        model = EULBOModel(X, Y, num_inducing_points=10)
        state = copy.deepcopy(model.state_dict())
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).to(X)
        bogus = EULBOOptions(joint=JointOptions(optimizer="bogus"))
        for refit in (True, False):
            with self.subTest(refit=refit):
                with self.assertRaisesRegex(ValueError, "joint.optimizer.*'bogus'"):
                    optimize_eulbo(model, bounds, refit=refit, options=bogus)
                with self.assertRaisesRegex(TypeError, "`options` must be"):
                    optimize_eulbo(model, bounds, refit=refit, options="x")
                with self.assertRaisesRegex(TypeError, "`objective` must be"):
                    optimize_eulbo(model, bounds, refit=refit, objective="x")
        with self.assertRaisesRegex(ValueError, "joint.optimizer.*'bogus'"):
            warm_start(model, bounds, q=1, seed=0, options=bogus)
        with self.assertRaisesRegex(TypeError, "`objective` must be"):
            warm_start(model, bounds, q=1, seed=0, objective="x")
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, state[name]), name)


class TestOptimizeEULBOKG(BotorchTestCase):
    def test_optimize_eulbo_kg(self):
        X, Y = _data()
        options = settings(
            EULBOOptions(),
            max_steps=40,
            check_every=10,
            num_restarts=2,
            raw_samples=16,
            num_fantasies=6,
        )
        bounds = torch.tensor([[0.0, 0.1], [0.8, 1.0]], dtype=torch.double)
        for q in (1, 2):
            model = EULBOModel(X, Y, num_inducing_points=10)
            cand, value = optimize_eulbo(
                model, bounds, q=q, utility="kg", seed=2, options=options
            )
            self.assertEqual(cand.shape, torch.Size([q, 2]))
            self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
            info = model.last_optimization
            self.assertEqual(info["fantasy_points"].shape, torch.Size([6, 2]))
            self.assertGreaterEqual(value.item(), info["warm_start_value"] - 1e-6)


class TestJointPhaseOptions(BotorchTestCase):
    def _fitted(self, dtype, **options):
        X, Y = _data(dtype=dtype)
        opts = settings(FAST, **options)
        model = EULBOModel(X, Y, num_inducing_points=10)
        fit_elbo(model, opts, seed=0)
        # The joint phase must start from exactly this state (refit=False).
        return model, opts

    def test_joint_parameter_blocks(self):
        from botorch_ext.eulbo.options import joint_parameter_blocks

        self.assertEqual(
            joint_parameter_blocks("all"),
            ("variational", "inducing_points", "hyperparameters"),
        )
        self.assertEqual(
            joint_parameter_blocks(["hyperparameters", "variational"]),
            ("variational", "hyperparameters"),
        )
        for bad in ("noise", (), ("variational", "Z")):
            with self.assertRaisesRegex(ValueError, "`joint.parameters`"):
                EULBOOptions(joint=JointOptions(parameters=bad)).validate()
        with self.assertRaisesRegex(ValueError, "`joint.optimizer`.*'sgd'"):
            EULBOOptions(joint=JointOptions(optimizer="sgd")).validate()

    def test_only_the_selected_blocks_move(self):
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        blocks = {
            "variational": "_variational_distribution.",
            "inducing_points": "variational_strategy.inducing_points",
            "hyperparameters": None,
        }

        def block_of(name):
            for block, key in blocks.items():
                if key is not None and key in name:
                    return block
            return "hyperparameters"

        for optimizer in ("adam", "lbfgs"):
            for selected in ("variational", "inducing_points", "hyperparameters"):
                model, opts = self._fitted(
                    torch.double,
                    joint_parameters=selected,
                    joint_optimizer=optimizer,
                    lr_w=0.05,
                )
                before = {k: p.detach().clone() for k, p in model.named_parameters()}
                optimize_eulbo(
                    model,
                    bounds.to(model.train_X_full),
                    q=1,
                    seed=1,
                    refit=False,
                    options=opts,
                )
                self.assertFalse(model.last_optimization["diverged"])
                moved = {
                    block_of(k)
                    for k, p in model.named_parameters()
                    if not torch.equal(before[k], p.detach())
                }
                # Everything outside the selection keeps the ELBO fit's values.
                self.assertLessEqual(moved, {selected}, (optimizer, selected))

    def test_lbfgs_joint_phase_reaches_a_stationary_point(self):
        # Full-batch L-BFGS-B on the EULBO over x and q(u) (d = 1, m = 8): the
        # returned (x, w) improves on the warm start, the reported value is the
        # EULBO there, the gradient in q(u) vanishes, and x maximizes the
        # EULBO under the returned w on a dense grid.
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(20, 1, generator=gen, dtype=torch.double)
        Y = torch.sin(6 * X) - (X - 0.3) ** 2  # one maximum, near x = 0.26
        for dtype in (torch.float, torch.double):
            tkw = {"dtype": dtype, "device": self.device}
            opts = FAST.replace(
                joint=JointOptions(optimizer="lbfgs", parameters="variational")
            )
            model = EULBOModel(X.to(**tkw), Y.to(**tkw), 8)
            fit_elbo(model, opts, seed=0)
            # Not the unit interval, so that the map to the unit cube matters.
            bounds = torch.tensor([[0.05], [0.85]], **tkw)
            start = copy.deepcopy(model)
            cand, value = optimize_eulbo(
                model, bounds, q=1, seed=2, refit=False, options=opts
            )
            info = model.last_optimization
            self.assertEqual(info["optimizer"], "lbfgs")
            self.assertFalse(info["diverged"])
            self.assertGreater(value.item(), info["warm_start_value"])
            with torch.no_grad():
                full = eulbo(model, cand).item()
            self.assertAlmostEqual(value.item(), full, delta=1e-4 * abs(full))
            grid = torch.linspace(0.05, 0.85, 321, **tkw).unsqueeze(-1)
            with torch.no_grad():
                on_grid = torch.stack([eulbo(model, x.unsqueeze(0)) for x in grid])
            tol = 1e-5 * abs(full) if dtype == torch.double else 1e-3 * abs(full)
            self.assertGreaterEqual(full, on_grid.max().item() - tol)
            if dtype == torch.float:
                continue

            def grad_norm(m, x):
                # L-BFGS-B stops on a relative change of the EULBO, so the
                # check is relative to the gradient at the warm start.
                m.train()
                vd = m.model.variational_strategy._variational_distribution
                grads = torch.autograd.grad(eulbo(m, x), list(vd.parameters()))
                m.eval()
                return torch.cat([g.reshape(-1) for g in grads]).norm().item()

            before = grad_norm(start, info["warm_start_candidates"])
            self.assertLess(grad_norm(model, cand), 0.05 * before)

    def test_lbfgs_joint_phase_never_returns_a_worse_state(self):
        # Should the optimizer end below the warm start (it should not: L-BFGS-B
        # accepts only improving steps), the warm start is returned.
        model, opts = self._fitted(torch.double, joint_optimizer="lbfgs")
        start = copy.deepcopy(model.state_dict())
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()

        def worse(closure, parameters, **kwargs):
            with torch.no_grad():
                for name, t in parameters.items():
                    t.copy_(torch.rand_like(t) if name == "x" else t + 0.5)
            return mock.Mock(step=1)

        with mock.patch("botorch_ext.eulbo.joint.scipy_minimize", worse):
            cand, value = optimize_eulbo(
                model, bounds, q=1, seed=0, refit=False, options=opts
            )
        info = model.last_optimization
        self.assertEqual(value.item(), info["warm_start_value"])
        self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, start[k]), k)

    def test_joint_iteration_budget(self):
        from botorch_ext.eulbo.options import joint_iterations

        opts = EULBOOptions()
        # Pinned defaults: L-BFGS, 100 iterations up to 2,000 points.
        self.assertEqual(opts.joint.optimizer, "lbfgs")
        self.assertEqual(opts.joint.max_iter, 100)
        self.assertEqual(opts.lbfgs_max_n, 2000)
        self.assertEqual(joint_iterations(opts, 2000), 100)
        # Above lbfgs_max_n the budget shrinks as 1 / n: n * iterations is
        # bounded, never below the floor of 5.
        self.assertEqual(joint_iterations(opts, 10_000), 20)
        self.assertEqual(joint_iterations(opts, 4000), 50)
        self.assertEqual(joint_iterations(opts, 10**7), 5)
        for n in (2001, 3000, 7777, 10_000, 40_000):
            self.assertLessEqual(n * joint_iterations(opts, n), 2000 * 100)
        # The phase runs with that budget.
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        model, opts = self._fitted(torch.double, lbfgs_max_n=20, joint_max_iter=10)
        optimize_eulbo(model, bounds, q=1, seed=0, refit=False, options=opts)
        self.assertEqual(model.last_optimization["max_iter"], 5)
        self.assertLessEqual(model.last_optimization["steps"], 5)

    def test_lbfgs_joint_phase_kg_and_batch(self):
        bounds = torch.tensor([[0.0, 0.1], [0.8, 1.0]], dtype=torch.double)
        for q, utility in ((2, "ei"), (1, "kg")):
            model, opts = self._fitted(
                torch.double, joint_optimizer="lbfgs", num_fantasies=4
            )
            cand, value = optimize_eulbo(
                model, bounds, q=q, utility=utility, seed=4, refit=False, options=opts
            )
            info = model.last_optimization
            self.assertEqual(cand.shape, torch.Size([q, 2]))
            self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
            self.assertGreaterEqual(value.item(), info["warm_start_value"])
            if utility == "kg":
                pts = info["fantasy_points"]
                self.assertEqual(pts.shape, torch.Size([4, 2]))
                self.assertTrue(((pts >= bounds[0]) & (pts <= bounds[1])).all())

    def test_lbfgs_joint_phase_failure_restores_the_warm_start(self):
        from linear_operator.utils.errors import NanError

        # The warm start (its acquisition does not call this) and its first
        # evaluations are finite; L-BFGS then meets NaN, or a K_ZZ with NaNs
        # escapes the optimizer.
        for failure in ("nan", "nan-error"):
            model, opts = self._fitted(torch.double, joint_optimizer="lbfgs")
            start = copy.deepcopy(model.state_dict())
            bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
            if failure == "nan":
                patch = _utility_nan_after(3)
            else:
                patch = mock.patch(
                    "botorch_ext.eulbo.joint.scipy_minimize",
                    side_effect=NanError("cholesky_cpu: 36 of 36 elements are NaN"),
                )
            with patch:
                with self.assertWarnsRegex(OptimizationWarning, "L-BFGS joint phase"):
                    cand, _ = optimize_eulbo(
                        model, bounds, q=1, refit=False, options=opts
                    )
            info = model.last_optimization
            self.assertTrue(info["diverged"])
            self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
            for k, v in model.state_dict().items():
                self.assertTrue(torch.equal(v, start[k]), k)


class TestDefaultJointPhase(BotorchTestCase):
    r"""The default joint phase, from a converged ELBO fit, moves ``(x, w)`` and
    returns an EULBO above the warm start's, evaluated independently on a copy
    of the warm-start state with the same quadrature or base samples."""

    #: Default joint phase; the ELBO fit converges (L-BFGS, collapsed bound).
    OPTIONS = settings(EULBOOptions(), num_restarts=2, raw_samples=32, num_fantasies=4)

    def _converged(self, dtype, seed=0):
        X, Y = _data(dtype=dtype, seed=seed)
        return EULBOModel(X, Y, num_inducing_points=10)

    def _check_step(self, model, bounds, q, utility, seed, objective=None):
        objective = EULBO() if objective is None else objective
        fit_elbo(model, self.OPTIONS, objective, seed=seed)
        start = copy.deepcopy(model)
        # The warm start's w is this fit.
        cand, value = optimize_eulbo(
            model,
            bounds,
            q=q,
            utility=utility,
            seed=seed,
            refit=False,
            options=self.OPTIONS,
            objective=objective,
        )
        info = model.last_optimization
        self.assertEqual(info["optimizer"], "lbfgs")
        self.assertFalse(info["diverged"])
        x0 = info["warm_start_candidates"]
        x1 = cand if utility == "ei" else torch.cat([cand, info["fantasy_points"]])
        base = info["base_samples"]
        with torch.no_grad():
            warm = objective(start, x0, base, utility).item()
            new = objective(model, x1, base, utility).item()
        eps = torch.finfo(x0.dtype).eps
        tol = IMPROVEMENT_EPS * eps * max(abs(warm), 1.0)
        self.assertAlmostEqual(value.item(), new, delta=tol)
        # Never below the warm start, evaluated again in the model's precision.
        self.assertGreaterEqual(new, warm - tol)
        if info["rolled_back"]:
            # Only float32 may resolve no gain; then the warm start is returned.
            self.assertEqual(x0.dtype, torch.float)
            self.assertTrue(torch.equal(cand, x0[:q]))
            return cand
        # Higher than the warm start by more than the dtype resolves: from a
        # converged ELBO fit the utility term's gradient in w is not zero.
        self.assertGreater(new, warm)
        self.assertTrue(exceeds(value.item(), warm, x0.dtype))
        # w moved: the variational parameters differ from the warm start's.
        vd_new = model.model.variational_strategy._variational_distribution
        vd_old = start.model.variational_strategy._variational_distribution
        diff = max(
            (a - b).abs().max().item()
            for a, b in zip(vd_new.parameters(), vd_old.parameters(), strict=True)
        )
        self.assertGreater(diff, 0.0)
        self.assertGreater(info["w_moved"], 0.0)
        self.assertTrue(0.0 < info["utility_gradient_share"] <= 1.0)
        return cand

    def test_exceeds_is_stated_in_units_of_the_dtypes_eps(self):
        self.assertEqual(IMPROVEMENT_EPS, 16)
        for dtype in (torch.float, torch.double):
            eps = torch.finfo(dtype).eps
            for ref in (-5.46, 0.0, 1e-3, 250.0):
                tol = 16 * eps * max(abs(ref), 1.0)
                self.assertFalse(exceeds(ref, ref, dtype))
                self.assertFalse(exceeds(ref + 0.5 * tol, ref, dtype))
                self.assertTrue(exceeds(ref + 2 * tol, ref, dtype))
                self.assertFalse(exceeds(ref - tol, ref, dtype))
        # The issue's float32 case: 5e-8 above 5.46 is below float32's resolution.
        self.assertFalse(exceeds(5.46078025, 5.46078020, torch.float))
        self.assertTrue(exceeds(5.46078025, 5.46078020, torch.double))

    def _fake_gain_step(self, model, bounds, gain):
        # A fake L-BFGS moves w; the EULBO reported afterwards is the warm
        # start's plus `gain` tolerances.
        from botorch_ext.eulbo import joint

        real_eulbo, dtype = JointProblem.eulbo, bounds.dtype
        moved = {"done": False, "warm": None}

        def fake_minimize(closure, tensors, **kwargs):
            with torch.no_grad():
                tensors["w0"].add_(1e-3)
            moved["done"] = True
            return mock.Mock(step=1)

        def fake_eulbo(problem, X):
            out = real_eulbo(problem, X)
            if not moved["done"]:
                moved["warm"] = out.item()
                return out
            warm = moved["warm"]
            tol = IMPROVEMENT_EPS * torch.finfo(dtype).eps * max(abs(warm), 1)
            return torch.tensor(warm + gain * tol, dtype=torch.double)

        with (
            mock.patch.object(joint, "scipy_minimize", fake_minimize),
            mock.patch.object(JointProblem, "eulbo", fake_eulbo),
        ):
            return optimize_eulbo(model, bounds, q=1, refit=False, options=self.OPTIONS)

    def test_a_gain_below_the_dtypes_resolution_is_rolled_back(self):
        # Below one tolerance the warm-start state comes back unchanged; above
        # it the moved state is kept.
        for dtype in (torch.float, torch.double):
            bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=dtype)
            for gain, kept in ((0.5, False), (2.0, True)):
                model = self._converged(dtype)
                fit_elbo(model, self.OPTIONS, seed=0)
                start = copy.deepcopy(model.state_dict())
                cand, _ = self._fake_gain_step(model, bounds, gain)
                info = model.last_optimization
                self.assertEqual(info["rolled_back"], not kept)
                same = all(
                    torch.equal(v, start[k]) for k, v in model.state_dict().items()
                )
                self.assertEqual(same, not kept)
                if not kept:
                    self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))

    def test_default_joint_phase_improves_on_the_warm_start(self):
        for dtype in (torch.float, torch.double):
            bounds = torch.tensor([[0.0, 0.1], [0.9, 1.0]], dtype=dtype)
            for q, utility in ((1, "ei"), (2, "ei"), (1, "kg")):
                model = self._converged(dtype)
                self._check_step(model, bounds, q, utility, seed=3)

    def test_default_joint_phase_with_carry_over(self):
        # Two BO steps of Algorithm 1: the second starts from the carried w.
        dtype = torch.double
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=dtype)
        model = self._converged(dtype)
        cand = self._check_step(model, bounds, 1, "ei", seed=0)
        X = torch.cat([model.train_X_full, cand])
        Y = torch.sin(5 * X).sum(-1, keepdim=True) - ((X - 0.7) ** 2).sum(
            -1, keepdim=True
        )
        carried = model.carry_over(X, Y)
        self._check_step(carried, bounds, 1, "ei", seed=1)

    def test_paper_and_per_datum_scalings(self):
        # Both names run the same joint phase; the per-datum scale weights the
        # utility n times more, so w moves further for the same data.
        from botorch_ext.eulbo import ELBO_SCALES

        self.assertEqual(ELBO_SCALES, {"paper": "sum", "per-datum": "mean"})
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
        moved = {}
        for name, scale in ELBO_SCALES.items():
            X, Y = _data()
            model = EULBOModel(X, Y, 10)
            objective = EULBO(elbo_scale=name)
            self.assertEqual(objective.elbo_scale, scale)
            self._check_step(model, bounds, 1, "ei", seed=0, objective=objective)
            moved[name] = model.last_optimization["utility_gradient_share"]
        self.assertGreaterEqual(moved["per-datum"], moved["paper"])

    def test_the_former_authors_name_is_deprecated(self):
        # "authors" named the per-datum scale alone, not the authors' loop.
        with self.assertWarnsRegex(DeprecationWarning, "not the authors' loop"):
            objective = EULBO(elbo_scale="authors")
        self.assertEqual(objective.elbo_scale, "mean")


class TestAcquisitionSearchBudget(BotorchTestCase):
    r"""``warm_start.max_iter`` bounds ``optimize_acqf``'s L-BFGS-B per restart."""

    def _run_searches(self, max_iter):
        import botorch.generation.gen as gen

        from botorch_ext.runner.options import MethodOptions
        from botorch_ext.runner.svgp import SVGPMethod

        # BoTorch runs L-BFGS-B batched over the restarts or one SciPy call each.
        batched = mock.Mock(wraps=gen.fmin_l_bfgs_b_batched)
        single = mock.Mock(wraps=gen.minimize_with_timeout)
        X, Y = _data(n=12)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
        options = settings(FAST, max_iter=max_iter)
        model = EULBOModel(X, Y, num_inducing_points=6)
        fit_elbo(model, options, seed=0)
        with (
            mock.patch.object(gen, "fmin_l_bfgs_b_batched", batched),
            mock.patch.object(gen, "minimize_with_timeout", single),
        ):
            warm_start(model, bounds, 1, seed=0, options=options)
            # The runner's ELBO baseline searches qLogEI with the same budget.
            run = SVGPMethod(None, options=options).new_run()
            run.propose(X, Y, bounds, 1, 0, MethodOptions(num_restarts=2))
        limits = [c.kwargs["maxiter"] for c in batched.call_args_list]
        limits += [c.kwargs["options"]["maxiter"] for c in single.call_args_list]
        self.assertGreaterEqual(len(limits), 2)
        return limits

    def test_max_iter_reaches_every_lbfgs_search(self):
        self.assertEqual(set(self._run_searches(3)), {3})
        # The documented default is BoTorch's own limit.
        self.assertIsNone(EULBOOptions().warm_start.max_iter)
        self.assertEqual(set(self._run_searches(None)), {2000})

    def test_bad_max_iter(self):
        for bad in (0, -3, 2.5):
            with self.assertRaisesRegex(ValueError, "warm_start.max_iter"):
                settings(FAST, max_iter=bad).validate()


class TestAdamJointPhase(BotorchTestCase):
    r"""Algorithm 1's alternating minibatch Adam joint phase
    (``JointOptions(optimizer="adam")``): its rounds, its stopping rule, and its
    fallback when the EULBO turns non-finite in any of its parts."""

    #: Six-point minibatches of the 40 training points: 7 w-steps an epoch (the
    #: last of 4 points).
    BATCH = 6

    def _fitted(self, dtype, **flat):
        X, Y = _data(dtype=dtype)
        model = EULBOModel(X, Y, num_inducing_points=10)
        options = settings(FAST, joint_optimizer="adam", batch_size=self.BATCH, **flat)
        fit_elbo(model, options, seed=0)
        bounds = torch.tensor([[0.0, 0.1], [0.9, 1.0]], dtype=dtype)
        return model, options, bounds

    def test_table1_rounds_are_epochs_on_the_full_eulbo(self):
        # Under the epoch rule (EULBOOptions.table1) a round is one epoch of
        # ceil(n / batch_size) w-steps and the criterion is the full-data EULBO.
        for dtype in (torch.float, torch.double):
            n = 40
            per_epoch = math.ceil(n / self.BATCH)
            # Patience above the budget: every epoch runs.
            model, options, bounds = self._fitted(
                dtype, convergence="epochs", max_epochs=2, patience=5, tol=0.0
            )
            start = copy.deepcopy(model)
            cand, value = optimize_eulbo(
                model, bounds, q=1, seed=2, refit=False, options=options
            )
            info = model.last_optimization
            self.assertEqual(info["optimizer"], "adam")
            self.assertFalse(info["diverged"])
            self.assertEqual(info["steps"], 2 * per_epoch)
            self.assertEqual(len(info["trace"]), 3)  # the warm start and 2 epochs
            base, x0 = info["base_samples"], info["warm_start_candidates"]
            with torch.no_grad():
                warm = EULBO()(start, x0, base, "ei").item()
                new = EULBO()(model, cand, base, "ei").item()
            tol = IMPROVEMENT_EPS * torch.finfo(dtype).eps * max(abs(warm), 1.0)
            # The trace starts at the warm start's full EULBO, the returned value
            # is the returned state's at the returned candidates, and the best
            # state seen (the warm start included) is returned.
            self.assertAlmostEqual(info["trace"][0], warm, delta=tol)
            self.assertAlmostEqual(value.item(), new, delta=tol)
            self.assertAlmostEqual(max(info["trace"]), new, delta=tol)
            self.assertGreaterEqual(new, warm - tol)
            # A tolerance no epoch can beat stops after the first epoch.
            model, options, bounds = self._fitted(
                dtype, convergence="epochs", max_epochs=5, patience=1, tol=1e9
            )
            optimize_eulbo(model, bounds, q=1, seed=2, refit=False, options=options)
            self.assertEqual(model.last_optimization["steps"], per_epoch)

    def test_check_set_rounds_stop_by_the_rule(self):
        # Under the step rule a round is check_every w-steps; a tolerance no
        # round can beat stops after patience rounds, else max_steps w-steps.
        model, options, bounds = self._fitted(
            torch.double, max_steps=60, check_every=10, patience=2, tol=1e9
        )
        optimize_eulbo(model, bounds, q=1, seed=2, refit=False, options=options)
        self.assertEqual(model.last_optimization["steps"], 20)
        model, options, bounds = self._fitted(
            torch.double, max_steps=30, check_every=10, patience=5, tol=0.0
        )
        optimize_eulbo(model, bounds, q=1, seed=2, refit=False, options=options)
        self.assertEqual(model.last_optimization["steps"], 30)

    def test_non_finite_parts_fall_back_to_the_warm_start(self):
        # NaN in a w-step's utility term, in an x-step, or in the criterion at a
        # round's end: the warm-start state and candidates come back, with a
        # warning, for both alternations and both stopping rules.
        real = EULBO.expected_log_utility

        def poison(where):
            calls = {"criterion": 0}

            def utility(self_, model_, X, *args, **kwargs):
                out = real(self_, model_, X, *args, **kwargs)
                if where == "x-step" and X.requires_grad:
                    return out * math.nan
                if where == "w-step" and torch.is_grad_enabled():
                    if not X.requires_grad:
                        return out * math.nan
                if where == "criterion" and not torch.is_grad_enabled():
                    # The warm start's criterion and utility, then the first
                    # round's criterion; the final evaluation is finite again.
                    calls["criterion"] += 1
                    if calls["criterion"] == 3:
                        return out * math.nan
                return out

            return mock.patch.object(EULBO, "expected_log_utility", utility)

        for convergence in ("steps", "epochs"):
            for alternation in ("step", "epoch"):
                for where in ("w-step", "x-step", "criterion"):
                    model, options, bounds = self._fitted(
                        torch.double,
                        convergence=convergence,
                        alternation=alternation,
                        max_epochs=2,
                    )
                    start = copy.deepcopy(model.state_dict())
                    with poison(where):
                        with self.assertWarnsRegex(OptimizationWarning, "non-finite"):
                            cand, value = optimize_eulbo(
                                model, bounds, q=1, refit=False, options=options
                            )
                    info = model.last_optimization
                    label = (convergence, alternation, where)
                    self.assertTrue(info["diverged"], label)
                    self.assertTrue(
                        torch.equal(cand, info["warm_start_candidates"]), label
                    )
                    self.assertTrue(math.isfinite(value.item()), label)
                    for k, v in model.state_dict().items():
                        self.assertTrue(torch.equal(v, start[k]), (label, k))

    def test_divergence_after_a_better_round_returns_the_warm_start(self):
        # The first round ends above the warm start (a better state and x are
        # held), the second's criterion is NaN: the warm start comes back, its
        # state and candidates together, not the better round's state with the
        # warm-start candidates.
        # No-grad calls: the warm start's criterion and utility, round 1's
        # criterion, then round 2's.
        utility, _ = _no_grad_call_changed(4, lambda out: out * math.nan)
        model, options, bounds = self._fitted(
            torch.double, max_steps=30, check_every=10, patience=5, tol=0.0
        )
        start = copy.deepcopy(model.state_dict())
        with mock.patch.object(EULBO, "expected_log_utility", utility):
            with self.assertWarnsRegex(OptimizationWarning, "non-finite"):
                cand, _ = optimize_eulbo(
                    model, bounds, q=1, seed=2, refit=False, options=options
                )
        info = model.last_optimization
        self.assertTrue(info["diverged"])
        warm, first, second = info["trace"]
        self.assertTrue(exceeds(first, warm, torch.double))
        self.assertTrue(math.isnan(second))
        self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, start[k]), k)

    def test_a_lower_last_round_returns_the_best_rounds_state(self):
        # Round 2 ends lower than round 1 (its criterion pushed down by 1,000):
        # the state and candidates at round 1's end come back, exactly as a run
        # stopped after round 1 returns them.
        utility, calls = _no_grad_call_changed(0, lambda out: out - 1e3)
        # A short ELBO fit (10 steps), which the first round improves on.
        fitted, options, bounds = self._fitted(
            torch.double, max_steps=10, check_every=10, patience=5
        )
        runs = {}
        for rounds in (1, 2):
            model = copy.deepcopy(fitted)
            options = settings(options, max_steps=10 * rounds)
            # Calls: the warm start's criterion and utility, round 1's criterion,
            # round 2's (if any), the returned candidates' value.
            calls.update(n=0, at=4 if rounds == 2 else 0)
            with mock.patch.object(EULBO, "expected_log_utility", utility):
                cand, value = optimize_eulbo(
                    model, bounds, q=1, seed=2, refit=False, options=options
                )
            runs[rounds] = (cand, value, model.state_dict(), model.last_optimization)
        cand1, value1, state1, info1 = runs[1]
        cand2, value2, state2, info2 = runs[2]
        warm, first = info1["trace"]
        self.assertTrue(exceeds(first, warm, torch.double))  # round 1 was kept
        self.assertLess(info2["trace"][2], first)
        self.assertFalse(torch.equal(cand1, info1["warm_start_candidates"]))
        self.assertTrue(torch.equal(cand2, cand1))
        self.assertEqual(value2.item(), value1.item())
        for k, v in state2.items():
            self.assertTrue(torch.equal(v, state1[k]), k)
