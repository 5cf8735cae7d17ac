import dataclasses
import math
import warnings

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.mlls import VariationalELBO

from botorch_ext.eulbo import (
    EULBO,
    AdamOptions,
    ELBOFitOptions,
    EULBOModel,
    EULBOOptions,
    StoppingOptions,
    fit_elbo,
    optimize_eulbo,
)
from botorch_ext.eulbo.model import MOVED_SETTINGS
from botorch_ext.kernels import get_ard_rbf_kernel_with_dim_scaled_prior
from botorch_ext.kernels.utils import kernel_lengthscale
from tests.eulbo.helpers import FAST
from tests.eulbo.helpers import make_data as _data


class TestEULBOModel(BotorchTestCase):
    def test_construction_and_inducing_points(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        Z = model.model.variational_strategy.inducing_points
        self.assertEqual(Z.shape, torch.Size([10, 2]))
        # m is capped at n.
        small = EULBOModel(X[:5], Y[:5], num_inducing_points=10)
        self.assertEqual(
            small.model.variational_strategy.inducing_points.shape, torch.Size([5, 2])
        )
        # Duplicated inputs: the allocator stops early; the rest is filled in.
        Xd = torch.cat([X[:3]] * 10)
        Yd = torch.cat([Y[:3]] * 10)
        dup = EULBOModel(Xd, Yd, num_inducing_points=8)
        Zd = dup.model.variational_strategy.inducing_points
        self.assertEqual(Zd.shape, torch.Size([8, 2]))
        self.assertTrue(torch.isfinite(Zd).all())
        # With a previous model: Moss et al.'s improvement-based allocation.
        nxt = EULBOModel(X, Y, num_inducing_points=10, previous_model=model)
        self.assertEqual(
            nxt.model.variational_strategy.inducing_points.shape, torch.Size([10, 2])
        )

    def test_adam_keeps_the_constraints(self):
        # Every bounded hyperparameter is enforced by a transform: Adam (fit_elbo,
        # optimize_eulbo) cannot step through the noise or lengthscale floors.
        X, Y = _data(n=60)
        model = EULBOModel(X, Y, num_inducing_points=20)
        for module in model.modules():
            for name, constraint in getattr(module, "_constraints", {}).items():
                self.assertTrue(constraint.enforced, name)
        # Aggressive Adam steps push the noise of noise-free data toward its
        # floor; it stays above it and well below the outcome variance.
        options = EULBOOptions(
            elbo=ELBOFitOptions(optimizer="adam"),
            adam=AdamOptions(lr_w=0.1),
            stopping=StoppingOptions(max_epochs=60, patience=60),
        )
        fit_elbo(model, options)
        noise = model.likelihood.noise.item()
        self.assertGreaterEqual(noise, 1e-4)
        self.assertLess(noise, 0.1)
        lengthscale = model.model.covar_module.base_kernel.lengthscale
        self.assertTrue(bool((lengthscale >= 0.025).all()))

    def test_posterior_on_original_scale_and_botorch_acqf(self):
        X, Y = _data()
        Y = 100.0 + 10.0 * Y
        model = EULBOModel(X, Y, num_inducing_points=20)
        fit_elbo(model)
        post = model.posterior(X)
        # The standardization is undone: predictions are on Y's scale.
        # Y ~ 100 +- 9: an untransformed (standardized) mean would be near 0.
        self.assertAlmostEqual(post.mean.mean().item(), Y.mean().item(), delta=2.0)
        corr = torch.corrcoef(torch.stack([post.mean.squeeze(-1), Y.squeeze(-1)]))
        self.assertGreater(corr[0, 1].item(), 0.8)
        acqf = qLogNoisyExpectedImprovement(model, X_baseline=X)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cand, val = optimize_acqf(acqf, bounds, q=2, num_restarts=2, raw_samples=16)
        self.assertEqual(cand.shape, torch.Size([2, 2]))
        self.assertTrue(torch.isfinite(val))

    def test_bad_input(self):
        X, Y = _data()
        Xn = X.clone()
        Xn[3, 1] = float("nan")
        with self.assertRaisesRegex(ValueError, "`train_X` must be finite"):
            EULBOModel(Xn, Y)
        Yn = Y.clone()
        Yn[0, 0] = float("inf")
        with self.assertRaisesRegex(ValueError, "`train_Y` must be finite"):
            EULBOModel(X, Yn)
        with self.assertRaisesRegex(ValueError, "rows"):
            EULBOModel(X, Y[:-1])
        # NumPy arrays, integer outcomes and mixed dtypes (AttributeErrors and
        # dtype errors deep in GPyTorch before).
        with self.assertRaisesRegex(ValueError, "`train_X` must be a floating-point"):
            EULBOModel(X.numpy(), Y)
        with self.assertRaisesRegex(
            ValueError, "`train_Y` must be a floating-point.*int64"
        ):
            EULBOModel(X, Y.round().long())
        with self.assertRaisesRegex(ValueError, "one dtype, got torch.float32"):
            EULBOModel(X.float(), Y)
        for bad_X, bad_Y, shapes in (
            (X[:, 0], Y, r"\(40,\) and \(40, 1\)"),
            (X, Y.expand(-1, 2), r"\(40, 2\) and \(40, 2\)"),
        ):
            with self.assertRaisesRegex(
                ValueError, f"n x d .* n x 1, got shapes {shapes}"
            ):
                EULBOModel(bad_X, bad_Y)
        with self.assertRaisesRegex(
            ValueError, "fitted on 2-dimensional inputs, `train_X` has 3"
        ):
            EULBOModel(
                torch.rand(5, 3, dtype=X.dtype), Y[:5], previous_model=EULBOModel(X, Y)
            )
        with self.assertRaisesRegex(ValueError, "num_inducing_points"):
            EULBOModel(X, Y, num_inducing_points=0)
        with self.assertRaisesRegex(ValueError, "elbo_scale"):
            EULBO(elbo_scale="max")
        with self.assertRaisesRegex(ValueError, "utility_weight"):
            EULBO(utility_weight=-1.0)
        with self.assertRaisesRegex(ValueError, "incumbent"):
            EULBO(incumbent=float("nan"))
        with self.assertRaisesRegex(ValueError, "alternation"):
            EULBOOptions().replace(
                joint=dataclasses.replace(EULBOOptions().joint, alternation="joint")
            ).validate()
        with self.assertRaisesRegex(ValueError, "`adam.lr_w`"):
            fit_elbo(EULBOModel(X, Y), EULBOOptions(adam=AdamOptions(lr_w=0.0)))

    def test_the_settings_of_0_1_0_raise_naming_their_new_home(self):
        X, Y = _data(n=8)
        homes = {
            "elbo_scale": "EULBO\\(elbo_scale",
            "utility_weight": "EULBO\\(utility_weight",
            "incumbent": "EULBO\\(incumbent",
            "alternation": "JointOptions\\(alternation",
            "options": "`options` argument of fit_elbo",
        }
        self.assertEqual(set(homes), set(MOVED_SETTINGS))
        for name, home in homes.items():
            with self.subTest(name=name):
                with self.assertRaisesRegex(TypeError, f"0.2.0.*{home}"):
                    EULBOModel(X, Y, **{name: None})
        with self.assertRaisesRegex(TypeError, "unexpected.*'num_inducing'"):
            EULBOModel(X, Y, num_inducing=3)
        # The sixth positional argument of 0.1.0 was elbo_scale.
        with self.assertRaisesRegex(TypeError, "carry_state"):
            EULBOModel(X, Y, 5, None, None, "mean")
        # The model holds no fit settings.
        model = EULBOModel(X, Y)
        for name in MOVED_SETTINGS:
            self.assertFalse(hasattr(model, name), name)

    def test_load_state_dict_with_another_number_of_inducing_points(self):
        # A cross-validation fold (fewer data than m) takes the state of the
        # model on all the data: the posterior is then that model's exactly.
        for dtype in (torch.float, torch.double):
            X, Y = (t.to(self.device) for t in _data(n=10, dtype=dtype))
            full = EULBOModel(X[:8], Y[:8], num_inducing_points=100)
            fit_elbo(full, FAST)
            fold = EULBOModel(X[:6], Y[:6], num_inducing_points=100)
            self.assertEqual(fold.num_inducing_points, 6)
            fold.posterior(X[8:])  # in eval mode, with the caches of its own Z
            fold.load_state_dict(full.state_dict())
            self.assertEqual(fold.num_inducing_points, 8)
            Z = fold.model.variational_strategy.inducing_points
            self.assertEqual(Z.shape, torch.Size([8, 2]))
            self.assertEqual(Z.dtype, dtype)
            Xt = X[8:]
            tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float else {}
            p_full, p_fold = full.posterior(Xt), fold.posterior(Xt)
            self.assertAllClose(p_fold.mean, p_full.mean, **tol)
            self.assertAllClose(p_fold.variance, p_full.variance, **tol)
            # And to fewer points than its own.
            fold.load_state_dict(
                EULBOModel(X[:4], Y[:4], num_inducing_points=100).state_dict()
            )
            self.assertEqual(
                fold.model.variational_strategy.inducing_points.shape[0], 4
            )
            self.assertTrue(torch.isfinite(fold.posterior(Xt).variance).all())


def _full_elbo(model):
    mll = VariationalELBO(
        model.likelihood, model.model, num_data=len(model.train_X_full)
    )
    return mll(model.model(model.train_X_full), model.train_Y_std.squeeze(-1))


class TestFittingAndCarriedState(BotorchTestCase):
    def test_closed_form_q_u_is_the_elbo_optimum(self):
        # At fixed Z and hyperparameters the ELBO's gradient in (m, S) vanishes
        # at the closed-form q(u), and perturbing it lowers the ELBO.
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=50, dtype=dtype)
            model = EULBOModel(X, Y, num_inducing_points=15)  # closed form at init
            dist = model.model.variational_strategy._variational_distribution
            model.train()
            elbo = _full_elbo(model)
            g_m, g_L = torch.autograd.grad(
                elbo, [dist.variational_mean, dist.chol_variational_covar]
            )
            tol = 1e-2 if dtype == torch.float else 1e-6
            self.assertLess(g_m.abs().max().item(), tol)
            self.assertLess(g_L.tril().abs().max().item(), tol)
            with torch.no_grad():
                for scale in (0.9, 1.1):
                    dist.chol_variational_covar.mul_(scale)
                    self.assertLess(_full_elbo(model).item(), elbo.item())
                    dist.chol_variational_covar.div_(scale)
                dist.variational_mean.add_(0.05)
                self.assertLess(_full_elbo(model).item(), elbo.item())
            # A q(u) at the prior (GPyTorch's initialization) is far worse.
            with torch.no_grad():
                dist.variational_mean.zero_()
                dist.chol_variational_covar.copy_(torch.eye(15, dtype=dtype))
                self.assertLess(_full_elbo(model).item(), elbo.item() - 0.1)

    def test_carry_over_grows_m_to_the_requested_number(self):
        # m = 30 asked for, 10 points at first: m = n until n reaches 30, each
        # step keeping the previous inducing points and adding the newest inputs.
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=40, dtype=dtype)
            model = EULBOModel(X[:10], Y[:10], num_inducing_points=30)
            self.assertEqual(model.num_inducing_points, 10)
            fit_elbo(model, FAST)
            Z_old = model.model.variational_strategy.inducing_points.detach()
            nxt = model.carry_over(X[:16], Y[:16])
            self.assertEqual(nxt.num_inducing_points, 16)
            Z = nxt.model.variational_strategy.inducing_points
            self.assertTrue(torch.equal(Z[:10], Z_old))
            self.assertTrue(torch.equal(Z[10:], X[10:16]))
            # The hyperparameters are carried, q(u) is at its closed form.
            self.assertAllClose(
                nxt.model.covar_module.lengthscale, model.model.covar_module.lengthscale
            )
            strategy = nxt.model.variational_strategy
            mean = strategy._variational_distribution.variational_mean.clone()
            nxt.set_optimal_variational_distribution()
            self.assertAllClose(
                strategy._variational_distribution.variational_mean, mean
            )
            last = nxt.carry_over(X, Y).carry_over(X, Y)
            self.assertEqual(last.num_inducing_points, 30)
            self.assertTrue(last.carried_state)  # m reached: carried as is

    def test_user_kernel_is_used_and_carried(self):
        # A ScaleKernel on the outside makes the carried state's rescaling exact up
        # to the jitter on K_ZZ: before any fit, the carried model predicts the
        # same mean and variance in the original units although the
        # standardization changed (without the outputscale's rescaling the
        # variance is off by 1e-3 here, more than 100x the tolerance).
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=40, dtype=dtype)
            kernel = ScaleKernel(RBFKernel())
            model = EULBOModel(X, Y, num_inducing_points=12, covar_module=kernel)
            self.assertIs(model.model.covar_module, kernel)
            fit_elbo(model, FAST)
            self.assertEqual(len(model.diagnostics()["lengthscales"]), 1)
            X_new = torch.tensor([[0.9, 0.95], [0.1, 0.2]], dtype=dtype)
            Y_new = torch.tensor([[4.0], [-3.0]], dtype=dtype)
            nxt = model.carry_over(torch.cat([X, X_new]), torch.cat([Y, Y_new]))
            self.assertTrue(nxt.carried_state)
            self.assertIsInstance(nxt.model.covar_module, ScaleKernel)
            self.assertIsNot(nxt.model.covar_module, kernel)  # a copy
            self.assertAllClose(
                nxt.model.covar_module.base_kernel.lengthscale,
                kernel.base_kernel.lengthscale,
            )
            ratio = (model.outcome_transform.stdvs / nxt.outcome_transform.stdvs) ** 2
            self.assertAllClose(
                nxt.model.covar_module.outputscale,
                kernel.outputscale * ratio.squeeze(),
            )
            test = torch.rand(7, 2, dtype=dtype)
            with torch.no_grad():
                before, after = model.posterior(test), nxt.posterior(test)
            if dtype == torch.double:  # jitter 1e-6 (1e-4 in float32)
                self.assertAllClose(after.mean, before.mean, atol=1e-3, rtol=0)
                self.assertAllClose(after.variance, before.variance, atol=1e-5, rtol=0)
            # Refitting moves the copy only.
            scale = kernel.outputscale.clone()
            fit_elbo(nxt, FAST)
            self.assertTrue(torch.equal(kernel.outputscale, scale))
        with self.assertRaisesRegex(ValueError, "covar_module"):
            EULBOModel(X, Y, covar_module="rbf")
        # A kernel that cannot take the previous model's fitted values.
        with self.assertRaisesRegex(ValueError, "does not match the kernel"):
            EULBOModel(X, Y, previous_model=model, covar_module=RBFKernel())

    def test_carry_over_keeps_the_posterior_on_the_original_scale(self):
        # With BoTorch's ARD kernel (no outputscale) the whitened q(u) is
        # rescaled and the mean maps exactly; with the default ScaleKernel the
        # outputscale is rescaled instead, exact up to K_ZZ's fixed jitter.
        cases = [
            (torch.float, "ard", 1e-4),
            (torch.double, "ard", 1e-8),
            (torch.float, "default", 2e-3),
            (torch.double, "default", 2e-4),
        ]
        for dtype, kernel, tol in cases:
            X, Y = _data(n=40, dtype=dtype)
            kw = {}
            if kernel == "ard":
                kw["covar_module"] = get_ard_rbf_kernel_with_dim_scaled_prior(2)
            model = EULBOModel(X, Y, num_inducing_points=12, **kw)
            fit_elbo(model, FAST)
            # New data with a large outcome: the standardization shifts.
            X_new = torch.tensor([[0.9, 0.95], [0.1, 0.2]], dtype=dtype)
            Y_new = torch.tensor([[4.0], [-3.0]], dtype=dtype)
            nxt = model.carry_over(torch.cat([X, X_new]), torch.cat([Y, Y_new]))
            self.assertTrue(nxt.carried_state)
            self.assertTrue(
                torch.equal(
                    nxt.model.variational_strategy.inducing_points,
                    model.model.variational_strategy.inducing_points,
                )
            )
            self.assertNotAlmostEqual(
                nxt.outcome_transform.stdvs.item(),
                model.outcome_transform.stdvs.item(),
                places=2,
            )
            # Before any fit, the carried q(u) predicts the same mean in the
            # original units (the affine map of the standardization is exact for
            # the mean) and the noise in original units is unchanged.
            # Fixed points: the float32 error varies with the points.
            gen = torch.Generator().manual_seed(0)
            test = torch.rand(7, 2, generator=gen, dtype=dtype)
            with torch.no_grad():
                before = model.posterior(test).mean
                after = nxt.posterior(test).mean
            self.assertAllClose(after, before, atol=tol, rtol=tol)
            noise = model.likelihood.noise * model.outcome_transform.stdvs**2
            noise_new = nxt.likelihood.noise * nxt.outcome_transform.stdvs**2
            self.assertAllClose(noise_new, noise, rtol=1e-4, atol=0)
            # A different number of inducing points cannot be carried: the points
            # are re-allocated and q(u) starts at its closed form.
            other = EULBOModel(X, Y, num_inducing_points=8, previous_model=model)
            self.assertFalse(other.carried_state)
            reset = EULBOModel(X, Y, 12, previous_model=model, carry_state=False)
            self.assertFalse(reset.carried_state)
            self.assertAllClose(
                kernel_lengthscale(reset.model.covar_module),
                kernel_lengthscale(model.model.covar_module),
            )

    def test_carry_over_without_standardize_keeps_the_state_as_it_is(self):
        # Only a Standardize -> Standardize change of scale is mapped: with a
        # Bilog transform the carried q(u), constant mean and noise are the
        # previous model's, value for value.
        from botorch.models.transforms.outcome import Bilog

        X, Y = _data()
        previous = EULBOModel(
            X[:30], Y[:30], num_inducing_points=10, outcome_transform=Bilog()
        )
        fit_elbo(previous, FAST)
        model = EULBOModel(
            X,
            Y,
            num_inducing_points=10,
            previous_model=previous,
            outcome_transform=Bilog(),
        )
        old, new = previous.model, model.model
        old_q = old.variational_strategy._variational_distribution
        new_q = new.variational_strategy._variational_distribution
        for name in ("variational_mean", "chol_variational_covar"):
            self.assertTrue(
                torch.equal(getattr(new_q, name), getattr(old_q, name)), name
            )
        self.assertTrue(torch.equal(new.mean_module.constant, old.mean_module.constant))
        self.assertTrue(torch.equal(model.likelihood.noise, previous.likelihood.noise))
        # With Standardize on both the same carry rescales them.
        previous = EULBOModel(X[:30], Y[:30], num_inducing_points=10)
        fit_elbo(previous, FAST)
        model = EULBOModel(X, Y, num_inducing_points=10, previous_model=previous)
        self.assertFalse(
            torch.equal(
                model.model.mean_module.constant, previous.model.mean_module.constant
            )
        )

    def test_diagnostics(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        cand, _ = optimize_eulbo(model, bounds, q=1, options=FAST)
        diag = model.diagnostics()
        self.assertAlmostEqual(diag["noise"], model.likelihood.noise.item())
        # The default kernel is isotropic: one lengthscale.
        self.assertEqual(len(diag["lengthscales"]), 1)
        self.assertEqual(diag["elbo"], model.last_fit["elbo"])
        self.assertGreater(diag["fit_steps"], 0)
        # The utility term of the returned candidates under the returned state.
        with torch.no_grad():
            u = EULBO().expected_log_utility(model, cand.unsqueeze(0))
        self.assertAlmostEqual(diag["utility"], u.item(), places=6)
        self.assertTrue(math.isfinite(diag["warm_start_utility"]))

    def test_input_and_outcome_transforms(self):
        # Ax passes both; the model works in the transformed space and reports
        # the original one.
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=40, dtype=dtype)
            lower = torch.tensor([-2.0, 10.0], dtype=dtype)
            width = torch.tensor([4.0, 5.0], dtype=dtype)
            X_raw = lower + width * X
            bounds = torch.stack([lower, lower + width])
            model = EULBOModel(
                X_raw,
                Y,
                num_inducing_points=10,
                input_transform=Normalize(d=2, bounds=bounds),
                outcome_transform=Standardize(m=1),
            )
            self.assertAllClose(model.train_X_full, X)
            ref = EULBOModel(X, Y, num_inducing_points=10)
            ref.load_state_dict(model.state_dict(), strict=False)
            test = torch.rand(5, 2, dtype=dtype)
            with torch.no_grad():
                self.assertAllClose(
                    model.posterior(lower + width * test).mean,
                    ref.posterior(test).mean,
                )
            cand, _ = optimize_eulbo(model, bounds, q=1, options=FAST)
            self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
            nxt = model.carry_over(X_raw, Y)
            self.assertTrue(nxt.carried_state)
            self.assertAllClose(nxt.train_X_full, X)

    def test_a_new_learnable_input_transform_learns_once(self):
        # Normalize without bounds, as in BoTorch's tutorials: it used to be put
        # in eval mode before it had learned anything, i.e. left as the identity.
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=30, dtype=dtype)
            X_raw = 100.0 * X - 7.0
            model = EULBOModel(X_raw, Y, input_transform=Normalize(d=2))
            lo, hi = X_raw.min(0).values, X_raw.max(0).values
            self.assertAllClose(model.train_X_full, (X_raw - lo) / (hi - lo))
            self.assertFalse(model.input_transform.training)  # frozen afterwards
            # Carried to the next step (in eval mode), it is kept as learned,
            # although the new points lie outside the first ones' range.
            X_next = torch.cat([X_raw, X_raw[:1] + 500.0])
            Y_next = torch.cat([Y, Y[:1]])
            nxt = model.carry_over(X_next, Y_next)
            self.assertAllClose(nxt.train_X_full[:30], model.train_X_full)


