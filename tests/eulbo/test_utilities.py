import math

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import (
    EULBO,
    EULBOModel,
    UtilityOptions,
    expected_log_soft_improvement,
    fit_elbo,
    gauss_hermite_normal,
    mc_log_soft_improvement,
)
from botorch_ext.eulbo.utilities import fantasy_means, soft_kg_log_utility
from tests.eulbo.helpers import FAST
from tests.eulbo.helpers import make_data as _data


def _log_softplus_ref(x: float) -> float:
    # log(log(1 + e^x)) with math, stable on both sides.
    if x > 30:
        return math.log(x + math.log1p(math.exp(-x)))
    return math.log(math.log1p(math.exp(x)))


class TestGaussHermite(BotorchTestCase):
    def test_moments_of_the_standard_normal(self):
        for dtype in (torch.float, torch.double):
            z, w = gauss_hermite_normal(20, dtype=dtype, device=self.device)
            self.assertEqual(z.shape, torch.Size([20]))
            tol = 1e-5 if dtype == torch.float else 1e-12
            # E[z^k] = (k - 1)!! for even k, 0 for odd k; exact up to degree 39.
            moments = ((0, 1.0), (1, 0.0), (2, 1.0), (3, 0.0), (4, 3.0), (6, 15.0))
            for k, want in moments:
                self.assertAlmostEqual((w * z**k).sum().item(), want, delta=tol * 15)
        with self.assertRaisesRegex(ValueError, "num_points"):
            gauss_hermite_normal(0)


class TestExpectedLogSoftImprovement(BotorchTestCase):
    def test_against_brute_force_monte_carlo(self):
        gen = torch.Generator().manual_seed(0)
        z = torch.randn(2_000_000, generator=gen, dtype=torch.double)
        cases = [(0.0, 1.0, 0.0), (1.5, 0.3, 0.2), (-2.0, 2.0, 1.0), (0.3, 0.05, 0.5)]
        tkw = {"device": self.device, "dtype": torch.double}
        for mean, std, best in cases:
            mc = torch.log(torch.nn.functional.softplus(mean + std * z - best)).mean()
            gh = expected_log_soft_improvement(
                torch.tensor(mean, **tkw), torch.tensor(std, **tkw), best
            )
            # MC standard error is below 2e-3 for these cases.
            self.assertAlmostEqual(gh.item(), mc.item(), delta=5e-3)

    def test_limits_and_shapes(self):
        for dtype in (torch.float, torch.double):
            tkw = {"dtype": dtype, "device": self.device}
            # std = 0: no integral left.
            mean = torch.tensor([-1.0, 0.0, 2.0], **tkw)
            val = expected_log_soft_improvement(mean, torch.zeros(3, **tkw), 0.5)
            want = [_log_softplus_ref(m - 0.5) for m in (-1.0, 0.0, 2.0)]
            for v, w in zip(val.tolist(), want, strict=True):
                self.assertAlmostEqual(v, w, delta=1e-5)
            # Far below the incumbent log softplus(x) -> x: E -> mean - best_f,
            # finite where softplus itself underflows (float32 at -200).
            far = expected_log_soft_improvement(
                torch.tensor([-200.0], **tkw), torch.tensor([1.0], **tkw), 0.0
            )
            self.assertTrue(torch.isfinite(far).all())
            self.assertAlmostEqual(far.item(), -200.0, delta=1e-3)
            # Temperature: (f - y*) / tau.
            a = expected_log_soft_improvement(mean, mean.abs() + 0.1, 0.0, tau=2.0)
            b = expected_log_soft_improvement(mean / 2, (mean.abs() + 0.1) / 2, 0.0)
            self.assertAllClose(a, b)
            # Broadcasting over a batch, gradients finite.
            m = torch.randn(4, 3, **tkw, requires_grad=True)
            s = torch.rand(4, 3, **tkw, requires_grad=True)
            v = expected_log_soft_improvement(m, s, torch.zeros(4, 1, **tkw))
            self.assertEqual(v.shape, torch.Size([4, 3]))
            v.sum().backward()
            self.assertTrue(torch.isfinite(m.grad).all())
            self.assertTrue(torch.isfinite(s.grad).all())
        with self.assertRaisesRegex(ValueError, "tau"):
            expected_log_soft_improvement(torch.zeros(1), torch.ones(1), 0.0, tau=0.0)


class TestMCLogSoftImprovement(BotorchTestCase):
    def test_against_loops(self):
        for dtype in (torch.float, torch.double):
            samples = torch.randn(5, 2, 3, dtype=dtype, device=self.device)
            val = mc_log_soft_improvement(samples, 0.3)
            self.assertEqual(val.shape, torch.Size([2]))
            for b in range(2):
                total = 0.0
                for s in range(5):
                    best = max(samples[s, b, j].item() for j in range(3))
                    total += _log_softplus_ref(best - 0.3)
                self.assertAlmostEqual(val[b].item(), total / 5, delta=1e-5)
            # q = 1 with many samples agrees with the quadrature.
            gen = torch.Generator().manual_seed(1)
            z = torch.randn(400_000, 1, 1, generator=gen, dtype=torch.double)
            z = z.to(self.device)
            mc = mc_log_soft_improvement(0.2 + 0.7 * z, 0.5)
            gh = expected_log_soft_improvement(
                torch.tensor([0.2], dtype=torch.double, device=self.device),
                torch.tensor([0.7], dtype=torch.double, device=self.device),
                0.5,
            )
            self.assertAlmostEqual(mc.item(), gh.item(), delta=5e-3)
        with self.assertRaisesRegex(ValueError, "tau"):
            mc_log_soft_improvement(torch.zeros(2, 1, 1), 0.0, tau=-1.0)


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


