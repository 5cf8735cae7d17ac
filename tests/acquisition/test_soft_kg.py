import math
import warnings

import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.testing import BotorchTestCase

from botorch_ext.acquisition import qLogSoftKG
from botorch_ext.acquisition.soft_kg import log_soft_kg, one_shot_fantasy_means
from tests.acquisition.helpers import make_gp


def _conditioned_means(model, X, eps):
    r"""E[f(x'_i) | D, (x_j, y_ij)] by conditioning the exact GP on each fantasy
    with BoTorch's ``condition_on_observations`` (dense, independent of the
    rank-one formula): ``S x q``."""
    S, q = eps.shape
    cand, free = X[:q], X[q:]
    with torch.no_grad():
        post = model.posterior(cand, observation_noise=True)
        mean, std = post.mean.squeeze(-1), post.variance.squeeze(-1).sqrt()
        out = torch.empty(S, q, dtype=X.dtype)
        for i in range(S):
            for j in range(q):
                y = (mean[j] + std[j] * eps[i, j]).reshape(1, 1)
                fant = model.condition_on_observations(cand[j : j + 1], y)
                out[i, j] = fant.posterior(free[i : i + 1]).mean.squeeze()
    return out


class TestQLogSoftKG(BotorchTestCase):
    def test_value_against_conditioning_the_gp_on_the_fantasy(self):
        model = make_gp(n=10, noise=None, seed=1)
        best_f = model.train_targets.max()
        gen = torch.Generator().manual_seed(0)
        for q, S, tau in ((1, 3, 1.0), (2, 4, 0.3)):
            eps = torch.randn(S, q, generator=gen, dtype=torch.double)
            X = torch.rand(q + S, 2, generator=gen, dtype=torch.double)
            acqf = qLogSoftKG(model, best_f=best_f, base_samples=eps, tau=tau)
            self.assertEqual(acqf.get_augmented_q_batch_size(q), q + S)
            want_means = _conditioned_means(model, X, eps)
            with torch.no_grad():
                got_means = acqf.fantasy_means(X.unsqueeze(0)).squeeze(0)
                value = acqf(X)
            self.assertAllClose(got_means, want_means, atol=1e-8, rtol=1e-6)
            log_u = torch.log(torch.nn.functional.softplus((want_means - best_f) / tau))
            want = log_u.amax(dim=-1).mean()
            self.assertEqual(value.shape, torch.Size([1]))  # t_batch_mode_transform
            self.assertAlmostEqual(value.item(), want.item(), places=8)
            # t-batches are evaluated independently.
            Xb = torch.stack([X, X.flip(0)])
            with torch.no_grad():
                vb = acqf(Xb)
                self.assertAlmostEqual(vb[0].item(), value.item(), places=10)
                self.assertAlmostEqual(vb[1].item(), acqf(X.flip(0)).item(), places=10)

    def test_noise_enters_the_fantasy_scale(self):
        # A fantasy at a noisy point moves the mean less: with a fixed-noise GP
        # the conditional means match conditioning with that noise.
        model = make_gp(n=8, noise=0.5, seed=2)
        eps = torch.tensor([[1.5], [-0.7]], dtype=torch.double)
        X = torch.tensor([[0.3, 0.4], [0.31, 0.41], [0.8, 0.1]], dtype=torch.double)
        acqf = qLogSoftKG(model, best_f=0.0, base_samples=eps)
        with torch.no_grad():
            post = model.posterior(X)
            cov = post.distribution.covariance_matrix
            got = acqf.fantasy_means(X.unsqueeze(0)).squeeze(0)
        scale = math.sqrt(cov[0, 0].item() + 0.5)  # latent variance plus noise
        want = post.mean[1:] + cov[1:, :1] / scale * eps
        self.assertAllClose(got, want, atol=1e-10, rtol=1e-8)

    def test_pure_functions(self):
        # one_shot_fantasy_means with an explicit noise equals the same update
        # on a covariance that already holds the noise on its diagonal.
        gen = torch.Generator().manual_seed(3)
        A = torch.randn(5, 5, generator=gen, dtype=torch.double)
        cov = A @ A.T + 0.1 * torch.eye(5, dtype=torch.double)
        mean = torch.randn(5, generator=gen, dtype=torch.double)
        eps = torch.randn(3, 2, generator=gen, dtype=torch.double)
        a = one_shot_fantasy_means(mean, cov, eps, noise=0.2)
        b = one_shot_fantasy_means(mean, cov + 0.2 * torch.eye(5).double(), eps)
        self.assertAllClose(a, b)
        self.assertEqual(a.shape, torch.Size([3, 2]))
        want = mean[2:, None] + cov[2:, :2] / (cov.diagonal()[:2] + 0.2).sqrt() * eps
        self.assertAllClose(a, want)
        # log_soft_kg: the mean over fantasies of the max over the batch, finite
        # far below c+ (where softplus underflows).
        m = torch.tensor([[-800.0, -900.0], [0.0, 1.0]], dtype=torch.double)
        v = log_soft_kg(m, best_f=0.0)
        self.assertTrue(math.isfinite(v.item()))
        self.assertAlmostEqual(
            v.item(), 0.5 * (-800.0 + math.log(math.log1p(math.e))), places=6
        )
        with self.assertRaisesRegex(ValueError, "q \\+ S"):
            one_shot_fantasy_means(mean, cov, torch.randn(2, 2).double())

    def test_default_base_samples_and_candidates(self):
        model = make_gp(n=8)
        acqf = qLogSoftKG(model, best_f=0.5, num_fantasies=5, seed=1)
        X = torch.rand(3, 2 + 5, 2, dtype=torch.double)
        v1 = acqf(X)
        self.assertEqual(v1.shape, torch.Size([3]))
        # Fixed across calls (cached per q), and reproducible from the seed.
        self.assertTrue(torch.equal(v1, acqf(X)))
        again = qLogSoftKG(model, best_f=0.5, num_fantasies=5, seed=1)
        self.assertTrue(torch.equal(v1, again(X)))
        other = qLogSoftKG(model, best_f=0.5, num_fantasies=5, seed=2)
        self.assertFalse(torch.equal(v1, other(X)))
        eps = acqf.get_base_samples(2, X)
        self.assertEqual(eps.shape, torch.Size([5, 2]))
        self.assertTrue(torch.equal(acqf.extract_candidates(X), X[..., :2, :]))

    def test_bad_input(self):
        model = make_gp(n=8)
        with self.assertRaisesRegex(ValueError, "tau"):
            qLogSoftKG(model, best_f=0.0, tau=0.0)
        with self.assertRaisesRegex(ValueError, "best_f"):
            qLogSoftKG(model, best_f=float("nan"))
        with self.assertRaisesRegex(ValueError, "num_fantasies"):
            qLogSoftKG(model, best_f=0.0, num_fantasies=0)
        with self.assertRaisesRegex(ValueError, "S x q"):
            qLogSoftKG(model, best_f=0.0, base_samples=torch.randn(4).double())
        acqf = qLogSoftKG(model, best_f=0.0, num_fantasies=4)
        with self.assertRaisesRegex(ValueError, "q >= 1"):
            acqf(torch.rand(1, 4, 2, dtype=torch.double))
        fixed = qLogSoftKG(model, best_f=0.0, base_samples=torch.randn(4, 2).double())
        with self.assertRaisesRegex(ValueError, "q = 2"):
            fixed(torch.rand(1, 5, 2, dtype=torch.double))

    def test_inputs_that_gave_silent_nan_or_were_ignored_are_refused(self):
        from botorch.exceptions.errors import UnsupportedError

        tkw = {"device": self.device, "dtype": torch.double}
        model = make_gp(n=8, device=self.device)
        acqf = qLogSoftKG(model, best_f=0.0, num_fantasies=4)
        for bad in (float("nan"), float("inf")):
            X = torch.rand(1, 5, 2, **tkw)
            X[0, 1, 0] = bad
            with self.assertRaisesRegex(ValueError, "`X` contains"):
                acqf(X)
        base = torch.randn(4, 1, **tkw)
        base[2, 0] = float("nan")
        with self.assertRaisesRegex(ValueError, "`base_samples` must be finite"):
            qLogSoftKG(model, best_f=0.0, base_samples=base)
        # Pending points would be stored and never used.
        with self.assertRaisesRegex(UnsupportedError, "pending points"):
            acqf.set_X_pending(torch.rand(2, 2, **tkw))
        acqf.set_X_pending(None)
        # A two-output model fails at construction, as the other acquisitions do.
        X = model.train_inputs[0]
        two = SingleTaskGP(X, torch.stack([X.sum(-1), X.prod(-1)], -1))
        with self.assertRaisesRegex(UnsupportedError, "single-output"):
            qLogSoftKG(two, best_f=0.0)

    def test_gradients_reach_candidates_and_free_points(self):
        model = make_gp(n=8)
        acqf = qLogSoftKG(model, best_f=model.train_targets.max(), num_fantasies=3)
        X = torch.rand(2, 4, 2, dtype=torch.double, requires_grad=True)
        acqf(X).sum().backward()
        self.assertTrue(torch.isfinite(X.grad).all())
        self.assertGreater(X.grad[:, :1].abs().sum().item(), 0)
        self.assertGreater(X.grad[:, 1:].abs().sum().item(), 0)

    def test_optimize_acqf_on_a_fitted_gp(self):
        # The BoTorch-style call: a small fitted SingleTaskGP, optimize_acqf over
        # the augmented batch; only the candidates come back, unless the full
        # tree is asked for.
        from botorch.fit import fit_gpytorch_mll
        from gpytorch.mlls import ExactMarginalLogLikelihood

        gen = torch.Generator().manual_seed(4)
        train_X = torch.rand(12, 2, generator=gen, dtype=torch.double)
        train_Y = -((train_X - 0.3) ** 2).sum(-1, keepdim=True)
        model = SingleTaskGP(train_X, train_Y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acqf = qLogSoftKG(model, best_f=train_Y.max(), num_fantasies=4)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        torch.manual_seed(0)
        cand, value = optimize_acqf(
            acqf,
            bounds=bounds,
            q=acqf.get_augmented_q_batch_size(1),
            num_restarts=2,
            raw_samples=32,
        )
        self.assertEqual(cand.shape, torch.Size([1, 2]))
        self.assertTrue(((cand >= 0) & (cand <= 1)).all())
        self.assertTrue(math.isfinite(value.item()))
        torch.manual_seed(0)
        full, full_value = optimize_acqf(
            acqf,
            bounds=bounds,
            q=acqf.get_augmented_q_batch_size(1),
            num_restarts=2,
            raw_samples=32,
            return_full_tree=True,
        )
        self.assertEqual(full.shape, torch.Size([5, 2]))
        self.assertAllClose(full[:1], cand)
        # The optimizer's value is the acquisition's value at the full tree, and
        # better than the value at random points.
        with torch.no_grad():
            self.assertAlmostEqual(acqf(full).item(), full_value.item(), places=8)
            rand = torch.rand(64, 5, 2, generator=gen, dtype=torch.double)
            self.assertGreaterEqual(full_value.item(), acqf(rand).max().item())

    def test_on_an_svgp_equals_the_eulbo_utility_term(self):
        # On an EULBOModel the acquisition (original scale, c+ = the best
        # observation, tau = the outcome standard deviation) is the EULBO's
        # soft-KG term (standardized scale, c+ = y+, tau = 1).
        from botorch_ext.eulbo import (
            EULBOModel,
            EULBOOptions,
            StoppingOptions,
            fit_elbo,
        )
        from botorch_ext.eulbo.utilities import soft_kg_log_utility

        gen = torch.Generator().manual_seed(6)
        train_X = torch.rand(30, 2, generator=gen, dtype=torch.double)
        train_Y = 50.0 + 20.0 * torch.sin(5 * train_X).sum(-1, keepdim=True)
        model = EULBOModel(train_X, train_Y, num_inducing_points=10)
        fit_elbo(model, EULBOOptions(stopping=StoppingOptions(max_steps=40)))
        eps = torch.randn(5, 2, generator=gen, dtype=torch.double)
        acqf = qLogSoftKG(
            model,
            best_f=train_Y.max(),
            base_samples=eps,
            tau=model.outcome_transform.stdvs.squeeze(),
        )
        X = torch.rand(3, 7, 2, generator=gen, dtype=torch.double)
        with torch.no_grad():
            self.assertAllClose(
                acqf(X),
                soft_kg_log_utility(model, X, eps, model.train_Y_std.max()),
                atol=1e-8,
                rtol=1e-8,
            )

    def test_input_constructor(self):
        model = make_gp(n=8)
        X = model.train_inputs[0]
        Y = 100.0 * model.train_targets.unsqueeze(-1)
        data = SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["y"])
        kw = get_acqf_input_constructor(qLogSoftKG)(model=model, training_data=data)
        self.assertAllClose(kw["best_f"], Y.max())
        self.assertAlmostEqual(kw["tau"], Y.std().item(), places=8)
        acqf = qLogSoftKG(**kw)
        self.assertEqual(acqf.num_fantasies, 64)
        kw = get_acqf_input_constructor(qLogSoftKG)(
            model=model, training_data=data, best_f=1.0, tau=2.0, num_fantasies=3
        )
        self.assertEqual((kw["best_f"], kw["tau"], kw["num_fantasies"]), (1.0, 2.0, 3))