class TestAxAskTell(BotorchTestCase):
    def test_ask_tell_loop_with_attach_trial(self):
        # The documented Ax path (README): Ax keeps the experiment, EULBOModel
        # fits and proposes, and the proposal is attached as a trial.
        try:
            from ax import Client, RangeParameterConfig
        except ImportError:  # pragma: no cover - ax-platform is a test extra
            self.skipTest("ax-platform is not installed")
        from botorch.test_functions import Branin

        branin = Branin()
        lower, upper = branin.bounds.double()
        names = ["x0", "x1"]
        client = Client(random_seed=0)
        client.configure_experiment(
            parameters=[
                RangeParameterConfig(
                    name=name,
                    parameter_type="float",
                    bounds=(lower[i].item(), upper[i].item()),
                )
                for i, name in enumerate(names)
            ]
        )
        client.configure_optimization(objective="-branin")
        for index, params in client.get_next_trials(max_trials=6).items():
            x = torch.tensor([[params[n] for n in names]], dtype=torch.double)
            client.complete_trial(index, raw_data={"branin": branin(x).item()})
        bounds = torch.stack([lower, upper])
        model = None
        for _ in range(2):
            df = client.summarize()
            df = df[df["trial_status"] == "COMPLETED"]
            X = torch.tensor(df[names].values, dtype=torch.double)
            Y = -torch.tensor(df["branin"].values, dtype=torch.double).unsqueeze(-1)
            if model is None:
                model = EULBOModel(
                    X,
                    Y,
                    num_inducing_points=8,
                    input_transform=Normalize(d=2, bounds=bounds),
                )
            else:
                model = model.carry_over(X, Y)
            cand, _ = optimize_eulbo(model, bounds, q=1, options=FAST)
            self.assertTrue(((cand >= lower) & (cand <= upper)).all())
            index = client.attach_trial(
                parameters={n: cand[0, i].item() for i, n in enumerate(names)}
            )
            client.complete_trial(index, raw_data={"branin": branin(cand).item()})
        df = client.summarize()
        self.assertEqual(len(df), 8)
        self.assertTrue((df["trial_status"] == "COMPLETED").all())
        # The last attached trial is the last proposal, in Ax's own coordinates.
        last = torch.tensor(df[names].values[-1], dtype=torch.double)
        self.assertAllClose(last, cand[0])
        # 6 then 7 points with m = 8 asked for: the second model grew m to 7,
        # keeping the first model's 6 inducing points.
        self.assertEqual(model.num_inducing_points, 7)
        self.assertFalse(model.carried_state)


