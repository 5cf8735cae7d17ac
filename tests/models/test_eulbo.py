import math
import warnings
from unittest import mock

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO

from botorch_ext.models import EULBOModel, EULBOOptions
from botorch_ext.models.eulbo import _StoppingRule

FAST = EULBOOptions(
    max_steps=60, check_every=10, num_restarts=2, raw_samples=32, num_mc_samples=16
)


def _data(n=40, d=2, dtype=torch.double, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=torch.double)
    Y = torch.sin(5 * X).sum(-1, keepdim=True) - ((X - 0.7) ** 2).sum(-1, keepdim=True)
    return X.to(dtype), Y.to(dtype)


class TestEULBOModel(BotorchTestCase):
    def test_construction_and_inducing_points(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        Z = model.model.variational_strategy.inducing_points
        self.assertEqual(Z.shape, torch.Size([10, 2]))
        # m is capped at n.
        small = EULBOModel(X[:5], Y[:5], num_inducing_points=10, options=FAST)
        self.assertEqual(
            small.model.variational_strategy.inducing_points.shape, torch.Size([5, 2])
        )
        # Duplicated inputs: the allocator stops early; the rest is filled in.
        Xd = torch.cat([X[:3]] * 10)
        Yd = torch.cat([Y[:3]] * 10)
        dup = EULBOModel(Xd, Yd, num_inducing_points=8, options=FAST)
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
        model.options = EULBOOptions(lr_w=0.1, max_epochs=60, patience=60)
        model.fit_elbo()
        noise = model.likelihood.noise.item()
        self.assertGreaterEqual(noise, 1e-4)
        self.assertLess(noise, 0.1)
        self.assertTrue(bool((model.model.covar_module.lengthscale >= 0.025).all()))

    def test_posterior_on_original_scale_and_botorch_acqf(self):
        X, Y = _data()
        Y = 100.0 + 10.0 * Y
        model = EULBOModel(X, Y, num_inducing_points=20)
        model.fit_elbo()
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

    def test_optimize_eulbo(self):
        for dtype in (torch.float, torch.double):
            X, Y = _data(dtype=dtype)
            bounds = torch.tensor([[0.1, 0.2], [0.6, 0.9]], dtype=dtype)
            for q in (1, 3):
                model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
                model.fit_elbo()
                before = {k: v.clone() for k, v in model.state_dict().items()}
                cand, value = model.optimize_eulbo(bounds, q=q, seed=1)
                self.assertEqual(cand.shape, torch.Size([q, 2]))
                self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
                info = model.last_optimization
                # The returned state is never below the warm start's EULBO.
                self.assertGreaterEqual(value.item(), info["warm_start_value"] - 1e-6)
                if q == 1:
                    # The value is the EULBO of the returned candidates under the
                    # returned state (all n <= check_size points in the ELBO).
                    with torch.no_grad():
                        full = model.eulbo(cand).item()
                    self.assertAlmostEqual(value.item(), full, delta=1e-5 * abs(full))
                after = model.state_dict()
                changed = [k for k in before if not torch.equal(before[k], after[k])]
                self.assertTrue(any("variational" in k for k in changed), changed)
                self.assertFalse(info["diverged"])

    def test_eulbo_scales_and_alternation(self):
        X, Y = _data()
        n = X.shape[0]
        x = torch.tensor([[0.3, 0.4]], dtype=torch.double)
        s = EULBOModel(X, Y, num_inducing_points=10, elbo_scale="sum", options=FAST)
        s.fit_elbo()  # initializes the variational parameters (randomly jittered)
        mean = EULBOModel(X, Y, num_inducing_points=10, elbo_scale="mean", options=FAST)
        mean.load_state_dict(s.state_dict())
        u = s.expected_log_utility(x.unsqueeze(0)).item()
        self.assertAlmostEqual(
            s.eulbo(x).item() - u, n * (mean.eulbo(x).item() - u), places=6
        )
        w = EULBOModel(X, Y, num_inducing_points=10, utility_weight=3.0, options=FAST)
        w.load_state_dict(s.state_dict())
        self.assertAlmostEqual(w.eulbo(x).item() - s.eulbo(x).item(), 2 * u, places=6)
        # Both alternation schemes run and return candidates in the box.
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        for alternation in ("step", "epoch"):
            model = EULBOModel(
                X, Y, num_inducing_points=10, alternation=alternation, options=FAST
            )
            cand, value = model.optimize_eulbo(bounds, q=1)
            self.assertTrue(((cand >= 0) & (cand <= 1)).all())
            self.assertTrue(math.isfinite(value.item()))

    def test_divergence_falls_back_to_warm_start(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        real = EULBOModel.expected_log_utility
        calls = {"n": 0}

        def poisoned(self, X, base_samples=None, utility="ei"):
            # Finite for the warm start's evaluation, NaN once the joint
            # optimization has started.
            calls["n"] += 1
            out = real(self, X, base_samples, utility)
            return out if calls["n"] <= 1 else out * float("nan")

        with mock.patch.object(EULBOModel, "expected_log_utility", poisoned):
            with self.assertWarnsRegex(OptimizationWarning, "non-finite"):
                cand, _ = model.optimize_eulbo(bounds, q=1)
        info = model.last_optimization
        self.assertTrue(info["diverged"])
        self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
        self.assertTrue(torch.isfinite(cand).all())
        for p in model.parameters():
            self.assertTrue(torch.isfinite(p).all())

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
        with self.assertRaisesRegex(ValueError, "num_inducing_points"):
            EULBOModel(X, Y, num_inducing_points=0)
        with self.assertRaisesRegex(ValueError, "elbo_scale"):
            EULBOModel(X, Y, elbo_scale="max")
        with self.assertRaisesRegex(ValueError, "alternation"):
            EULBOModel(X, Y, alternation="joint")
        with self.assertRaisesRegex(ValueError, "lr_w"):
            EULBOModel(X, Y, options=EULBOOptions(lr_w=0.0))
        model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        good = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        with self.assertRaisesRegex(ValueError, "bounds"):
            model.optimize_eulbo(torch.zeros(3, 2).double())
        with self.assertRaisesRegex(ValueError, "bounds"):
            model.optimize_eulbo(good.flip(0))
        with self.assertRaisesRegex(ValueError, "`q`"):
            model.optimize_eulbo(good, q=0)
        with self.assertRaisesRegex(ValueError, "unknown utility 'pi'"):
            model.optimize_eulbo(good, utility="pi")
        with self.assertRaisesRegex(ValueError, "q \\+ S"):
            pts, eps = torch.rand(1, 3, 2).double(), torch.randn(4, 1).double()
            model.fantasy_means(pts, eps)


def _reference_log_soft_improvement(mean, covariance, best_f, num_samples, seed):
    r"""``E[max_j log softplus(f_j - best_f)]`` for ``f ~ N(mean, covariance)`` by
    plain Monte Carlo with ``torch.distributions.MultivariateNormal``.

    Independent of the model's quadrature and of its Cholesky sampling: the draws
    come from PyTorch's own multivariate normal, in float64, and the log of the
    softplus is taken directly (the cases keep ``f - best_f > -30``, where it does
    not underflow). A jitter of ``1e-9`` keeps the covariance positive definite;
    it moves the value by ``O(1e-9)``.

    Args:
        mean: ``batch_shape x q`` means.
        covariance: ``batch_shape x q x q`` covariances.
        best_f: The incumbent (a scalar tensor).
        num_samples: Number of Monte Carlo draws.
        seed: Seed of the draws.

    Returns:
        ``(estimate, sample_std)``, both ``batch_shape``: the Monte Carlo average
        and the standard deviation of the summand (its standard error is
        ``sample_std / sqrt(num_samples)``).
    """
    mean, covariance = mean.double(), covariance.double()
    q = mean.shape[-1]
    eye = torch.eye(q, dtype=torch.double, device=mean.device)
    mvn = torch.distributions.MultivariateNormal(mean, covariance + 1e-9 * eye)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        f = mvn.sample(torch.Size([num_samples]))
    log_u = torch.log(torch.nn.functional.softplus(f - best_f.double()))
    values = log_u.amax(dim=-1)
    return values.mean(dim=0), values.std(dim=0)


class TestExpectedLogUtility(BotorchTestCase):
    r"""The EI term of the EULBO against plain Monte Carlo under ``q(f)``."""

    def _fitted(self, dtype):
        X, Y = (t.to(self.device) for t in _data(dtype=dtype))
        model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        model.fit_elbo()
        return model, X

    def test_q1_quadrature_against_monte_carlo(self):
        # Points on the data (posterior std ~0.07), between them (~0.2) and
        # outside the unit square (0.5-0.9): feeding the variance instead of the
        # standard deviation to the quadrature changes every value whose std is
        # not 1 by many standard errors.
        for dtype in (torch.float, torch.double):
            model, X = self._fitted(dtype)
            tkw = {"dtype": dtype, "device": self.device}
            points = torch.tensor(
                [[0.5, 0.5], [0.3, 0.8], [1.15, 1.1], [1.3, 1.25], [-0.3, 0.4]],
                **tkw,
            )
            Xt = torch.cat([X[:3], points]).unsqueeze(-2)  # 8 x 1 x 2
            with torch.no_grad():
                got = model.expected_log_utility(Xt)
                f = model.model(Xt)  # the latent SVGP marginal q(f)
            self.assertEqual(got.shape, torch.Size([8]))
            std = f.variance.sqrt().squeeze(-1)
            self.assertTrue(bool((std > 0.05).all() and (std < 0.95).all()))
            num_samples = 2_000_000
            ref, sd = _reference_log_soft_improvement(
                f.mean, f.covariance_matrix, model.train_Y_std.max(), num_samples, 0
            )
            # 5 Monte Carlo standard errors; the 20-point quadrature error of this
            # smooth integrand and float32 rounding are far smaller.
            tol = 5 * sd / math.sqrt(num_samples)
            tol = tol + (1e-5 if dtype == torch.float else 0)
            self.assertTrue(
                bool(((got.double() - ref).abs() <= tol).all()),
                f"{(got.double() - ref).abs() / tol} (differences / tolerance)",
            )

    def test_q_batch_monte_carlo_against_multivariate_normal(self):
        # q = 3 with strongly correlated points of unequal variance (a point on
        # the data next to points off it): drawing the samples with L^T instead
        # of the Cholesky factor L gives them the covariance L^T L != L L^T.
        for dtype in (torch.float, torch.double):
            model, X = self._fitted(dtype)
            tkw = {"dtype": dtype, "device": self.device}
            Xt = torch.tensor(
                [
                    [[0.95, 0.9], [1.15, 1.1], [1.3, 1.25]],
                    [[0.5, 0.5], [0.55, 0.52], [1.3, -0.2]],
                    [[-0.3, 0.4], [-0.2, 0.45], [0.0, 0.5]],
                ],
                **tkw,
            )
            Xt = torch.cat([Xt, X[:3].unsqueeze(0)])  # 4 x 3 x 2
            num_base = 200_000
            gen = torch.Generator().manual_seed(3)
            base = torch.randn(num_base, 3, generator=gen, dtype=dtype)
            with torch.no_grad():
                got = model.expected_log_utility(Xt, base.to(self.device))
                f = model.model(Xt)
            self.assertEqual(got.shape, torch.Size([4]))
            num_ref = 1_000_000
            ref, sd = _reference_log_soft_improvement(
                f.mean, f.covariance_matrix, model.train_Y_std.max(), num_ref, 1
            )
            # Both sides are Monte Carlo averages of the same summand: 5 standard
            # errors of their difference.
            tol = 5 * sd * math.sqrt(1 / num_base + 1 / num_ref)
            tol = tol + (1e-5 if dtype == torch.float else 0)
            self.assertTrue(
                bool(((got.double() - ref).abs() <= tol).all()),
                f"{(got.double() - ref).abs() / tol} (differences / tolerance)",
            )
            with self.assertRaisesRegex(ValueError, "base_samples"):
                model.expected_log_utility(Xt)

    def test_optimize_eulbo_against_a_grid(self):
        # d = 1: the joint ascent, started from a warm start displaced by 0.1,
        # ends at the maximizer of EULBO(x, w) over x under the returned w (the
        # ELBO part does not depend on x), found by a dense grid.
        real = EULBOModel._warm_start

        def displaced(self, bounds, q, *args, **kwargs):
            x0 = real(self, bounds, q, *args, **kwargs)
            return (x0 + 0.1).clamp(bounds[0], bounds[1])

        options = EULBOOptions(
            max_steps=100, check_every=10, num_restarts=2, raw_samples=32, lr_x=0.01
        )
        for dtype in (torch.float, torch.double):
            tkw = {"dtype": dtype, "device": self.device}
            gen = torch.Generator().manual_seed(0)
            X = torch.rand(20, 1, generator=gen, dtype=torch.double)
            Y = torch.sin(6 * X) - (X - 0.3) ** 2  # one maximum, near x = 0.26
            model = EULBOModel(X.to(**tkw), Y.to(**tkw), 8, options=options)
            bounds = torch.tensor([[0.0], [1.0]], **tkw)
            with mock.patch.object(EULBOModel, "_warm_start", displaced):
                cand, value = model.optimize_eulbo(bounds, q=1, seed=0)
            start = model.last_optimization["warm_start_candidates"]
            grid = torch.linspace(0, 1, 201, **tkw).unsqueeze(-1)  # step 0.005
            with torch.no_grad():
                eulbo = torch.stack([model.eulbo(x.unsqueeze(0)) for x in grid])
            best = eulbo.argmax()
            # The start is far from the grid maximizer, so the x-steps did the work.
            self.assertGreater((start - grid[best]).abs().item(), 0.05)
            near = (cand - grid[best]).abs().item() <= 0.005
            tol = 1e-4 * abs(eulbo[best].item())
            self.assertTrue(
                near or value.item() >= eulbo[best].item() - tol,
                f"x = {cand.item()}, grid argmax {grid[best].item()}; EULBO "
                f"{value.item()} vs grid max {eulbo[best].item()}",
            )
            self.assertLessEqual(value.item(), eulbo[best].item() + tol)


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

    def test_fit_elbo_matches_an_exact_gp_on_noise_free_data(self):
        # Smooth, noise-free data: the converged ELBO fit learns a small noise and
        # fits the training data about as well as an exact GP.
        gen = torch.Generator().manual_seed(3)
        X = torch.rand(80, 2, generator=gen, dtype=torch.double)
        Y = torch.sin(3 * X[:, :1]) + torch.cos(2 * X[:, 1:]) + X[:, :1] * X[:, 1:]
        model = EULBOModel(X, Y, num_inducing_points=40)
        model.fit_elbo(seed=0)
        self.assertLess(model.likelihood.noise.item(), 1e-2)
        self.assertTrue(model.last_fit["converged"])
        self.assertLessEqual(model.last_fit["steps"], model.options.max_steps)
        gp = SingleTaskGP(X, Y, outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        with torch.no_grad():
            rmse = (model.posterior(X).mean - Y).pow(2).mean().sqrt().item()
            rmse_gp = (gp.posterior(X).mean - Y).pow(2).mean().sqrt().item()
        # Within 5% of the outcome's standard deviation (an unfitted q(u) at the
        # prior with the Table-1 budget is at 35%), or of the exact GP's error.
        self.assertLess(rmse, max(3 * rmse_gp, 0.05 * Y.std().item()))

    def test_carry_over_keeps_the_posterior_on_the_original_scale(self):
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=40, dtype=dtype)
            model = EULBOModel(X, Y, num_inducing_points=12, options=FAST)
            model.fit_elbo()
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
            test = torch.rand(7, 2, dtype=dtype)
            with torch.no_grad():
                before = model.posterior(test).mean
                after = nxt.posterior(test).mean
            self.assertAllClose(after, before, atol=1e-4, rtol=1e-4)
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
                reset.model.covar_module.lengthscale,
                model.model.covar_module.lengthscale,
            )

    def test_stopping_rules_and_presets(self):
        rule = _StoppingRule(patience=2, tol=0.1)
        self.assertFalse(rule.update(0.0))
        self.assertFalse(rule.update(0.5))  # progress
        self.assertFalse(rule.update(0.55))  # below tol: stale 1
        self.assertTrue(rule.update(0.58))  # stale 2
        table1 = EULBOOptions.table1(num_restarts=3)
        self.assertEqual(
            (table1.convergence, table1.max_epochs, table1.patience, table1.tol),
            ("epochs", 30, 3, 0.0),
        )
        self.assertEqual(table1.num_restarts, 3)
        X, Y = _data(n=70)
        for options, unit in (
            (EULBOOptions.table1(max_epochs=5), 3),  # epochs of ceil(70 / 32) steps
            (EULBOOptions(max_steps=45, check_every=10, tol=1e9), 10),
        ):
            model = EULBOModel(X, Y, num_inducing_points=10, options=options)
            model.fit_elbo()
            steps = model.last_fit["steps"]
            self.assertEqual(steps % unit if steps < 45 else 0, 0)
            self.assertLessEqual(steps, 45 if unit == 10 else 15)
        # tol = 1e9: no round counts as progress, so it stops after `patience`.
        self.assertEqual(steps, options.patience * 10)
        with self.assertRaisesRegex(ValueError, "convergence"):
            EULBOOptions(convergence="never").validate()
        with self.assertRaisesRegex(ValueError, "`tol`"):
            EULBOOptions(tol=-1.0).validate()

    def test_cost_per_fit_is_bounded_in_n(self):
        # The "steps" rule touches at most max_steps minibatches and
        # max_steps / check_every check sets of check_size points, for any n.
        options = EULBOOptions(max_steps=40, check_every=10, check_size=64, tol=0.0)
        touched = {}
        real = EULBOModel._elbo
        for n in (100, 1000):
            X, Y = _data(n=n)
            model = EULBOModel(X, Y, num_inducing_points=10, options=options)
            count = {"points": 0}

            def counting(self, X, Y, count=count):
                count["points"] += X.shape[-2]
                return real(self, X, Y)

            with mock.patch.object(EULBOModel, "_elbo", counting):
                model.fit_elbo()
            touched[n] = count["points"]
            bound = 40 * 32 + (40 // 10 + 1) * 64
            self.assertLessEqual(touched[n], bound)
        # Minibatch sizes differ (a short last minibatch per epoch at n = 100),
        # the number of steps does not: the cost does not grow with n.
        self.assertGreaterEqual(touched[100], 40 * 4)

    def test_diagnostics(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        cand, _ = model.optimize_eulbo(bounds, q=1)
        diag = model.diagnostics()
        self.assertAlmostEqual(diag["noise"], model.likelihood.noise.item())
        self.assertEqual(len(diag["lengthscales"]), 2)
        self.assertEqual(diag["elbo"], model.last_fit["elbo"])
        self.assertGreater(diag["fit_steps"], 0)
        # The utility term of the returned candidates under the returned state.
        with torch.no_grad():
            u = model.expected_log_utility(cand.unsqueeze(0))
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
                options=FAST,
                input_transform=Normalize(d=2, bounds=bounds),
                outcome_transform=Standardize(m=1),
            )
            self.assertAllClose(model.train_X_full, X)
            ref = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
            ref.load_state_dict(model.state_dict(), strict=False)
            test = torch.rand(5, 2, dtype=dtype)
            with torch.no_grad():
                self.assertAllClose(
                    model.posterior(lower + width * test).mean,
                    ref.posterior(test).mean,
                )
            cand, _ = model.optimize_eulbo(bounds, q=1)
            self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
            nxt = model.carry_over(X_raw, Y)
            self.assertTrue(nxt.carried_state)
            self.assertAllClose(nxt.train_X_full, X)


def _dense_fantasy_means(model, X, eps):
    r"""E[f(x'_i) | y_ij] by dense Gaussian conditioning of the SVGP's predictive
    distribution, assembled by hand from the variational parameters."""
    gp = model.model
    vs = gp.variational_strategy
    Z = vs.inducing_points.detach()
    kern = gp.covar_module
    m = Z.shape[0]
    Kzz = kern(Z).to_dense() + vs.jitter_val * torch.eye(m, dtype=Z.dtype)
    L = torch.linalg.cholesky(Kzz)
    vd = vs._variational_distribution
    m_u = L @ vd.variational_mean
    C = torch.tril(vd.chol_variational_covar)
    S_u = L @ C @ C.T @ L.T
    P = X.reshape(-1, X.shape[-1])
    A = kern(P, Z).to_dense() @ torch.linalg.inv(Kzz)
    mu = gp.mean_module(P) + A @ m_u
    Sigma = kern(P).to_dense() - A @ Kzz @ A.T + A @ S_u @ A.T
    noise = model.likelihood.noise.item()
    S, q = eps.shape
    out = torch.empty(S, q, dtype=X.dtype)
    for i in range(S):
        for j in range(q):
            y = mu[j] + torch.sqrt(Sigma[j, j] + noise) * eps[i, j]
            gain = Sigma[q + i, j] / (Sigma[j, j] + noise)
            out[i, j] = mu[q + i] + gain * (y - mu[j])
    return out


class TestOneShotSoftKG(BotorchTestCase):
    def test_fantasy_means_against_dense_conditioning(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=12, options=FAST)
        model.fit_elbo()
        gen = torch.Generator().manual_seed(5)
        for q, S in ((1, 4), (3, 5)):
            pts = torch.rand(q + S, 2, generator=gen, dtype=torch.double)
            eps = torch.randn(S, q, generator=gen, dtype=torch.double)
            with torch.no_grad():
                got = model.fantasy_means(pts.unsqueeze(0), eps).squeeze(0)
                want = _dense_fantasy_means(model, pts, eps)
            self.assertAllClose(got, want, atol=1e-5, rtol=1e-5)
            # The soft-KG term is the sample mean of the max over the batch.
            with torch.no_grad():
                val = model.soft_kg_log_utility(pts.unsqueeze(0), eps).item()
            best = model.train_Y_std.max()
            ref = torch.log(torch.nn.functional.softplus(want - best)).amax(-1).mean()
            self.assertAlmostEqual(val, ref.item(), places=5)

    def test_gradients_reach_variational_parameters(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=12, options=FAST)
        model.fit_elbo()
        model.train()
        pts = torch.rand(1, 4, 2, dtype=torch.double, requires_grad=True)
        eps = torch.randn(3, 1, dtype=torch.double)
        model.soft_kg_log_utility(pts, eps).sum().backward()
        vd = model.model.variational_strategy._variational_distribution
        self.assertGreater(vd.variational_mean.grad.abs().sum().item(), 0)
        self.assertGreater(vd.chol_variational_covar.grad.abs().sum().item(), 0)
        self.assertTrue(torch.isfinite(pts.grad).all())
        self.assertGreater(pts.grad.abs().sum().item(), 0)

    def test_optimize_eulbo_kg(self):
        X, Y = _data()
        options = EULBOOptions(
            max_steps=40,
            check_every=10,
            num_restarts=2,
            raw_samples=16,
            num_fantasies=6,
        )
        bounds = torch.tensor([[0.0, 0.1], [0.8, 1.0]], dtype=torch.double)
        for q in (1, 2):
            model = EULBOModel(X, Y, num_inducing_points=10, options=options)
            cand, value = model.optimize_eulbo(bounds, q=q, utility="kg", seed=2)
            self.assertEqual(cand.shape, torch.Size([q, 2]))
            self.assertTrue(((cand >= bounds[0]) & (cand <= bounds[1])).all())
            info = model.last_optimization
            self.assertEqual(info["fantasy_points"].shape, torch.Size([6, 2]))
            self.assertGreaterEqual(value.item(), info["warm_start_value"] - 1e-6)


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
                    options=FAST,
                )
            else:
                model = model.carry_over(X, Y)
            cand, _ = model.optimize_eulbo(bounds, q=1)
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
        self.assertTrue(model.carried_state)
