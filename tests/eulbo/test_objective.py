r"""``EULBO``: the objective's ELBO scale, utility weight and incumbent."""

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import EULBO, EULBOModel
from tests.eulbo.helpers import make_data as _data


class TestEULBO(BotorchTestCase):
    def test_elbo_scale_and_per_datum(self):
        X, Y = _data(n=12)
        model = EULBOModel(X, Y, num_inducing_points=5)
        s = EULBO(elbo_scale="sum")
        with self.assertWarnsRegex(DeprecationWarning, "authors"):
            m = EULBO(elbo_scale="authors")
        self.assertEqual(m, EULBO(elbo_scale="per-datum"))
        self.assertEqual(EULBO(elbo_scale="paper"), s)
        model.train()
        total = s.elbo(model, model.train_X_full, model.train_Y_std)
        mean = m.elbo(model, model.train_X_full, model.train_Y_std)
        self.assertAllClose(total, 12 * mean)
        self.assertAlmostEqual(s.per_datum(model, total.item()), mean.item(), places=6)
        self.assertEqual(m.per_datum(model, mean.item()), mean.item())
        self.assertEqual(s.best_f(model), model.train_Y_std.max())
        # An incumbent on the original scale, through the outcome transform.
        y_best = float(Y.max()) + 1.0
        tf = model.outcome_transform
        expected = (y_best - tf.means.squeeze()) / tf.stdvs.squeeze()
        self.assertAllClose(EULBO(incumbent=y_best).best_f(model), expected)

    def test_the_full_data_eulbo_is_the_elbo_plus_the_weighted_utility(self):
        X, Y = _data(n=12)
        model = EULBOModel(X, Y, num_inducing_points=5)
        x = torch.tensor([[0.3, 0.4]], dtype=torch.double)
        objective = EULBO(utility_weight=2.5)
        model.eval()
        with torch.no_grad():
            value = objective(model, x)
            model.train()
            elbo = objective.elbo(model, model.train_X_full, model.train_Y_std)
            model.eval()
            util = objective.expected_log_utility(model, x.unsqueeze(0))
        self.assertAllClose(value, elbo + 2.5 * util.squeeze(0))
        self.assertFalse(model.training)  # the model's mode is restored


class TestObjectiveIncumbent(BotorchTestCase):
    def test_the_incumbent_does_not_depend_on_the_models_mode(self):
        # The joint phase evaluates the utility in train mode, in which BoTorch's
        # Standardize would re-learn its statistics from the incumbent alone.
        X, Y = _data(n=12)
        model = EULBOModel(X, Y, num_inducing_points=5)
        objective = EULBO(incumbent=float(Y.max()) + 0.5)
        model.eval()
        expected = objective.best_f(model)
        model.train()
        self.assertAllClose(objective.best_f(model), expected)
        self.assertTrue(model.outcome_transform.training)  # its mode is restored
        tf = model.outcome_transform
        self.assertAllClose(
            expected, (objective.incumbent - tf.means.squeeze()) / tf.stdvs.squeeze()
        )
