import itertools
import math
import unittest

import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase, MockModel, MockPosterior

from botorch_ext.acquisition import (
    draw_representer_points,
    entropy_search,
    qES,
    representer_points,
)
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
        torch.manual_seed(0)  # the reference's fantasies (global generator)
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

    def test_x_pending(self):
        model, R = self._setup()
        X = torch.rand(4, 2, 2, device=self.device, dtype=torch.double)
        X_pending = torch.rand(1, 2, device=self.device, dtype=torch.double)
        with_pending = qES(model, representer_points=R, X_pending=X_pending)
        plain = qES(model, representer_points=R)
        joint = torch.cat([X, X_pending.expand(4, 1, 2)], dim=-2)
        self.assertAllClose(with_pending(X), plain(joint))

    def test_exact_gp_fast_path_equals_joint_posterior(self):
        # The cached cross-covariance path against the model's own joint
        # posterior over [X, R] (the generic path), with input and outcome
        # transforms, in both dtypes.
        for dtype, input_transform in itertools.product(
            (torch.float, torch.double), (None, Normalize(d=2))
        ):
            tkw = {"device": self.device, "dtype": dtype}
            gen = torch.Generator().manual_seed(3)
            X_train = 3.0 * torch.rand(10, 2, generator=gen).to(**tkw)
            Y = torch.sin(2.0 * X_train).sum(-1, keepdim=True) + 5.0
            model = SingleTaskGP(
                X_train,
                Y,
                outcome_transform=Standardize(m=1),
                input_transform=input_transform,
            ).eval()
            model.likelihood.noise = 1e-3
            R = 3.0 * torch.rand(12, 2, generator=gen).to(**tkw)
            fast = qES(model, representer_points=R)
            generic = qES(model, representer_points=R)
            generic._exact_gp_terms = lambda like: None
            X = 3.0 * torch.rand(5, 2, 2, generator=gen).to(**tkw)
            self.assertIsNotNone(fast._exact_gp_terms(like=X))
            tol = {"atol": 1e-4, "rtol": 1e-3} if dtype == torch.float else {}
            for got, want in zip(
                fast._cross_covariances(X, R),
                generic._cross_covariances(X, R),
                strict=True,
            ):
                self.assertAllClose(got, want, **tol)
            self.assertAllClose(fast(X), generic(X), **tol)
        # Fixed-noise and batched models take the generic path.
        model, R = self._setup(noise=1e-2)
        self.assertIsNone(qES(model, representer_points=R)._exact_gp_terms(like=R))

    def test_fast_path_agrees_with_brute_force(self):
        # A homoskedastic SingleTaskGP with Standardize takes the cached path.
        # The reference conditions through BoTorch's condition_on_observations
        # on the same GP written without the outcome transform (the outcomes
        # standardized by hand, tau divided by their std): the entropy of p_max
        # does not change when f and tau are scaled alike. (The brute force
        # cannot take the Standardize model itself: condition_on_observations
        # with `noise` on a homoskedastic model under Standardize gives a
        # different conditioned posterior.)
        tkw = {"device": self.device, "dtype": torch.double}
        X_train = torch.tensor([[0.1], [0.45], [0.6], [0.9]], **tkw)
        Y = 3.0 * torch.sin(6.0 * X_train) + 1.0
        models = []
        for outcome_transform, targets in (
            (Standardize(m=1), Y),
            (None, (Y - Y.mean()) / Y.std()),
        ):
            model = SingleTaskGP(
                X_train, targets, outcome_transform=outcome_transform
            ).eval()
            model.covar_module.lengthscale = 0.2
            model.likelihood.noise = 1e-2
            models.append(model)
        R = torch.linspace(0.05, 0.95, 6, **tkw).unsqueeze(-1)
        acqf = qES(
            models[0], representer_points=R, tau=1e-4, num_fantasies=512,
            num_inner_samples=4096,
        )  # fmt: skip
        self.assertIsNotNone(acqf._exact_gp_terms(like=R))
        X = torch.tensor([[0.3]], **tkw)
        ours = acqf(X).item()
        # The reference's fantasies come from the global generator: seeded, so
        # that the test does not depend on the tests that ran before it. 8 runs:
        # their mean has a std of about 0.007 nats.
        torch.manual_seed(0)
        reference = (
            sum(
                _brute_force_es(models[1], X, R, 512, 4096, seed=s).item()
                for s in range(8)
            )
            / 8
        )
        self.assertGreater(reference, 0.2)
        self.assertAlmostEqual(ours, reference, delta=0.012 + 0.02 * reference)

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
        # A seed of None passed construction and failed at the first call.
        for seed in (None, -1, 1.5):
            with self.assertRaisesRegex(ValueError, "`seed` must be a non-negative"):
                qES(model, representer_points=R, seed=seed)

    def test_float32_candidates_on_a_float64_model(self):
        # optimize_acqf with bounds in torch's default float32.
        model, R = self._setup(m=12)
        acqf = qES(model, representer_points=R, num_fantasies=8, num_inner_samples=32)
        X = torch.rand(3, 1, 2, device=self.device, dtype=torch.double)
        want = acqf(X)
        got = acqf(X.float())  # the same points, rounded to float32
        self.assertEqual(got.dtype, torch.double)
        # The rounding of X (relative 2^-24) moves the values by far less.
        self.assertAllClose(got, want, rtol=1e3 * torch.finfo(torch.float).eps)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], device=self.device)
        cand, val = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=16)
        self.assertTrue(torch.isfinite(val).all())

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


