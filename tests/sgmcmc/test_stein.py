import torch
from botorch.utils.testing import BotorchTestCase
from torch.func import grad, jacrev

from botorch_ext.sgmcmc.stein import (
    finite_set_stein_discrepancy,
    fssd_test_locations,
    kernel_stein_discrepancy,
)

DTYPES = (torch.float32, torch.float64)


def _imq(x, y, c, beta):
    return (c**2 + ((x - y) ** 2).sum()) ** beta


def _stein_kernel_autograd(x, y, sx, sy, c, beta):
    # Independent of the closed form: every derivative comes from autograd.
    k = _imq(x, y, c, beta)
    gx = grad(_imq, argnums=0)(x, y, c, beta)
    gy = grad(_imq, argnums=1)(x, y, c, beta)
    cross = jacrev(grad(_imq, argnums=0), argnums=1)(x, y, c, beta)
    return sx @ sy * k + sx @ gy + gx @ sy + torch.trace(cross)


def _ksd_loop(x, s, c=1.0, beta=-0.5):
    n = x.shape[0]
    total = sum(
        _stein_kernel_autograd(x[i], x[j], s[i], s[j], c, beta)
        for i in range(n)
        for j in range(n)
    )
    return (total / n**2).sqrt()


def _fssd_loop(x, s, V, c=1.0, beta=-0.5):
    n, d = x.shape
    total = 0.0
    for v in V:
        g = sum(s[i] * _imq(x[i], v, c, beta) for i in range(n)) / n
        g = g + sum(grad(_imq, argnums=0)(x[i], v, c, beta) for i in range(n)) / n
        total = total + (g**2).sum()
    return (total / (d * V.shape[0])).sqrt()


def _normal(n, d, seed, dtype=torch.float64, device=None):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=gen, dtype=torch.float64).to(
        dtype=dtype, device=device
    )


def _three_cases(x):
    # Scores are always those of N(0, I): exact, shifted and over-dispersed samples.
    return {
        "exact": (x, -x),
        "shifted": (x + 1, -(x + 1)),
        "overdispersed": (2 * x, -2 * x),
    }


class TestKernelSteinDiscrepancy(BotorchTestCase):
    def test_against_autograd_double_loop(self):
        x = _normal(7, 3, seed=1, device=self.device)
        # Scores of an unrelated target so that no term cancels.
        s = _normal(7, 3, seed=2, device=self.device) - 0.5 * x
        for c, beta in ((1.0, -0.5), (0.7, -0.2), (2.0, -0.9)):
            expected = _ksd_loop(x, s, c=c, beta=beta)
            got = kernel_stein_discrepancy(x, s, c=c, beta=beta)
            self.assertEqual(got.shape, torch.Size([]))
            self.assertAllClose(got, expected, rtol=1e-10, atol=1e-12)
            for block_size in (1, 2, 3, 7, 100):
                blocked = kernel_stein_discrepancy(
                    x, s, c=c, beta=beta, block_size=block_size
                )
                self.assertAllClose(blocked, got, rtol=1e-12, atol=1e-14)

    def test_ranks_exact_below_biased(self):
        for dtype in DTYPES:
            x = _normal(500, 2, seed=3, dtype=dtype, device=self.device)
            ksd = {
                name: kernel_stein_discrepancy(xs, s).item()
                for name, (xs, s) in _three_cases(x).items()
            }
            self.assertLess(3 * ksd["exact"], ksd["shifted"])
            self.assertLess(3 * ksd["exact"], ksd["overdispersed"])

    def test_decreases_with_n_for_exact_samples(self):
        means = []
        for n in (100, 400, 1600):
            vals = [
                kernel_stein_discrepancy(x, -x).item()
                for x in (_normal(n, 2, seed=10 + r) for r in range(3))
            ]
            means.append(sum(vals) / len(vals))
        # KSD of exact samples is O(n^-1/2): roughly halves when n quadruples.
        self.assertLess(means[1], 0.75 * means[0])
        self.assertLess(means[2], 0.75 * means[1])

    def test_float32_and_blocked_large_n(self):
        x64 = _normal(3000, 2, seed=4, device=self.device) * 1.3 + 0.2
        s64 = -x64
        ref = kernel_stein_discrepancy(x64, s64, block_size=3000)
        blocked = kernel_stein_discrepancy(x64, s64, block_size=500)
        self.assertAllClose(blocked, ref, rtol=1e-9, atol=0.0)
        x32, s32 = x64.float(), s64.float()
        val32 = kernel_stein_discrepancy(x32, s32, block_size=500)
        self.assertEqual(val32.dtype, torch.float32)
        self.assertEqual(val32.device.type, x64.device.type)
        self.assertAllClose(val32.double(), ref, rtol=1e-3, atol=0.0)

    def test_single_sample_and_differentiable(self):
        x = torch.zeros(1, 2, device=self.device, dtype=torch.double)
        # One sample at the mode: k_pi(x, x) = -2 beta d c^(2 beta - 2).
        self.assertAllClose(
            kernel_stein_discrepancy(x, -x),
            torch.tensor(2.0, dtype=torch.double, device=self.device).sqrt(),
        )
        x = _normal(20, 2, seed=5, device=self.device).requires_grad_(True)
        kernel_stein_discrepancy(x, -x).backward()
        self.assertTrue(torch.isfinite(x.grad).all())

    def test_validation(self):
        x = _normal(5, 2, seed=6, device=self.device)
        bad_nan = x.clone()
        bad_nan[2, 1] = float("nan")
        cases = [
            ((x[:0], x[:0]), {}, "samples"),
            ((x[:, :0], x[:, :0]), {}, "samples"),
            ((x, x[:4]), {}, "scores"),
            ((x[:, 0], x[:, 0]), {}, "samples"),
            ((x, x[:, 0]), {}, "scores"),
            ((bad_nan, x), {}, "samples"),
            ((x, bad_nan), {}, "scores"),
            ((x, torch.full_like(x, float("inf"))), {}, "scores"),
            ((x, x.float()), {}, "scores"),
            ((x.long(), x.long()), {}, "samples"),
            ((x.tolist(), x), {}, "samples"),
            ((x, x), {"c": 0.0}, "c"),
            ((x, x), {"c": -1.0}, "c"),
            ((x, x), {"c": float("nan")}, "c"),
            ((x, x), {"beta": 0.0}, "beta"),
            ((x, x), {"beta": -1.0}, "beta"),
            ((x, x), {"beta": 0.5}, "beta"),
            ((x, x), {"beta": float("nan")}, "beta"),
            ((x, x), {"block_size": 0}, "block_size"),
            ((x, x), {"block_size": 2.5}, "block_size"),
        ]
        for args, kwargs, name in cases:
            with self.subTest(name=name, kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, f"`{name}`"):
                    kernel_stein_discrepancy(*args, **kwargs)
        with self.assertRaisesRegex(ValueError, "Gorham and Mackey"):
            kernel_stein_discrepancy(x, x, beta=-2.0)
        with self.assertRaisesRegex(ValueError, "row 2"):
            kernel_stein_discrepancy(bad_nan, x)


