from unittest import mock

import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models import ModelListGP
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase

from botorch_ext.acquisition import draw_representer_points, entropy_search, qES
from tests.acquisition.helpers import make_gp, unbatched_member


def _hard_argmax_entropy(samples: torch.Tensor, m: int) -> torch.Tensor:
    """Plug-in entropy of the argmax frequencies of ``... x J x m`` samples."""
    counts = torch.nn.functional.one_hot(samples.argmax(-1), m).double().mean(-2)
    return -torch.special.xlogy(counts, counts).sum(-1)


def _brute_force_es(model, X, R, num_fantasies, num_inner, seed=0):
    """ES with hard argmax and exact conditioning through BoTorch's own
    ``condition_on_observations`` on fantasised noisy observations ``y``."""
    gen = torch.Generator().manual_seed(seed)
    m = R.shape[0]
    with torch.no_grad():
        prior = model.posterior(R).distribution
        z = torch.randn(num_inner, m, generator=gen, dtype=torch.double).to(X)
        prior_draws = prior.mean + z @ prior.covariance_matrix.cholesky().mT
        h_prior = _hard_argmax_entropy(prior_draws, m)
        noisy = model.posterior(X, observation_noise=True)
        noise = noisy.variance - model.posterior(X).variance  # q x 1
        y = noisy.distribution.sample(torch.Size([num_fantasies])).unsqueeze(-1)
        fantasy = model.condition_on_observations(
            X.expand(num_fantasies, *X.shape), y, noise=noise.expand_as(y)
        )
        post = fantasy.posterior(R.expand(num_fantasies, *R.shape)).distribution
        z = torch.randn(num_fantasies, num_inner, m, generator=gen, dtype=torch.double)
        draws = post.mean.unsqueeze(-2) + z.to(X) @ post.covariance_matrix.cholesky().mT
        h_post = _hard_argmax_entropy(draws, m)
    return h_prior - h_post.mean()


