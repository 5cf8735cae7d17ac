import math

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.models import (
    expected_log_soft_improvement,
    gauss_hermite_normal,
    mc_log_soft_improvement,
)


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