class TestEULBOSoftKG(BotorchTestCase):
    def test_fantasy_means_against_dense_conditioning(self):
        # Eval mode, and train mode (the joint phase's) with more points than
        # inducing points (q + S = 9 > m = 6), where GPyTorch's predictive
        # distribution keeps the prior's covariances between the points unless
        # asked for the full covariance.
        X, Y = _data()
        gen = torch.Generator().manual_seed(5)
        for m, mode, q, S in (
            (12, "eval", 1, 4),
            (12, "eval", 3, 5),
            (6, "train", 2, 7),
        ):
            model = EULBOModel(X, Y, num_inducing_points=m)
            fit_elbo(model, FAST)
            getattr(model, mode)()
            pts = torch.rand(q + S, 2, generator=gen, dtype=torch.double)
            eps = torch.randn(S, q, generator=gen, dtype=torch.double)
            with torch.no_grad():
                got = fantasy_means(model, pts.unsqueeze(0), eps).squeeze(0)
                want = _dense_fantasy_means(model, pts, eps)
            self.assertAllClose(got, want, atol=1e-5, rtol=1e-5)
            # The soft-KG term is the sample mean of the max over the batch.
            best = model.train_Y_std.max()
            with torch.no_grad():
                val = soft_kg_log_utility(model, pts.unsqueeze(0), eps, best).item()
            ref = torch.log(torch.nn.functional.softplus(want - best)).amax(-1).mean()
            self.assertAlmostEqual(val, ref.item(), places=5)

    def test_gradients_reach_variational_parameters(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=12)
        fit_elbo(model, FAST)
        model.train()
        pts = torch.rand(1, 4, 2, dtype=torch.double, requires_grad=True)
        eps = torch.randn(3, 1, dtype=torch.double)
        soft_kg_log_utility(model, pts, eps, model.train_Y_std.max()).sum().backward()
        vd = model.model.variational_strategy._variational_distribution
        self.assertGreater(vd.variational_mean.grad.abs().sum().item(), 0)
        self.assertGreater(vd.chol_variational_covar.grad.abs().sum().item(), 0)
        self.assertTrue(torch.isfinite(pts.grad).all())
        self.assertGreater(pts.grad.abs().sum().item(), 0)

    def test_fantasy_means_checks_the_number_of_points(self):
        X, Y = _data()
        model = EULBOModel(X, Y, num_inducing_points=10)
        with self.assertRaisesRegex(ValueError, "q \\+ S"):
            pts, eps = torch.rand(1, 3, 2).double(), torch.randn(4, 1).double()
            fantasy_means(model, pts, eps)


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
        model = EULBOModel(X, Y, num_inducing_points=10)
        fit_elbo(model, FAST)
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
                got = EULBO().expected_log_utility(model, Xt)
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

    def test_q_batch_above_the_inducing_points_in_train_mode(self):
        # q = 8 candidates, m = 5 inducing points: the utility's joint
        # covariance must be q(f)'s in train mode (the joint phase) as in eval
        # mode; with the prior's off-diagonal entries it was wrong and often
        # indefinite.
        for dtype in (torch.float, torch.double):
            X, Y = (t.to(self.device) for t in _data(dtype=dtype))
            model = EULBOModel(X, Y, num_inducing_points=5)
            fit_elbo(model, FAST)
            tkw = {"dtype": dtype, "device": self.device}
            gen = torch.Generator().manual_seed(3)
            Xq = torch.rand(4, 8, 2, generator=gen, dtype=torch.double).to(**tkw)
            base = torch.randn(64, 8, generator=gen, dtype=torch.double).to(**tkw)
            values = {}
            for mode in ("eval", "train"):
                getattr(model, mode)()
                with torch.no_grad():
                    values[mode] = EULBO().expected_log_utility(
                        model, Xq, base_samples=base
                    )
            eps = torch.finfo(dtype).eps
            self.assertAllClose(values["train"], values["eval"], atol=1e4 * eps, rtol=0)

    def test_the_number_of_quadrature_points_is_used(self):
        # Two-point Gauss-Hermite: E g(z) = (g(-1) + g(1)) / 2 for z ~ N(0, 1).
        X, Y = _data()
        options = FAST.replace(utility=UtilityOptions(num_quadrature_points=2))
        model = EULBOModel(X, Y, num_inducing_points=10)
        Xt = torch.tensor([[[0.2, 0.9]], [[1.2, 1.1]]], dtype=torch.double)
        with torch.no_grad():
            got = EULBO().expected_log_utility(
                model,
                Xt,
                num_quadrature_points=options.utility.num_quadrature_points,
            )
            f = model.model(Xt)
        mean, std = f.mean.squeeze(-1), f.variance.sqrt().squeeze(-1)
        best = model.train_Y_std.max()

        def log_u(v):
            return torch.log(torch.nn.functional.softplus(v - best))

        want = (log_u(mean - std) + log_u(mean + std)) / 2
        self.assertAllClose(got, want, atol=1e-10, rtol=1e-8)

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
                got = EULBO().expected_log_utility(model, Xt, base.to(self.device))
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
                EULBO().expected_log_utility(model, Xt)