class TestQES(BotorchTestCase):
    def _setup(self, dtype=torch.double, noise=1e-2, d=2, m=16):
        model = make_gp(n=6, d=d, dtype=dtype, device=self.device, noise=noise)
        gen = torch.Generator().manual_seed(7)
        R = torch.rand(m, d, generator=gen, dtype=torch.double).to(model.train_targets)
        return model, R

    def test_shapes_dtypes_and_determinism(self):
        for dtype in (torch.float, torch.double):
            model, R = self._setup(dtype=dtype)
            acqf = qES(model, representer_points=R)
            for batch in (torch.Size([]), torch.Size([5]), torch.Size([2, 3])):
                X = torch.rand(*batch, 2, 2, device=self.device, dtype=dtype)
                val = acqf(X)
                expected = batch if len(batch) > 0 else torch.Size([1])
                self.assertEqual(val.shape, expected)
                self.assertEqual(val.dtype, dtype)
                self.assertTrue(torch.isfinite(val).all())
                self.assertAllClose(val, acqf(X))  # fixed base samples

    def test_near_zero_at_observed_noiseless_point(self):
        model, R = self._setup(noise=1e-6)
        acqf = qES(model, representer_points=R)
        observed = model.train_inputs[0][:3].unsqueeze(-2)  # 3 x 1 x 2
        val_observed = acqf(observed)
        val_new = acqf(torch.rand(16, 1, 2, device=self.device, dtype=torch.double))
        self.assertTrue((val_observed.abs() < 1e-2).all())
        self.assertGreater(val_new.max().item(), 50 * val_observed.abs().max().item())

    def test_agrees_with_brute_force_as_tau_goes_to_zero(self):
        model, _ = self._setup(noise=1e-2, d=1)
        R = torch.linspace(0.05, 0.95, 6, device=self.device, dtype=torch.double)
        R = R.unsqueeze(-1)
        acqf = qES(
            model, representer_points=R, tau=1e-4, num_fantasies=512,
            num_inner_samples=4096,
        )  # fmt: skip
        for X in (torch.tensor([[0.3]]), torch.tensor([[0.1], [0.8]])):
            X = X.to(device=self.device, dtype=torch.double)
            ours = acqf(X).item()
            # 4 independent brute-force runs: their mean has a std of ~0.005 nats.
            reference = (
                sum(
                    _brute_force_es(model, X, R, 512, 4096, seed=s).item()
                    for s in range(4)
                )
                / 4
            )
            self.assertGreater(reference, 0.2)
            self.assertAlmostEqual(ours, reference, delta=0.012 + 0.02 * reference)

    def test_x_pending_and_chunking(self):
        model, R = self._setup()
        X = torch.rand(4, 2, 2, device=self.device, dtype=torch.double)
        X_pending = torch.rand(1, 2, device=self.device, dtype=torch.double)
        with_pending = qES(model, representer_points=R, X_pending=X_pending)
        plain = qES(model, representer_points=R)
        joint = torch.cat([X, X_pending.expand(4, 1, 2)], dim=-2)
        self.assertAllClose(with_pending(X), plain(joint))
        # Splitting the fantasies into chunks changes nothing but peak memory.
        with mock.patch.object(entropy_search, "_MAX_CHUNK_ELEMENTS", 1000):
            self.assertAllClose(plain(joint), qES(model, representer_points=R)(joint))

    def test_gradients_match_finite_differences(self):
        model, R = self._setup()
        acqf = qES(model, representer_points=R)
        X = torch.rand(2, 2, device=self.device, dtype=torch.double, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(lambda x: acqf(x), (X,), atol=1e-5))

    def test_batched_model_and_posterior_transform(self):
        # Each member of a batched model gets the value of the unbatched model
        # built from it (its own prior entropy and conditioning); the base samples
        # depend only on q, m and the seed, so both share them.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            model = make_gp(batch_shape=(2,), noise=1e-2, **tkw)
            R = torch.rand(8, 2, **tkw)
            X = torch.rand(3, 1, 2, 2, **tkw)
            val = qES(model, representer_points=R)(X)
            self.assertEqual(val.shape, torch.Size([3, 2]))
            tol = 1e-4 if dtype == torch.float else 1e-9
            for i in range(2):
                member = unbatched_member(model, i)
                want = qES(member, representer_points=R)(X[:, 0])
                self.assertAllClose(val[:, i], want, atol=tol, rtol=tol)
        list_model = ModelListGP(
            make_gp(device=self.device), make_gp(device=self.device, seed=1)
        )
        with self.assertRaisesRegex(UnsupportedError, "multi-output"):
            qES(list_model, representer_points=R)
        pt = ScalarizedPosteriorTransform(torch.tensor([1.0, 1.0]).to(R))
        val = qES(list_model, representer_points=R, posterior_transform=pt)(
            torch.rand(3, 2, 2, device=self.device, dtype=torch.double)
        )
        self.assertTrue(torch.isfinite(val).all())

    def test_non_gaussian_posterior_is_rejected(self):
        from botorch.models import SingleTaskGP
        from botorch.models.transforms.outcome import Bilog

        X = torch.rand(6, 2, device=self.device, dtype=torch.double)
        model = SingleTaskGP(X, X.sum(-1, keepdim=True), outcome_transform=Bilog())
        acqf = qES(model.eval(), representer_points=torch.rand(4, 2).to(X))
        with self.assertRaisesRegex(UnsupportedError, "Gaussian posterior"):
            acqf(torch.rand(1, 1, 2).to(X))

    def test_bad_input(self):
        model, R = self._setup()
        with self.assertRaisesRegex(ValueError, "`representer_points`.*non-empty"):
            qES(model, representer_points=R[:0])
        with self.assertRaisesRegex(ValueError, "`representer_points` has dimension 3"):
            qES(model, representer_points=torch.rand(4, 3).to(R))
        bad = R.clone()
        bad[0, 0] = float("nan")
        with self.assertRaisesRegex(ValueError, "`representer_points` must be finite"):
            qES(model, representer_points=bad)
        for tau in (0.0, -1.0):
            with self.assertRaisesRegex(ValueError, "`tau`"):
                qES(model, representer_points=R, tau=tau)
        with self.assertRaisesRegex(ValueError, "`num_fantasies`"):
            qES(model, representer_points=R, num_fantasies=0)
        X = torch.rand(1, 1, 2, device=self.device, dtype=torch.double)
        X[0, 0, 0] = float("nan")
        with self.assertRaisesRegex(ValueError, "NaN"):
            qES(model, representer_points=R)(X)

    def test_optimize_acqf(self):
        for dtype in (torch.float, torch.double):
            model, R = self._setup(dtype=dtype, m=12)
            acqf = qES(
                model, representer_points=R, num_fantasies=8, num_inner_samples=32
            )
            bounds = torch.tensor(
                [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=dtype
            )
            for q, sequential in ((1, False), (2, False), (2, True)):
                cand, val = optimize_acqf(
                    acqf, bounds, q=q, num_restarts=2, raw_samples=16,
                    sequential=sequential,
                )  # fmt: skip
                self.assertEqual(cand.shape, torch.Size([q, 2]))
                self.assertTrue(((cand >= 0) & (cand <= 1)).all())
                self.assertTrue(torch.isfinite(val).all())


class TestDrawRepresenterPoints(BotorchTestCase):
    def test_draw(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            bounds = torch.tensor(
                [[0.0, -1.0], [1.0, 2.0]], device=self.device, dtype=dtype
            )
            R = draw_representer_points(model, bounds, num_points=32, seed=3)
            self.assertEqual(R.shape, torch.Size([32, 2]))
            self.assertEqual(R.dtype, dtype)
            self.assertTrue(((R >= bounds[0]) & (R <= bounds[1])).all())
            self.assertEqual(torch.unique(R, dim=0).shape[0], 32)  # no duplicates
            self.assertTrue(
                torch.equal(R, draw_representer_points(model, bounds, 32, seed=3))
            )

    def test_concentrates_on_high_improvement(self):
        model = make_gp(device=self.device)
        bounds = torch.tensor(
            [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=torch.double
        )
        R = draw_representer_points(model, bounds, num_points=64, seed=0)
        uniform = torch.rand(4096, 2, device=self.device, dtype=torch.double)
        with torch.no_grad():
            mean_R = model.posterior(R).mean.mean()
            mean_uniform = model.posterior(uniform).mean.mean()
        self.assertGreater(mean_R.item(), mean_uniform.item())

    def test_bad_input(self):
        model = make_gp(device=self.device)
        tkw = {"device": self.device, "dtype": torch.double}
        unit = torch.tensor([[0.0, 0.0], [1.0, 1.0]], **tkw)
        with self.assertRaisesRegex(ValueError, "`bounds`"):
            draw_representer_points(model, unit.flip(0))
        with self.assertRaisesRegex(ValueError, "`num_candidates`"):
            draw_representer_points(model, unit, num_points=8, num_candidates=4)
        with self.assertRaisesRegex(ValueError, "`uniform_fraction`"):
            draw_representer_points(model, unit, uniform_fraction=1.5)
        with self.assertRaisesRegex(ValueError, "`num_points`"):
            draw_representer_points(model, unit, 0)


class TestRelaxedPmaxEntropy(BotorchTestCase):
    def test_against_direct_formula(self):
        f = torch.randn(3, 5, 7, dtype=torch.double, device=self.device)
        p = torch.softmax(f, dim=-1).mean(dim=-2)
        direct = -(p * p.log()).sum(-1)
        self.assertAllClose(entropy_search._relaxed_pmax_entropy(f), direct)

    def test_underflowed_probabilities_have_finite_gradients(self):
        for dtype in (torch.float, torch.double):
            # One representer dominates by 1e4 / tau: the others underflow to 0.
            f = torch.zeros(2, 4, 5, dtype=dtype, device=self.device)
            f[..., 0] = 1e4
            f.requires_grad_(True)
            h = entropy_search._relaxed_pmax_entropy(f)
            self.assertAllClose(h.detach(), torch.zeros_like(h.detach()))
            (grad,) = torch.autograd.grad(h.sum(), f)
            self.assertTrue(torch.isfinite(grad).all())