class TestFiniteSetSteinDiscrepancy(BotorchTestCase):
    def test_against_direct_loop_fixed_locations(self):
        x = _normal(9, 3, seed=7, device=self.device)
        s = _normal(9, 3, seed=8, device=self.device) - 0.5 * x
        V = _normal(4, 3, seed=9, device=self.device)
        for c, beta in ((1.0, -0.5), (0.5, -0.3)):
            expected = _fssd_loop(x, s, V, c=c, beta=beta)
            got = finite_set_stein_discrepancy(
                x, s, test_locations=V, optimize=False, c=c, beta=beta
            )
            self.assertAllClose(got, expected, rtol=1e-10, atol=1e-12)
            # optimize=False leaves given locations untouched.
            self.assertAllClose(
                fssd_test_locations(x, s, test_locations=V, optimize=False), V
            )

    def test_ranks_like_ksd_and_nonnegative(self):
        for dtype in DTYPES:
            x = _normal(500, 2, seed=11, dtype=dtype, device=self.device)
            fssd = {}
            for name, (xs, s) in _three_cases(x).items():
                val = finite_set_stein_discrepancy(
                    xs, s, generator=torch.Generator().manual_seed(0)
                )
                self.assertEqual(val.dtype, dtype)
                self.assertGreaterEqual(val.item(), 0.0)
                fssd[name] = val.item()
            # Optimized locations also fit noise for exact samples: a smaller
            # margin than for the KSD.
            self.assertLess(2 * fssd["exact"], fssd["shifted"])
            self.assertLess(2 * fssd["exact"], fssd["overdispersed"])

    def test_optimization_does_not_decrease_and_is_reproducible(self):
        x = _normal(300, 3, seed=12, device=self.device)
        for xs, s in _three_cases(x).values():
            kw = {"num_test_locations": 5}
            init = finite_set_stein_discrepancy(
                xs, s, optimize=False, generator=torch.Generator().manual_seed(1), **kw
            )
            opt = finite_set_stein_discrepancy(
                xs, s, generator=torch.Generator().manual_seed(1), **kw
            )
            self.assertGreaterEqual(opt.item(), init.item())
            again = finite_set_stein_discrepancy(
                xs, s, generator=torch.Generator().manual_seed(1), **kw
            )
            self.assertEqual(opt.item(), again.item())
            V = fssd_test_locations(
                xs, s, generator=torch.Generator().manual_seed(1), **kw
            )
            self.assertEqual(V.shape, torch.Size([5, 3]))
            self.assertFalse(V.requires_grad)
            # The returned locations reproduce the optimized statistic.
            self.assertAllClose(
                finite_set_stein_discrepancy(xs, s, test_locations=V, optimize=False),
                opt,
            )
        # Biased samples: Adam strictly improves on the random draw.
        xs, s = x + 1, -(x + 1)
        V0 = fssd_test_locations(
            xs, s, optimize=False, generator=torch.Generator().manual_seed(2)
        )
        init = finite_set_stein_discrepancy(xs, s, test_locations=V0, optimize=False)
        opt = finite_set_stein_discrepancy(xs, s, test_locations=V0)
        self.assertGreater(opt.item(), init.item())

    def test_initial_draw(self):
        x = _normal(400, 2, seed=13, device=self.device) * torch.tensor(
            [0.5, 3.0], dtype=torch.double, device=self.device
        ) + torch.tensor([5.0, -2.0], dtype=torch.double, device=self.device)
        V = fssd_test_locations(
            x,
            -x,
            num_test_locations=2000,
            optimize=False,
            generator=torch.Generator().manual_seed(3),
        )
        # Drawn from the Gaussian fit: mean and spread of the samples.
        self.assertAllClose(V.mean(0), x.mean(0), atol=0.2, rtol=0.0)
        self.assertAllClose(V.std(0), x.std(0), atol=0.0, rtol=0.1)
        # Degenerate samples (n < d, zero variance): the ridge keeps the
        # locations distinct and finite.
        for xs in (_normal(2, 5, seed=14), torch.ones(6, 3, dtype=torch.double)):
            xs = xs.to(self.device)
            V = fssd_test_locations(
                xs, -xs, optimize=False, generator=torch.Generator().manual_seed(4)
            )
            self.assertTrue(torch.isfinite(V).all())
            self.assertGreater(torch.pdist(V).min().item(), 0.0)
            val = finite_set_stein_discrepancy(
                xs, -xs, num_steps=5, generator=torch.Generator().manual_seed(4)
            )
            self.assertTrue(torch.isfinite(val))

    def test_float32_matches_float64(self):
        x = _normal(400, 2, seed=15, device=self.device) + 0.5
        V = _normal(6, 2, seed=16, device=self.device)
        ref = finite_set_stein_discrepancy(x, -x, test_locations=V, optimize=False)
        val = finite_set_stein_discrepancy(
            x.float(), -x.float(), test_locations=V.float(), optimize=False
        )
        self.assertEqual(val.dtype, torch.float32)
        self.assertAllClose(val.double(), ref, rtol=1e-4, atol=0.0)
        # With optimization the paths differ by rounding only.
        ref = finite_set_stein_discrepancy(
            x, -x, generator=torch.Generator().manual_seed(5)
        )
        val = finite_set_stein_discrepancy(
            x.float(), -x.float(), generator=torch.Generator().manual_seed(5)
        )
        self.assertAllClose(val.double(), ref, rtol=0.05, atol=0.0)

    def test_runs_under_no_grad(self):
        x = _normal(50, 2, seed=17, device=self.device) + 1
        gen = torch.Generator().manual_seed(6)
        with torch.no_grad():
            val = finite_set_stein_discrepancy(x, -x, num_steps=10, generator=gen)
        init = finite_set_stein_discrepancy(
            x, -x, optimize=False, generator=torch.Generator().manual_seed(6)
        )
        self.assertGreater(val.item(), init.item())

    def test_validation(self):
        x = _normal(5, 2, seed=18, device=self.device)
        bad_nan = x.clone()
        bad_nan[0, 0] = float("nan")
        V = x[:3].clone()
        cases = [
            ((x[:0], x[:0]), {}, "samples"),
            ((x, x[:4]), {}, "scores"),
            ((x[:, 0], x[:, 0]), {}, "samples"),
            ((bad_nan, x), {}, "samples"),
            ((x, bad_nan), {}, "scores"),
            ((x, x), {"c": 0.0}, "c"),
            ((x, x), {"beta": -1.5}, "beta"),
            ((x, x), {"beta": 0.0}, "beta"),
            ((x, x), {"num_test_locations": 0}, "num_test_locations"),
            ((x, x), {"num_test_locations": 1.5}, "num_test_locations"),
            ((x, x), {"num_steps": -1}, "num_steps"),
            ((x, x), {"num_steps": 2.0}, "num_steps"),
            ((x, x), {"lr": 0.0}, "lr"),
            ((x, x), {"test_locations": V[:, :1]}, "test_locations"),
            ((x, x), {"test_locations": V[:0]}, "test_locations"),
            ((x, x), {"test_locations": V[0]}, "test_locations"),
            ((x, x), {"test_locations": V.float()}, "test_locations"),
            ((x, x), {"test_locations": V * float("inf")}, "test_locations"),
        ]
        for fn in (finite_set_stein_discrepancy, fssd_test_locations):
            for args, kwargs, name in cases:
                with self.subTest(fn=fn.__name__, name=name):
                    with self.assertRaisesRegex(ValueError, f"`{name}`"):
                        fn(*args, **kwargs)
