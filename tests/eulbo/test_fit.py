import copy
import dataclasses
import math
from unittest import mock

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.utils.testing import BotorchTestCase
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.eulbo import (
    EULBO,
    AdamOptions,
    ELBOFitOptions,
    EULBOModel,
    EULBOOptions,
    StoppingOptions,
    fit_elbo,
)
from botorch_ext.eulbo.adam import StoppingRule, check_elbo, check_set
from botorch_ext.eulbo.collapsed import (
    collapsed_elbo,
    fit_elbo_collapsed,
    holds_every_input,
)
from botorch_ext.eulbo.fit import lbfgs_budget, lbfgs_rows, uses_lbfgs
from botorch_ext.kernels import get_ard_rbf_kernel_with_dim_scaled_prior as ard
from tests.eulbo.helpers import FAST
from tests.eulbo.helpers import make_data as _data

#: The sum-scaled objective of the paper (the default).
PAPER = EULBO()

# These tests compare with BoTorch's ARD kernel (SingleTaskGP's) or read its
# per-dimension lengthscales, so they pass it instead of the isotropic default.


class TestFitELBO(BotorchTestCase):
    def test_fit_elbo_matches_an_exact_gp_on_noise_free_data(self):
        # Smooth, noise-free data: the converged ELBO fit learns a small noise and
        # fits the training data about as well as an exact GP.
        gen = torch.Generator().manual_seed(3)
        X = torch.rand(80, 2, generator=gen, dtype=torch.double)
        Y = torch.sin(3 * X[:, :1]) + torch.cos(2 * X[:, 1:]) + X[:, :1] * X[:, 1:]
        gp = SingleTaskGP(X, Y, outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        with torch.no_grad():
            rmse_gp = (gp.posterior(X).mean - Y).pow(2).mean().sqrt().item()
        for optimizer in ("adam", "lbfgs"):
            options = EULBOOptions(elbo=ELBOFitOptions(optimizer=optimizer))
            model = EULBOModel(X, Y, num_inducing_points=40, covar_module=ard(2))
            fit_elbo(model, options, seed=0)
            self.assertLess(model.likelihood.noise.item(), 1e-2)
            self.assertTrue(model.last_fit["converged"])
            self.assertLessEqual(model.last_fit["steps"], options.stopping.max_steps)
            with torch.no_grad():
                rmse = (model.posterior(X).mean - Y).pow(2).mean().sqrt().item()
            # Within 5% of the outcome's standard deviation (an unfitted q(u) at
            # the prior with the Table-1 budget is at 35%), or of the exact GP's.
            self.assertLess(rmse, max(3 * rmse_gp, 0.05 * Y.std().item()))

    def test_adam_fit_never_ends_below_its_start(self):
        # From a converged fit, minibatch Adam with a large step first moves
        # away from it; the fit ends at its best check, here the start.
        options = EULBOOptions(
            elbo=ELBOFitOptions(optimizer="adam"),
            adam=AdamOptions(lr_w=0.3, batch_size=8),
            stopping=StoppingOptions(check_every=5, patience=2, max_steps=50),
        )
        for dtype in (torch.float, torch.double):
            X, Y = (t.to(self.device) for t in _data(n=60, dtype=dtype))
            model = EULBOModel(X, Y, num_inducing_points=10)
            fit_elbo_collapsed(model)
            idx = check_set(model, 1024, torch.Generator().manual_seed(0))
            self.assertEqual(len(idx), 60)  # the check set is all the data

            def value(model=model, idx=idx):
                return PAPER.per_datum(model, check_elbo(model, PAPER, idx).item())

            before = value()
            returned = fit_elbo(model, options, seed=0)
            self.assertGreater(model.last_fit["steps"], 0)
            self.assertGreaterEqual(value(), before - 1e-6)
            # The returned value is the restored state's (up to the rounding of
            # a sum over the check set).
            tol = 2**10 * torch.finfo(dtype).eps * max(1.0, abs(value()))
            self.assertLessEqual(abs(returned - value()), tol)
            # From a poor start (the prior's hyperparameters, closed-form
            # q(u)) the same fit makes progress and keeps it.
            fresh = EULBOModel(X, Y, num_inducing_points=10)
            start = PAPER.per_datum(fresh, check_elbo(fresh, PAPER, idx).item())
            self.assertGreater(fit_elbo(fresh, options, seed=0), start)

    def test_stopping_rules_and_presets(self):
        rule = StoppingRule(patience=2, tol=0.1)
        self.assertFalse(rule.update(0.0))
        self.assertFalse(rule.update(0.5))  # progress
        self.assertFalse(rule.update(0.55))  # below tol: stale 1
        self.assertTrue(rule.update(0.58))  # stale 2
        table1 = EULBOOptions.table1(
            warm_start=dataclasses.replace(EULBOOptions().warm_start, num_restarts=3)
        )
        self.assertEqual(
            (
                table1.stopping.convergence,
                table1.stopping.max_epochs,
                table1.stopping.patience,
                table1.stopping.tol,
            ),
            ("epochs", 30, 3, 0.0),
        )
        self.assertEqual(table1.warm_start.num_restarts, 3)
        X, Y = _data(n=70)
        table1 = EULBOOptions.table1()
        for options, unit in (
            (  # epochs of ceil(70 / 32) steps
                table1.replace(
                    stopping=dataclasses.replace(table1.stopping, max_epochs=5)
                ),
                3,
            ),
            (
                EULBOOptions(
                    elbo=ELBOFitOptions(optimizer="adam"),
                    stopping=StoppingOptions(max_steps=45, check_every=10, tol=1e9),
                ),
                10,
            ),
        ):
            model = EULBOModel(X, Y, num_inducing_points=10)
            fit_elbo(model, options)
            steps = model.last_fit["steps"]
            self.assertEqual(steps % unit if steps < 45 else 0, 0)
            self.assertLessEqual(steps, 45 if unit == 10 else 15)
        # tol = 1e9: no round counts as progress, so it stops after `patience`.
        self.assertEqual(steps, options.stopping.patience * 10)
        with self.assertRaisesRegex(ValueError, "convergence"):
            fit_elbo(model, EULBOOptions(stopping=StoppingOptions(convergence="no")))
        with self.assertRaisesRegex(ValueError, "`stopping.tol`"):
            EULBOOptions(stopping=StoppingOptions(tol=-1.0)).validate()
        with self.assertRaisesRegex(TypeError, "EULBOOptions"):
            fit_elbo(model, {"max_steps": 5})  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "EULBO"):
            fit_elbo(model, objective="mean")  # type: ignore[arg-type]

    def test_the_epoch_rule_stops_after_patience_epochs_without_progress(self):
        # tol = 1e9: no epoch counts as progress after the first, so the fit
        # stops after 1 + patience epochs of ceil(70 / 32) = 3 steps, converged;
        # with patience above the budget (4 epochs) the budget ends it.
        X, Y = _data(n=70)
        for tol, patience, epochs, converged in (
            (1e9, 2, 3, True),
            (0.0, 10, 4, False),
        ):
            table1 = EULBOOptions.table1()
            options = table1.replace(
                stopping=dataclasses.replace(
                    table1.stopping, max_epochs=4, patience=patience, tol=tol
                )
            )
            model = EULBOModel(X, Y, num_inducing_points=10)
            fit_elbo(model, options)
            self.assertEqual(model.last_fit["steps"], 3 * epochs)
            self.assertEqual(model.last_fit["converged"], converged)

    def test_a_non_finite_adam_fit_raises_and_restores_its_start(self):
        # Every Adam rule ("steps", "epochs", "failures", fixed epochs): the
        # ELBO turns NaN at the 5th step, fit_elbo raises, and the model's
        # parameters are those it started from, in eval mode.
        X, Y = _data(n=40)
        table1, authors = EULBOOptions.table1(), EULBOOptions.authors()
        cases = {
            "steps": FAST,
            "epochs": table1,
            "failures": authors,
            "fixed": FAST.replace(elbo=dataclasses.replace(FAST.elbo, epochs=3)),
        }
        real = EULBO.elbo
        for name, options in cases.items():
            model = EULBOModel(X, Y, num_inducing_points=10)
            start = copy.deepcopy(model.state_dict())
            calls = {"n": 0}

            def poisoned(self_, *args, calls=calls, **kwargs):
                calls["n"] += 1
                out = real(self_, *args, **kwargs)
                return out * math.nan if calls["n"] == 5 else out

            with mock.patch.object(EULBO, "elbo", poisoned):
                with self.assertRaisesRegex(RuntimeError, "non-finite during fit_elbo"):
                    fit_elbo(model, options)
            self.assertGreaterEqual(calls["n"], 5, name)
            self.assertFalse(model.training, name)
            for k, v in model.state_dict().items():
                self.assertTrue(torch.equal(v, start[k]), (name, k))

    def test_cost_per_fit_is_bounded_in_n(self):
        # The "steps" rule touches at most max_steps minibatches and
        # max_steps / check_every check sets of check_size points, for any n.
        options = EULBOOptions(
            elbo=ELBOFitOptions(optimizer="adam"),
            stopping=StoppingOptions(
                max_steps=40, check_every=10, check_size=64, tol=0.0
            ),
        )
        touched = {}
        real = EULBO.elbo
        for n in (100, 1000):
            X, Y = _data(n=n)
            model = EULBOModel(X, Y, num_inducing_points=10)
            count = {"points": 0}

            def counting(self, model, X, Y, count=count):
                count["points"] += X.shape[-2]
                return real(self, model, X, Y)

            with mock.patch.object(EULBO, "elbo", counting):
                fit_elbo(model, options)
            touched[n] = count["points"]
            bound = 40 * 32 + (40 // 10 + 1) * 64
            self.assertLessEqual(touched[n], bound)
        # Minibatch sizes differ (a short last minibatch per epoch at n = 100),
        # the number of steps does not: the cost does not grow with n.
        self.assertGreaterEqual(touched[100], 40 * 4)

    def test_same_calls_give_the_same_numbers(self):
        X, Y = _data()
        a = EULBOModel(X, Y, num_inducing_points=10)
        b = EULBOModel(X, Y, num_inducing_points=10)
        b.load_state_dict(a.state_dict())
        self.assertEqual(fit_elbo(a, FAST, seed=2), fit_elbo(b, FAST, seed=2))
        self.assertEqual(a.last_fit, b.last_fit)
        self.assertFalse(b.training)
        for key, value in a.state_dict().items():
            self.assertTrue(torch.equal(value, b.state_dict()[key]), key)


class TestCollapsedELBO(BotorchTestCase):
    def _model(self, dtype, n=50, m=15):
        X, Y = _data(n=n, d=3, dtype=dtype, seed=4)
        model = EULBOModel(X, Y, num_inducing_points=m, covar_module=ard(3))
        with torch.no_grad():
            model.model.covar_module.lengthscale = torch.tensor([0.3, 0.5, 0.8])
            model.likelihood.noise = torch.tensor([0.03])
            model.model.mean_module.constant.fill_(0.2)
        model.set_optimal_variational_distribution()
        return model

    def test_max_iter_caps_the_search(self):
        # Both paths (n > m: Z and hyperparameters; n <= m: the exact fit) stop
        # at the iteration budget, and a capped fit does not call itself
        # converged.
        for dtype in (torch.float, torch.double):
            for m in (15, 50):
                with self.subTest(dtype=dtype, m=m):
                    model = self._model(dtype, m=m)
                    fit_elbo_collapsed(model, max_iter=2)
                    self.assertEqual(model.last_fit["steps"], 2)
                    self.assertFalse(model.last_fit["converged"])
                    fit_elbo_collapsed(model, max_iter=500)
                    self.assertLess(model.last_fit["steps"], 500)
                    self.assertTrue(model.last_fit["converged"])

    def test_equals_the_uncollapsed_elbo_at_the_optimal_q(self):
        for dtype in (torch.float, torch.double):
            model = self._model(dtype)
            n = model.train_X_full.shape[-2]
            model.train()
            with torch.no_grad():
                full = PAPER.elbo(model, model.train_X_full, model.train_Y_std) / n
                value = collapsed_elbo(model)
            tol = 1e-4 if dtype == torch.float else 1e-10
            self.assertAllClose(value, full, atol=tol, rtol=0)
            # Titsias's bound is the maximum over q(u): any other q(u) is lower.
            with torch.no_grad():
                dist = model.model.variational_strategy._variational_distribution
                dist.variational_mean.add_(0.05)
                model.model.variational_strategy._clear_cache()
                moved = PAPER.elbo(model, model.train_X_full, model.train_Y_std) / n
            self.assertLess(moved.item(), value.item())

    def test_against_the_dense_formula(self):
        # log N(y | mu, Q + s2 I) - tr(K - Q) / (2 s2) by dense linear algebra,
        # plus the priors (GPyTorch's VariationalELBO adds them per datum).
        model = self._model(torch.double)
        gp = model.model
        X, y = model.train_X_full, model.train_Y_std.squeeze(-1)
        n = X.shape[0]
        Z = gp.variational_strategy.inducing_points
        jitter = gp.variational_strategy.jitter_val
        with torch.no_grad():
            Kzz = gp.covar_module(Z).to_dense() + jitter * torch.eye(Z.shape[0])
            Kxz = gp.covar_module(X, Z).to_dense()
            Kxx = gp.covar_module(X).to_dense() + jitter * torch.eye(n)
            Q = Kxz @ torch.linalg.solve(Kzz, Kxz.T)
            s2 = model.likelihood.noise.item()
            mvn = torch.distributions.MultivariateNormal(
                gp.mean_module(X), Q + s2 * torch.eye(n)
            )
            total = mvn.log_prob(y) - torch.trace(Kxx - Q) / (2 * s2)
            prior = sum(
                p.log_prob(c(mod)).sum()
                for mods in (gp, model.likelihood)
                for _, mod, p, c, _ in mods.named_priors()
            )
            self.assertAllClose(collapsed_elbo(model), (total + prior) / n)
            # The bound of a subset of the points: the same formula on them.
            rows = torch.tensor([3, 0, 17, 41, 8, 29])
            Ks = Kxx[rows][:, rows]
            Qs = Q[rows][:, rows]
            mvn = torch.distributions.MultivariateNormal(
                gp.mean_module(X[rows]), Qs + s2 * torch.eye(len(rows))
            )
            total = mvn.log_prob(y[rows]) - torch.trace(Ks - Qs) / (2 * s2)
            self.assertAllClose(
                collapsed_elbo(model, rows), (total + prior) / len(rows)
            )

    def test_fit_elbo_collapsed_converges_to_the_exact_gp_when_m_equals_n(self):
        # With Z free and m = n the ELBO's optimum is the exact GP's MAP
        # (the bound is tight at Z = X); the L-BFGS fit gets there.
        X, Y = _data(n=30, d=2, seed=5)
        # Noisy outcomes: on noise-free data the noise sits at its floor, where
        # its value is not identified.
        Y = Y + 0.1 * torch.randn(Y.shape, generator=torch.Generator().manual_seed(0))
        gp = SingleTaskGP(X, Y, outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        for dtype in (torch.float, torch.double):
            options = EULBOOptions(elbo=ELBOFitOptions(optimizer="lbfgs"))
            model = EULBOModel(
                X.to(dtype), Y.to(dtype), num_inducing_points=30, covar_module=ard(2)
            )
            value = fit_elbo(model, options)
            self.assertEqual(model.last_fit["elbo"], value)
            self.assertFalse(model.training)
            self.assertAllClose(
                model.likelihood.noise.log(),
                gp.likelihood.noise.log().to(dtype),
                atol=0.3,
                rtol=0,
            )
            self.assertAllClose(
                model.model.covar_module.lengthscale.log(),
                gp.covar_module.lengthscale.log().to(dtype),
                atol=0.1,
                rtol=0,
            )
            with torch.no_grad():
                mean = model.posterior(X.to(dtype)).mean
                exact = gp.posterior(X).mean.to(dtype)
            self.assertAllClose(mean, exact, atol=1e-2 * Y.std().item(), rtol=0)

    def test_with_an_inducing_point_per_input_it_is_the_exact_gp_fit(self):
        # n <= m: Z is set to X and only the hyperparameters are searched; the
        # bound is then the exact GP's log marginal likelihood (same kernel, mean,
        # likelihood and priors), and it is at least what BoTorch's fit of that
        # exact GP reaches from the same start.
        for dtype in (torch.float, torch.double):
            X, Y = _data(n=20, d=2, seed=3, dtype=dtype)
            # Noisy outcomes: at a noise near its floor the jitter GPyTorch adds
            # to K_ZZ, divided by the noise, separates the two.
            gen = torch.Generator().manual_seed(0)
            Y = Y + 0.1 * torch.randn(Y.shape, generator=gen, dtype=dtype)
            model = EULBOModel(X, Y, num_inducing_points=100)
            self.assertTrue(holds_every_input(model))
            self.assertFalse(holds_every_input(model, rows=torch.arange(10)))
            gp = SingleTaskGP(
                X,
                model.train_Y_std,
                covar_module=copy.deepcopy(model.model.covar_module),
                likelihood=copy.deepcopy(model.likelihood),
            )
            gp.mean_module.load_state_dict(model.model.mean_module.state_dict())
            value = fit_elbo_collapsed(model)
            Z = model.model.variational_strategy.inducing_points
            self.assertTrue(torch.equal(Z, X))
            # The bound at the fitted values is the exact MLL at those values.
            exact = copy.deepcopy(gp)
            exact.covar_module.load_state_dict(model.model.covar_module.state_dict())
            exact.likelihood.load_state_dict(model.likelihood.state_dict())
            exact.mean_module.load_state_dict(model.model.mean_module.state_dict())
            mll = ExactMarginalLogLikelihood(exact.likelihood, exact)
            exact.train()
            with torch.no_grad():
                at_fit = mll(exact(X), exact.train_targets).item()
            # The jitter j GPyTorch adds to K_ZZ (and to the predictive variance)
            # is the only difference: each of the trace, log-determinant and
            # quadratic terms moves by at most about j / noise per datum.
            jitter = model.model.variational_strategy.jitter_val
            noise = model.likelihood.noise.item()
            tol = 4 * jitter / noise + 100 * torch.finfo(dtype).eps
            self.assertAlmostEqual(value, at_fit, delta=tol)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            gp.train()
            with torch.no_grad():
                botorch_fit = ExactMarginalLogLikelihood(gp.likelihood, gp)(
                    gp(X), gp.train_targets
                ).item()
            self.assertGreaterEqual(value, botorch_fit - tol)
            self.assertLess(model.last_fit["steps"], 100)

    def test_lbfgs_beats_adam_and_is_an_optimum(self):
        # Both optimizers maximize the same ELBO; L-BFGS ends at least as high
        # as the Adam rule, at a point where the gradient in (Z, theta) vanishes.
        X, Y = _data(n=60, d=2, seed=6)
        adam = EULBOModel(X, Y, num_inducing_points=20, covar_module=ard(2))
        lbfgs = EULBOModel(X, Y, num_inducing_points=20, covar_module=ard(2))
        lbfgs.load_state_dict(adam.state_dict())
        fit_elbo(adam)
        value = fit_elbo_collapsed(lbfgs)
        self.assertGreaterEqual(value, collapsed_elbo(adam).item() - 1e-6)
        lbfgs.train()
        params = [
            lbfgs.model.variational_strategy.inducing_points,
            lbfgs.model.covar_module.raw_lengthscale,
            lbfgs.likelihood.noise_covar.raw_noise,
        ]
        grads = torch.autograd.grad(collapsed_elbo(lbfgs), params)
        self.assertLess(max(g.abs().max().item() for g in grads), 1e-3)
        with self.assertRaisesRegex(ValueError, "`elbo.optimizer`.*sgd"):
            EULBOOptions(elbo=ELBOFitOptions(optimizer="sgd")).validate()

    def test_a_subset_fit_optimizes_the_subset_and_sets_the_full_data_q(self):
        X, Y = _data(n=60, d=2, seed=6)
        for dtype in (torch.float, torch.double):
            options = EULBOOptions(lbfgs_max_n=40)
            model = EULBOModel(X.to(dtype), Y.to(dtype), num_inducing_points=12,
                               covar_module=ard(2))  # fmt: skip
            with torch.no_grad():
                start = collapsed_elbo(model).item()
            value = fit_elbo(model, options, seed=1)
            rows = lbfgs_rows(model, options, seed=1)
            self.assertEqual(model.last_fit["rows"], 40)
            with torch.no_grad():
                self.assertAllClose(value, collapsed_elbo(model).item())
            self.assertGreater(value, start)
            # The search's end is a stationary point of the subset's bound ...
            model.train()
            params = [
                model.model.variational_strategy.inducing_points,
                model.model.covar_module.raw_lengthscale,
                model.likelihood.noise_covar.raw_noise,
            ]
            grads = torch.autograd.grad(collapsed_elbo(model, rows), params)
            tol = 1e-2 if dtype == torch.float else 1e-3
            self.assertLess(max(g.abs().max().item() for g in grads), tol)
            for bad in (torch.tensor([], dtype=torch.long), torch.tensor([0, 60])):
                with self.assertRaisesRegex(ValueError, r"`rows` must be .*\[0, 60\)"):
                    fit_elbo_collapsed(model, rows=bad)
            # ... and q(u) is the closed-form optimum of all the data.
            dist = model.model.variational_strategy._variational_distribution
            fitted = [t.detach().clone() for t in dist.parameters()]
            model.set_optimal_variational_distribution()
            for a, b in zip(fitted, dist.parameters(), strict=True):
                self.assertTrue(torch.equal(a, b))

    def test_a_failed_lbfgs_fit_keeps_the_starting_state(self):
        # A singular K_ZZ met during the line search (NotPSDError), a K_ZZ with
        # NaNs (NanError, seen with a prior-free ScaleKernel on 12 points) or a
        # non-finite end value must not leave a broken model: the fit warns and
        # keeps the state it started from, with q(u) at its closed form.
        from linear_operator.utils.errors import NanError, NotPSDError

        X, Y = _data(n=30)
        cases = [(f, m) for f in ("raise", "nan-error", "nan") for m in (10, 30)]
        for failure, m in cases:
            # m = 30 = n: the exact path (Z = X); both by SciPy's L-BFGS-B.
            model = EULBOModel(X, Y, num_inducing_points=m, covar_module=ard(2))
            before = {k: v.clone() for k, v in model.state_dict().items()}
            calls = {"n": 0}

            def flaky(m, rows=None, failure=failure, calls=calls):
                calls["n"] += 1
                value = collapsed_elbo(m, rows)
                if calls["n"] == 3:
                    if failure == "raise":
                        raise NotPSDError("singular")
                    if failure == "nan-error":
                        raise NanError("cholesky_cpu: 36 of 36 elements are NaN")
                    return value * math.nan
                return value

            with mock.patch("botorch_ext.eulbo.collapsed.collapsed_elbo", flaky):
                if failure != "raise":
                    # SciPy's line search steps back from a non-finite trial
                    # point and stops there: a finite state, not converged.
                    value = fit_elbo_collapsed(model, max_iter=2)
                    self.assertTrue(math.isfinite(value))
                    self.assertFalse(model.last_fit["converged"])
                    continue
                with self.assertWarnsRegex(RuntimeWarning, "starting state is kept"):
                    value = fit_elbo_collapsed(model, max_iter=2)
            self.assertTrue(math.isfinite(value))
            self.assertFalse(model.last_fit["converged"])
            keys = ["model.covar_module.raw_lengthscale",
                    "likelihood.noise_covar.raw_noise"]  # fmt: skip
            if m < 30:
                keys.append("model.variational_strategy.inducing_points")
            for key in keys:
                self.assertTrue(torch.equal(model.state_dict()[key], before[key]))

    def test_the_subset_fit_has_its_own_budget(self):
        X, Y = _data(n=40)
        # (lbfgs_max_n, subset_max_iter, the budget given to the L-BFGS fit)
        for max_n, subset_budget, expected in (
            (40, 3, 7),  # all the data: lbfgs_max_iter
            (39, 3, 3),  # a subset: its own budget
            (39, None, 7),  # a subset without one: lbfgs_max_iter
        ):
            elbo = ELBOFitOptions(lbfgs_max_iter=7, subset_max_iter=subset_budget)
            options = EULBOOptions(elbo=elbo, lbfgs_max_n=max_n)
            model = EULBOModel(X, Y, num_inducing_points=10)
            rows = lbfgs_rows(model, options, seed=3)
            self.assertEqual(lbfgs_budget(options, rows), expected)
            with mock.patch(
                "botorch_ext.eulbo.fit.fit_elbo_collapsed", return_value=-1.0
            ) as spy:
                fit_elbo(model, options, seed=3)
            self.assertEqual(spy.call_args.args[1], expected)
        # Pinned: no separate budget unless asked for.
        self.assertIsNone(ELBOFitOptions().subset_max_iter)
        # A real fit stops at the subset's budget, in both dtypes.
        for dtype in (torch.float, torch.double):
            elbo = ELBOFitOptions(subset_max_iter=2)
            model = EULBOModel(X.to(dtype), Y.to(dtype), num_inducing_points=10)
            fit_elbo(model, EULBOOptions(elbo=elbo, lbfgs_max_n=30), seed=0)
            self.assertEqual(model.last_fit["rows"], 30)
            self.assertLessEqual(model.last_fit["steps"], 2)
            self.assertFalse(model.last_fit["converged"])

    def test_auto_fits_a_subset_above_lbfgs_max_n(self):
        X, Y = _data(n=40)
        # (choice, lbfgs_max_n, rows of the L-BFGS fit: None for all, 0 for Adam)
        for choice, max_n, expected in (
            ("auto", 40, None),
            ("auto", 39, 39),
            ("lbfgs", 1, None),
            ("adam", 10_000, 0),
        ):
            options = EULBOOptions(
                elbo=ELBOFitOptions(optimizer=choice), lbfgs_max_n=max_n
            )
            model = EULBOModel(X, Y, num_inducing_points=10)
            self.assertEqual(uses_lbfgs(options), expected != 0, (choice, max_n))
            rows = lbfgs_rows(model, options, seed=3)
            if expected:
                self.assertEqual(sorted(set(rows.tolist())), sorted(rows.tolist()))
                self.assertEqual(len(rows), expected)
                self.assertTrue(torch.equal(rows, lbfgs_rows(model, options, seed=3)))
                self.assertFalse(torch.equal(rows, lbfgs_rows(model, options, seed=4)))
            else:
                self.assertIsNone(rows)
            with mock.patch(
                "botorch_ext.eulbo.fit.fit_elbo_collapsed", return_value=-1.0
            ) as spy:
                fit_elbo(model, options, seed=3)
            self.assertEqual(spy.called, expected != 0)
            if spy.called:
                passed = spy.call_args.kwargs["rows"]
                self.assertTrue(
                    passed is None if rows is None else torch.equal(passed, rows)
                )
        self.assertEqual(EULBOOptions().elbo.optimizer, "auto")
        self.assertEqual(EULBOOptions.table1().elbo.optimizer, "adam")
        # The paper's setting runs Adam in both phases (Algorithm 1).
        self.assertEqual(EULBOOptions.table1().joint.optimizer, "adam")