class TestPublicInterface(BotorchTestCase):
    def test_one_entry_point_per_operation(self):
        # Fitting, the objective and the joint step are not the model's.
        for name in ("fit_elbo", "optimize_eulbo", "eulbo", "elbo", "best_f"):
            self.assertFalse(hasattr(EULBOModel, name), name)
        for name in ("expected_log_utility", "fantasy_means", "per_datum"):
            self.assertFalse(hasattr(EULBOModel, name), name)

    def test_parameter_blocks_partition_w_by_module(self):
        model = EULBOModel(*_data(n=12), num_inducing_points=5)
        blocks = model.parameter_blocks()
        strategy = model.model.variational_strategy
        dist = strategy._variational_distribution
        self.assertEqual(
            [id(p) for p in blocks["variational"]],
            [id(p) for p in dist.parameters()],
        )
        self.assertEqual(len(blocks["inducing_points"]), 1)
        self.assertIs(blocks["inducing_points"][0], strategy.inducing_points)
        trained = [p for p in model.parameters() if p.requires_grad]
        together = [p for ps in blocks.values() for p in ps]
        self.assertEqual(len(together), len(trained))
        self.assertEqual({id(p) for p in together}, {id(p) for p in trained})
        hyper = {id(p) for p in blocks["hyperparameters"]}
        self.assertIn(id(model.likelihood.noise_covar.raw_noise), hyper)
        self.assertIn(id(model.model.mean_module.raw_constant), hyper)
