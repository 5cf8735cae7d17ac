from unittest import mock

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.utils.testing import BotorchTestCase
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_ext.models import EULBOModel, EULBOOptions
from botorch_ext.optim import fit_elbo
from botorch_ext.optim.fit import _StoppingRule
from tests.models.helpers import FAST
from tests.models.helpers import make_data as _data


class TestFitELBO(BotorchTestCase):
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

    def test_function_and_method_agree(self):
        X, Y = _data()
        a = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        b = EULBOModel(X, Y, num_inducing_points=10, options=FAST)
        b.load_state_dict(a.state_dict())
        self.assertEqual(a.fit_elbo(seed=2), fit_elbo(b, seed=2))
        self.assertEqual(a.last_fit, b.last_fit)
        self.assertFalse(b.training)
        for key, value in a.state_dict().items():
            self.assertTrue(torch.equal(value, b.state_dict()[key]), key)
