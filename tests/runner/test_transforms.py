import torch
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import ChainedOutcomeTransform, Log, Standardize
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.transforms import Negate


class TestNegate(BotorchTestCase):
    def test_round_trip(self):
        tf = Negate()
        Y, Yvar = torch.randn(2, 5, 1), torch.rand(2, 5, 1)
        Y_tf, Yvar_tf = tf(Y, Yvar)
        self.assertTrue(torch.equal(Y_tf, -Y))
        self.assertTrue(torch.equal(Yvar_tf, Yvar))
        Y_back, Yvar_back = tf.untransform(Y_tf, Yvar_tf)
        self.assertTrue(torch.equal(Y_back, Y))
        self.assertTrue(torch.equal(Yvar_back, Yvar))

    def test_posterior_of_a_model_on_negated_outcomes(self):
        X = torch.rand(10, 2, dtype=torch.double)
        f = 1.0 + (X**2).sum(-1, keepdim=True)  # positive, minimization sign
        plain = SingleTaskGP(X, f, outcome_transform=Standardize(m=1)).eval()
        negated = SingleTaskGP(
            X, -f, outcome_transform=ChainedOutcomeTransform(
                neg=Negate(), std=Standardize(m=1)
            ),
        ).eval()  # fmt: skip
        negated.load_state_dict(plain.state_dict(), strict=False)
        Xt = torch.rand(4, 2, dtype=torch.double)
        p, n = plain.posterior(Xt), negated.posterior(Xt)
        self.assertAllClose(n.mean, -p.mean)
        self.assertAllClose(n.variance, p.variance)
        torch.manual_seed(0)
        samples_n = n.rsample(torch.Size([8]))
        torch.manual_seed(0)
        samples_p = p.rsample(torch.Size([8]))
        self.assertAllClose(samples_n, -samples_p)

    def test_log_chain_models_log_f(self):
        X = torch.rand(10, 2, dtype=torch.double)
        f = torch.exp(3 * X.sum(-1, keepdim=True))
        tf = ChainedOutcomeTransform(neg=Negate(), log=Log(), std=Standardize(m=1))
        Y_tf, _ = tf(-f)
        log_f = f.log()
        self.assertAllClose(Y_tf, (log_f - log_f.mean()) / log_f.std())


class TestStandardizeOnce(BotorchTestCase):
    def test_keeps_the_first_statistics(self):
        from botorch_ext.runner.transforms import StandardizeOnce

        for dtype in (torch.float, torch.double):
            Y0 = torch.tensor([[1.0], [2.0], [4.0]], dtype=dtype)
            Y1 = torch.cat([Y0, torch.tensor([[10.0]], dtype=dtype)])
            tf = StandardizeOnce(m=1)
            tf.train()
            out0, _ = tf(Y0)
            mean, std = Y0.mean(), Y0.std()
            eps = torch.finfo(dtype).eps
            self.assertAllClose(out0, (Y0 - mean) / std, atol=8 * eps, rtol=8 * eps)
            # Trained again on more data: the first statistics stay.
            out1, _ = tf(Y1)
            self.assertTrue(tf.training)
            self.assertAllClose(out1, (Y1 - mean) / std, atol=8 * eps, rtol=8 * eps)
            back, _ = tf.untransform(out1)
            self.assertAllClose(back, Y1, atol=64 * eps, rtol=64 * eps)

    def test_an_eulbo_model_carries_it_over(self):
        from botorch_ext.eulbo import EULBOModel
        from botorch_ext.runner.transforms import StandardizeOnce

        gen = torch.Generator().manual_seed(0)
        X = torch.rand(12, 2, generator=gen, dtype=torch.double)
        Y = X.sum(-1, keepdim=True)
        tf = StandardizeOnce(m=1)
        model = EULBOModel(X[:8], Y[:8], num_inducing_points=4, outcome_transform=tf)
        later = model.carry_over(X, Y)
        self.assertIsInstance(later.outcome_transform, StandardizeOnce)
        self.assertAllClose(later.outcome_transform.means.squeeze(), Y[:8].mean())
        self.assertAllClose(later.train_Y_std, (Y - Y[:8].mean()) / Y[:8].std())