class TestDocumentedDefaults(BotorchTestCase):
    r"""The documented defaults of ``qES`` and ``draw_representer_points`` (and of
    the input constructor, which must build the same acquisition function)."""

    def test_qes_defaults(self):
        model = make_gp(device=self.device)
        R = torch.rand(8, 2, device=self.device, dtype=torch.double)
        acqf = qES(model, representer_points=R)
        self.assertEqual(acqf.num_fantasies, 32)
        self.assertEqual(acqf.num_inner_samples, 128)
        self.assertAlmostEqual(acqf.tau.item(), 0.01, places=7)
        self.assertEqual(acqf.seed, 0)
        # The fixed base samples have the documented sizes.
        w, u = acqf._base_samples(2, R)
        self.assertEqual(w.shape[0], 32)
        self.assertEqual(u.shape[0], 128)

    def test_draw_representer_points_defaults(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            bounds = torch.tensor(
                [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=dtype
            )
            R = draw_representer_points(model, bounds, seed=5)
            explicit = draw_representer_points(
                model, bounds, num_points=48, num_candidates=512, seed=5,
                uniform_fraction=0.25, scheme="thompson", num_around_best=256,
            )  # fmt: skip
            self.assertEqual(R.shape, torch.Size([48, 2]))
            self.assertTrue(torch.equal(R, explicit))
            # The Sobol part of the pool grows with num_points: max(512, 8 m).
            many = draw_representer_points(model, bounds, num_points=100, seed=5)
            explicit = draw_representer_points(
                model, bounds, num_points=100, num_candidates=800, seed=5
            )
            self.assertTrue(torch.equal(many, explicit))
            # Neither the EI-weighted scheme nor a pool without the around-best
            # points is the default.
            for other in ({"scheme": "ei"}, {"num_around_best": 0}):
                alt = draw_representer_points(model, bounds, seed=5, **other)
                self.assertFalse(torch.equal(R, alt), other)

    def test_input_constructor_matches_the_defaults(self):
        from botorch.acquisition.input_constructors import get_acqf_input_constructor
        from botorch.utils.datasets import SupervisedDataset

        model = make_gp(device=self.device)
        X, Y = model.train_inputs[0], model.train_targets.unsqueeze(-1)
        data = SupervisedDataset(X, Y, feature_names=["a", "b"], outcome_names=["y"])
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]]).to(X)
        kw = get_acqf_input_constructor(qES)(
            model=model, training_data=data, bounds=bounds, seed=2
        )
        self.assertEqual(kw["num_fantasies"], 32)
        self.assertEqual(kw["num_inner_samples"], 128)
        self.assertEqual(kw["representer_points"].shape, torch.Size([48, 2]))
        expected = draw_representer_points(model, bounds, seed=2, X_baseline=X)
        self.assertTrue(torch.equal(kw["representer_points"], expected))


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

    def test_thompson_and_around_best(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            bounds = torch.tensor(
                [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=dtype
            )
            kwargs = {"scheme": "thompson", "num_around_best": 256, "seed": 4}
            R = draw_representer_points(model, bounds, num_points=24, **kwargs)
            self.assertEqual(R.shape, torch.Size([24, 2]))
            self.assertEqual(R.dtype, dtype)
            self.assertTrue(((R >= bounds[0]) & (R <= bounds[1])).all())
            self.assertEqual(torch.unique(R, dim=0).shape[0], 24)
            self.assertTrue(
                torch.equal(R, draw_representer_points(model, bounds, 24, **kwargs))
            )
        # Around-best points: with only the perturbed part weighted (a pool of
        # 16 Sobol points and 512 perturbations), the representers sit within a
        # few 5%-of-the-box steps of the best training input.
        model = make_gp(device=self.device)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]]).to(model.train_targets)
        X = model.train_inputs[0]
        with torch.no_grad():
            best = X[model.posterior(X).mean.squeeze(-1).argmax()]
        R = draw_representer_points(
            model, bounds, num_points=16, num_candidates=16, num_around_best=512,
            uniform_fraction=1.0, seed=0, scheme="ei",
        )  # fmt: skip
        near = (R - best).norm(dim=-1) < 0.25
        self.assertGreaterEqual(near.sum().item(), 8)
        # X_baseline defaults to the model's training inputs.
        self.assertTrue(
            torch.equal(
                R,
                draw_representer_points(
                    model, bounds, num_points=16, num_candidates=16,
                    num_around_best=512, uniform_fraction=1.0, seed=0, X_baseline=X,
                    scheme="ei",
                ),
            )
        )  # fmt: skip
        with self.assertRaisesRegex(ValueError, "`X_baseline`"):
            mock = MockModel(MockPosterior(mean=torch.zeros(16, 1).to(X)))
            _around_best = representer_points._around_best
            _around_best(mock, bounds, 4, None, None)
        plain = draw_representer_points(
            model, bounds, num_points=16, num_candidates=16, uniform_fraction=1.0,
            seed=0, scheme="ei", num_around_best=0,
        )  # fmt: skip
        self.assertLess(((plain - best).norm(dim=-1) < 0.25).sum().item(), 8)

    def test_thompson_representers_are_sampled_maximizers(self):
        # A model nearly certain of its maximiser at 0.7: a sampled maximiser
        # sits next to it, whatever the seed.
        tkw = {"device": self.device, "dtype": torch.double}
        X = torch.linspace(0, 1, 21, **tkw).unsqueeze(-1)
        Y = -((X - 0.7) ** 2)
        model = SingleTaskGP(X, Y, outcome_transform=None).eval()
        model.covar_module.lengthscale = 0.3
        model.likelihood.noise = 1e-6
        bounds = torch.tensor([[0.0], [1.0]], **tkw)
        for seed in range(5):
            R = draw_representer_points(
                model, bounds, num_points=1, scheme="thompson", num_around_best=0,
                seed=seed,
            )  # fmt: skip
            self.assertLess((R - 0.7).abs().max().item(), 0.02)
        # Eight draws: distinct pool points, nearly all of them maximisers next
        # to 0.7 (draws that peak on the same point leave the rest to the EI
        # fill, which puts about 5 of 8 there).
        near = 0
        for seed in range(5):
            R = draw_representer_points(
                model, bounds, num_points=8, scheme="thompson", num_around_best=0,
                seed=seed,
            )  # fmt: skip
            self.assertEqual(R.unique(dim=0).shape[0], 8)
            near += ((R - 0.7).abs() < 0.02).sum().item()
        self.assertGreaterEqual(near, 36)
        # EI's weights (with a quarter uniform) spread further.
        R_ei = draw_representer_points(
            model, bounds, num_points=8, scheme="ei", num_around_best=0, seed=1
        )
        self.assertGreater((R_ei - 0.7).abs().max().item(), 0.05)

    def test_sampled_maximizers_factor_the_jittered_covariance(self):
        # The jitter goes on the diagonal of a copy: the matrix factorized is
        # covariance + jitter * I exactly, the covariance is left as it was and
        # the draws are mean + z L^T with z from the generator.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            gen = torch.Generator().manual_seed(3)
            M = torch.randn(40, 40, generator=gen, dtype=torch.double)
            covariance = (M @ M.mT / 40).to(**tkw)
            before = covariance.clone()
            mean = torch.randn(40, generator=gen, dtype=torch.double).to(**tkw)
            pool = torch.rand(40, 2, generator=gen, dtype=torch.double).to(**tkw)
            factored = []
            original = representer_points.psd_safe_cholesky

            def capture(A, factored=factored, original=original):
                factored.append(A.clone())
                return original(A)

            representer_points.psd_safe_cholesky = capture
            try:
                got = representer_points._sampled_maximizers(
                    mean, covariance, pool, 16, torch.Generator().manual_seed(1)
                )
            finally:
                representer_points.psd_safe_cholesky = original
            jitter = (
                representer_points.RELATIVE_JITTER[dtype] * before.diagonal().mean()
            )
            eye = torch.eye(40, **tkw)
            self.assertTrue(torch.equal(factored[0], before + jitter * eye))
            self.assertTrue(torch.equal(covariance, before))
            z = torch.randn(16, 40, generator=torch.Generator().manual_seed(1), **tkw)
            L = torch.linalg.cholesky(before + jitter * eye)
            want = (mean + z @ L.mT).argmax(dim=-1).unique()
            self.assertTrue(torch.equal(got, want))

    def test_concentrates_on_high_improvement(self):
        model = make_gp(device=self.device)
        bounds = torch.tensor(
            [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=torch.double
        )
        R = draw_representer_points(
            model, bounds, num_points=64, scheme="ei", num_around_best=0, seed=0
        )
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
        with self.assertRaisesRegex(ValueError, "`scheme`.*'sobol'"):
            draw_representer_points(model, unit, scheme="sobol")
        with self.assertRaisesRegex(ValueError, "`num_around_best`.*-1"):
            draw_representer_points(model, unit, num_around_best=-1)
        with self.assertRaisesRegex(ValueError, "`num_points`"):
            draw_representer_points(model, unit, 0)
        # 0 candidates used to become the default 512; 2.0 passed and then broke.
        for bad in (0, -3):
            with self.assertRaisesRegex(ValueError, "`num_candidates`"):
                draw_representer_points(model, unit, num_points=8, num_candidates=bad)
        for bad in (2.0, None, True):
            with self.assertRaisesRegex(ValueError, "`num_around_best`"):
                draw_representer_points(model, unit, num_around_best=bad)

    def test_bounds_take_the_models_dtype(self):
        # torch.tensor of Python floats is float32; the model is float64.
        model = make_gp(device=self.device)
        unit = torch.tensor([[0.0, 0.0], [1.0, 1.0]], device=self.device)
        want = draw_representer_points(model, unit.double(), num_points=8, seed=3)
        for bounds in (unit, unit.long(), unit.tolist()):
            got = draw_representer_points(model, bounds, num_points=8, seed=3)
            self.assertEqual(got.dtype, torch.double)
            self.assertTrue(torch.equal(got, want))

    def test_input_transform_without_x_baseline_uses_the_models_inputs(self):
        # The model keeps its training inputs normalized; the points around the
        # best must be perturbations of the inputs in the space of `bounds`.
        tkw = {"device": self.device, "dtype": torch.double}
        bounds = torch.tensor([[-5.0, -5.0], [5.0, 5.0]], **tkw)
        gen = torch.Generator().manual_seed(0)
        X = -5 + 10 * torch.rand(20, 2, generator=gen, dtype=torch.double).to(**tkw)
        Y = -((X - 3.0) ** 2).sum(-1, keepdim=True)
        model = SingleTaskGP(X, Y, input_transform=Normalize(d=2, bounds=bounds))
        model.eval()
        kwargs = {"num_points": 16, "num_candidates": 16, "seed": 1, "scheme": "ei"}
        implicit = draw_representer_points(model, bounds, **kwargs)
        explicit = draw_representer_points(model, bounds, X_baseline=X, **kwargs)
        self.assertAllClose(implicit, explicit, atol=64 * torch.finfo(X.dtype).eps)

    def test_fully_bayesian_models_are_refused(self):
        from botorch_ext.acquisition import qLogSoftKG
        from botorch_ext.sgmcmc import SGMCMCFullyBayesianSingleTaskGP

        X = torch.rand(8, 2, device=self.device, dtype=torch.double)
        fb = SGMCMCFullyBayesianSingleTaskGP(X, X.sum(-1, keepdim=True))
        fb.load_hyperparameter_samples(
            {n: p.detach().expand(3, *p.shape) for n, p in fb.named_parameters()}
        )
        unit = torch.tensor([[0.0, 0.0], [1.0, 1.0]]).to(X)
        with self.assertRaisesRegex(UnsupportedError, "fully Bayesian.*SGMCMC"):
            draw_representer_points(fb, unit)
        with self.assertRaisesRegex(UnsupportedError, "fully Bayesian.*SGMCMC"):
            qES(fb, representer_points=X[:4])
        with self.assertRaisesRegex(UnsupportedError, "fully Bayesian.*SGMCMC"):
            qLogSoftKG(fb, best_f=0.0)


def _direct_pmax_entropy(a: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """The definition: entropy of ``mean_j softmax(a_f + d_j)`` for every ``f``,
    through the full ``F x J x m`` tensor (``0 log 0 = 0`` with a zero gradient,
    where ``xlogy`` would give NaN gradients)."""
    p = torch.softmax(a.unsqueeze(-2) + d.unsqueeze(-3), dim=-1).mean(dim=-2)
    return -(p * p.clamp_min(torch.finfo(p.dtype).tiny).log()).sum(-1)


class TestFactorizedPmaxEntropy(BotorchTestCase):
    def test_against_direct_formula(self):
        # Scales from 1 (no pair below the floor) to 1e3 (most pairs below it,
        # so the direct fallback is exercised); values and gradients.
        for dtype, scale in itertools.product(
            (torch.float, torch.double), (1, 300, 1e3)
        ):
            gen = torch.Generator().manual_seed(0)
            a = scale * torch.randn(3, 4, 5, 7, generator=gen, dtype=torch.double)
            d = scale * torch.randn(4, 6, 7, generator=gen, dtype=torch.double)
            a = a.to(device=self.device, dtype=dtype).requires_grad_(True)
            d = d.to(device=self.device, dtype=dtype).requires_grad_(True)
            ours = entropy_search._factorized_pmax_entropy(a, d)
            want = _direct_pmax_entropy(a.double(), d.double())
            self.assertEqual(ours.shape, torch.Size([3, 4, 5]))
            self.assertEqual(ours.dtype, dtype)
            tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float else {}
            self.assertAllClose(ours.double(), want, **tol)
            grads = torch.autograd.grad(ours.sum(), (a, d))
            want_grads = torch.autograd.grad(want.sum(), (a, d))
            for g, w in zip(grads, want_grads, strict=True):
                self.assertTrue(torch.isfinite(g).all())
                self.assertAllClose(g.double(), w.double(), **tol)

    def test_fallback_pairs_are_used(self):
        # Logits that peak at different representers by far more than the
        # floor allows: every pair goes through the direct path.
        a = torch.tensor([[[0.0, -1e3]]], device=self.device, dtype=torch.double)
        d = torch.tensor([[-1e3, 0.0], [0.0, -1e3]], device=self.device).double()
        self.assertAllClose(
            entropy_search._factorized_pmax_entropy(a, d), _direct_pmax_entropy(a, d)
        )
        # p = (1/2, 1/2) exactly here: entropy log 2.
        a = torch.zeros(1, 1, 2, device=self.device, dtype=torch.double)
        self.assertAllClose(
            entropy_search._factorized_pmax_entropy(a, d),
            torch.tensor([[math.log(2.0)]], device=self.device, dtype=torch.double),
        )

    def test_underflowed_probabilities_have_finite_gradients(self):
        for dtype in (torch.float, torch.double):
            # One representer dominates by 1e4 / tau: the others underflow to 0.
            a = torch.zeros(2, 4, 5, dtype=dtype, device=self.device)
            a[..., 0] = 1e4
            a.requires_grad_(True)
            d = torch.zeros(3, 5, dtype=dtype, device=self.device)
            h = entropy_search._factorized_pmax_entropy(a, d)
            self.assertAllClose(h.detach(), torch.zeros_like(h.detach()))
            (grad,) = torch.autograd.grad(h.sum(), a)
            self.assertTrue(torch.isfinite(grad).all())


def _reference_factorized_entropy(a, d):
    """``_factorized_pmax_entropy`` before its exponent floor: the shifted
    logits exponentiated as they are (subnormals and zeros included)."""
    F, J, m = a.shape[-2], d.shape[-2], a.shape[-1]
    batch = torch.broadcast_shapes(a.shape[:-2], d.shape[:-2])
    a64 = a.double().expand(*batch, F, m).reshape(-1, F, m)
    d64 = d.double().expand(*batch, J, m).reshape(-1, J, m)
    A = (a64 - a64.detach().amax(dim=-1, keepdim=True)).exp()
    E = (d64 - d64.detach().amax(dim=-1, keepdim=True)).exp()
    N = A @ E.mT
    floor = entropy_search._NORMALIZER_FLOOR
    ok = N >= floor
    inv_N = torch.where(ok, N.clamp_min(floor).reciprocal(), 0.0)
    p = A * (inv_N @ E) / J
    if not bool(ok.all()):
        b_idx, f_idx, j_idx = (~ok).nonzero(as_tuple=True)
        direct = torch.softmax(a64[b_idx, f_idx] + d64[b_idx, j_idx], dim=-1) / J
        p = p.index_put((b_idx, f_idx), direct, accumulate=True)
    h = -(p * p.clamp_min(torch.finfo(p.dtype).tiny).log()).sum(dim=-1)
    return h.reshape(*batch, F).to(a.dtype)


def _reference_forward(acqf, X):
    """``qES.forward``'s arithmetic in one piece, with LAPACK Cholesky factors
    and a triangular solve per t-batch for every q (no q = 1 shortcut, no
    chunking, no exponent floor): the slow path of the fast one."""
    from linear_operator.utils.cholesky import psd_safe_cholesky

    R = acqf.representer_points.to(X)
    _, L_R, z, prior_logits, h_prior = acqf._prior_terms(like=X)
    w, u = acqf._base_samples(q=X.shape[-2], like=X)
    tau = acqf.tau.to(X)
    S_XX_noisy, S_RX = acqf._cross_covariances(X, R)
    L_X = psd_safe_cholesky(S_XX_noisy)
    A_t = torch.linalg.solve_triangular(L_X, S_RX.mT, upper=False)
    G_t = torch.linalg.solve_triangular(L_X.mT, A_t, upper=True)
    B_t = torch.linalg.solve_triangular(L_R, S_RX, upper=False)
    V = S_XX_noisy - B_t.mT @ B_t
    jitter = representer_points.RELATIVE_JITTER[X.dtype] * S_XX_noisy.diagonal(
        dim1=-2, dim2=-1
    )
    L_V = psd_safe_cholesky(V + torch.diag_embed(jitter))
    sim = z @ B_t + u @ L_V.mT
    post_logits = prior_logits - (sim @ G_t) / tau
    shifts = (w @ A_t) / tau
    return h_prior - _reference_factorized_entropy(shifts, post_logits).mean(dim=-1)


class TestFastPathsAgreeWithSlowPath(BotorchTestCase):
    r"""``qES``'s fast paths (chunked batches, the q = 1 square root and
    divisions, one triangular solve for the whole batch, the exponent floor)
    against the same arithmetic without them (``_reference_forward``).

    Tolerance: values within ``64 eps |value| + 64 eps`` and gradients within
    ``1024 eps`` (relative to the largest gradient entry) of the dtype; the
    paths differ only in the order of float operations."""

    def _check(self, acqf, X, dtype):
        eps = torch.finfo(dtype).eps
        X = X.clone().requires_grad_(True)
        got = acqf(X)
        (got_grad,) = torch.autograd.grad(got.sum(), X)
        X_ref = X.detach().clone().requires_grad_(True)
        want = _reference_forward(acqf, X_ref)
        (want_grad,) = torch.autograd.grad(want.sum(), X_ref)
        self.assertEqual(got.shape, want.shape)
        self.assertAllClose(got, want, atol=64 * eps, rtol=64 * eps)
        scale = want_grad.abs().max().item()
        self.assertGreater(scale, 0.0)
        self.assertAllClose(got_grad, want_grad, atol=1024 * eps * scale, rtol=0.0)

    @staticmethod
    def _sharp_model(tkw):
        r"""A 12-point GP with short lengthscales, 24 representers and the stream."""
        gen = torch.Generator().manual_seed(5)
        X_train = torch.rand(12, 3, generator=gen, dtype=torch.double)
        Y = torch.sin(5.0 * X_train).sum(-1, keepdim=True)
        model = SingleTaskGP(
            X_train.to(**tkw), Y.to(**tkw), outcome_transform=Standardize(m=1)
        ).eval()
        model.covar_module.lengthscale = 0.25
        model.likelihood.noise = 1e-4
        R = torch.rand(24, 3, generator=gen, dtype=torch.double).to(**tkw)
        return model, R, gen

    def test_forward_agrees_with_slow_path(self):
        for dtype, q in itertools.product((torch.float, torch.double), (1, 2)):
            tkw = {"device": self.device, "dtype": dtype}
            model, R, gen = self._sharp_model(tkw)
            # A small tau spreads the logits over hundreds of units, so that
            # some shifted logits fall below the exponent floor.
            acqf = qES(model, representer_points=R, tau=1e-3, num_inner_samples=64)
            X = torch.rand(300, q, 3, generator=gen, dtype=torch.double).to(**tkw)
            # 300 t-batches of 64 x 24 deviations: 2**19 elements make 341 per
            # chunk, so patch the chunk size down to exercise the split.
            self._check(acqf, X, dtype)
            original = entropy_search._CHUNK_ELEMENTS
            try:
                entropy_search._CHUNK_ELEMENTS = 64 * 24 * 7
                self._check(acqf, X, dtype)
                self._check(acqf, X.reshape(30, 10, q, 3), dtype)
            finally:
                entropy_search._CHUNK_ELEMENTS = original

    def test_mean_with_the_draws(self):
        # qES adds the posterior mean to the inner draws, not to the fantasies'
        # shifts: the same logits (entropies within rounding of the logits,
        # 64 eps of the largest), but the rows of the draws then peak near where
        # the pairs do, so that far fewer pairs need the direct softmax than
        # with the mean split the other way.
        floor = entropy_search._NORMALIZER_FLOOR
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            model, R, gen = self._sharp_model(tkw)
            acqf = qES(model, representer_points=R, tau=1e-2, num_inner_samples=64)
            X = torch.rand(50, 1, 3, generator=gen, dtype=torch.double).to(**tkw)
            mu, _, _, prior_logits, _ = acqf._prior_terms(like=X)
            captured = []
            original = entropy_search._factorized_pmax_entropy

            def capture(a, d, captured=captured, original=original):
                captured.append((a.detach(), d.detach()))
                return original(a, d)

            entropy_search._factorized_pmax_entropy = capture
            try:
                with torch.no_grad():
                    acqf(X)
            finally:
                entropy_search._factorized_pmax_entropy = original
            ((shifts, post_logits),) = captured

            def num_direct(a, d):
                a64, d64 = a.double(), d.double()
                A = (a64 - a64.amax(-1, keepdim=True)).clamp_min(-300).exp()
                E = (d64 - d64.amax(-1, keepdim=True)).clamp_min(-300).exp()
                return int(((A @ E.mT) < floor).sum())

            means, post_dev = mu.unsqueeze(-2) + shifts, post_logits - mu.unsqueeze(-2)
            # Here 40 of the 50 x 32 x 64 pairs (float64), against 536 with the
            # mean moved to the fantasies.
            direct = num_direct(shifts, post_logits)
            self.assertLessEqual(1000 * direct, shifts.shape[0] * 32 * 64)
            self.assertLessEqual(10 * direct, num_direct(means, post_dev))
            eps = torch.finfo(dtype).eps
            largest = post_logits.abs().max().item() + shifts.abs().max().item()
            self.assertAllClose(
                _reference_factorized_entropy(shifts, post_logits),
                _reference_factorized_entropy(means, post_dev),
                atol=64 * eps * largest,
                rtol=0.0,
            )

    def test_exponent_floor_is_reached_and_harmless(self):
        # Logits spread over thousands of units: most exponentials would be
        # subnormal or zero without the floor; entropies and gradients agree.
        for dtype in (torch.float, torch.double):
            gen = torch.Generator().manual_seed(1)
            a = 400.0 * torch.randn(6, 8, 16, generator=gen, dtype=torch.double)
            d = 400.0 * torch.randn(6, 32, 16, generator=gen, dtype=torch.double)
            a = a.to(device=self.device, dtype=dtype).requires_grad_(True)
            d = d.to(device=self.device, dtype=dtype).requires_grad_(True)
            shifted = d.detach().double() - d.detach().double().amax(-1, keepdim=True)
            self.assertTrue((shifted < entropy_search._LOG_FLOOR).any())
            got = entropy_search._factorized_pmax_entropy(a, d)
            want = _reference_factorized_entropy(a, d)
            eps = torch.finfo(dtype).eps
            self.assertAllClose(got, want, atol=64 * eps, rtol=64 * eps)
            for g, w in zip(
                torch.autograd.grad(got.sum(), (a, d)),
                torch.autograd.grad(want.sum(), (a, d)),
                strict=True,
            ):
                scale = w.abs().max().item()
                self.assertAllClose(g, w, atol=1024 * eps * scale, rtol=0.0)

    def test_written_out_gradient_matches_autograd(self):
        # _factorized_pmax_entropy's hand-written backward against autograd
        # through the same forward arithmetic (_reference_factorized_entropy),
        # with broadcast batch shapes, at a scale where no pair falls below the
        # normalizer floor and at one where many do (the directly computed
        # pairs) and logits fall below the exponent floor.
        floor = entropy_search._NORMALIZER_FLOOR
        shapes = (((3, 5, 4, 16), (5, 32, 16)), ((4, 16), (2, 32, 16)))
        for dtype, scale, (a_shape, d_shape) in itertools.product(
            (torch.float, torch.double), (1.0, 400.0), shapes
        ):
            eps = torch.finfo(dtype).eps
            gen = torch.Generator().manual_seed(4)
            a = scale * torch.randn(*a_shape, generator=gen, dtype=torch.double)
            d = scale * torch.randn(*d_shape, generator=gen, dtype=torch.double)
            a = a.to(device=self.device, dtype=dtype).requires_grad_(True)
            d = d.to(device=self.device, dtype=dtype).requires_grad_(True)
            a64, d64 = a.detach().double(), d.detach().double()
            x = (a64 - a64.amax(-1, keepdim=True)).exp()
            y = (d64 - d64.amax(-1, keepdim=True)).exp()
            any_direct = bool(((x @ y.mT) < floor).any())
            self.assertEqual(any_direct, scale > 1.0)
            got = entropy_search._factorized_pmax_entropy(a, d)
            want = _reference_factorized_entropy(a, d)
            self.assertEqual(got.dtype, dtype)
            self.assertAllClose(got, want, atol=64 * eps, rtol=64 * eps)
            # A weighted sum, so that every fantasy's gradient matters.
            weights = torch.rand(got.shape, generator=gen, dtype=torch.double)
            weights = weights.to(got)
            for g, w in zip(
                torch.autograd.grad((weights * got).sum(), (a, d)),
                torch.autograd.grad((weights * want).sum(), (a, d)),
                strict=True,
            ):
                self.assertEqual(g.shape, w.shape)
                self.assertEqual(g.dtype, dtype)
                scale_g = w.abs().max().item()
                self.assertGreater(scale_g, 0.0)
                self.assertAllClose(g, w, atol=1024 * eps * scale_g, rtol=0.0)
        # Once differentiable: a second derivative (here of a vector-Jacobian
        # product in a direction that requires grad) is refused, not wrong.
        h = entropy_search._factorized_pmax_entropy(a, d)
        v = torch.ones_like(h).requires_grad_(True)
        (g,) = torch.autograd.grad(h, a, grad_outputs=v, create_graph=True)
        with self.assertRaisesRegex(RuntimeError, "once_differentiable"):
            g.sum().backward()

    def test_small_cholesky_and_shared_solve(self):
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            eps = torch.finfo(dtype).eps
            S = torch.tensor([[[4.0]], [[0.25]]], **tkw)
            self.assertAllClose(
                entropy_search._small_cholesky(S), torch.linalg.cholesky(S)
            )
            # A non-positive 1 x 1 matrix goes to psd_safe_cholesky's jitter.
            zero = torch.zeros(1, 1, 1, **tkw)
            L = entropy_search._small_cholesky(zero)
            self.assertTrue((L > 0).all())
            gen = torch.Generator().manual_seed(2)
            M = torch.randn(5, 5, generator=gen, dtype=torch.double)
            L = torch.linalg.cholesky(M @ M.mT + 5 * torch.eye(5, dtype=M.dtype))
            B = torch.randn(3, 4, 5, 2, generator=gen, dtype=torch.double)
            got = entropy_search._solve_shared_lower(L.to(**tkw), B.to(**tkw))
            want = torch.linalg.solve_triangular(L, B, upper=False)
            self.assertAllClose(got, want.to(dtype), atol=64 * eps, rtol=64 * eps)


class TestMovedNames(unittest.TestCase):
    r"""``draw_representer_points`` before 0.2.0 in ``entropy_search``: an alias."""

    def test_old_path_warns_and_gives_the_same_function(self):
        for name in ("draw_representer_points", "REPRESENTER_SCHEMES"):
            with self.subTest(name=name):
                with self.assertWarnsRegex(DeprecationWarning, "representer_points"):
                    old = getattr(entropy_search, name)
                self.assertIs(old, getattr(representer_points, name))
        with self.assertRaises(AttributeError):
            entropy_search.no_such_name  # noqa: B018
