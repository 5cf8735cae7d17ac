import math

import torch
from botorch.acquisition import qProbabilityOfImprovement
from botorch.acquisition.objective import (
    LinearMCObjective,
    ScalarizedPosteriorTransform,
)
from botorch.models import ModelListGP
from botorch.optim import optimize_acqf
from botorch.sampling.normal import IIDNormalSampler, SobolQMCNormalSampler
from botorch.utils.testing import BotorchTestCase
from scipy import integrate, stats

from botorch_ext.acquisition import qLogSoftPI, qSoftPI
from botorch_ext.acquisition.probability_of_improvement import DEFAULT_TAU
from tests.acquisition.helpers import make_gp, make_mock, unbatched_member


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _brute_force_soft_pi(samples, best_f, tau):
    """mean_n max_j sigmoid((s_nj - best_f) / tau) by explicit loops."""
    n, b, q = samples.shape
    out = []
    for i in range(b):
        total = sum(
            max(_sigmoid((samples[k, i, j].item() - best_f) / tau) for j in range(q))
            for k in range(n)
        )
        out.append(total / n)
    return torch.tensor(out, dtype=torch.double)


def _quadrature_soft_pi(mu, sigma, best_f, tau):
    """E[sigmoid((mu + sigma z - best_f) / tau)], z ~ N(0, 1), by quadrature."""

    def integrand(z):
        return _sigmoid((mu + sigma * z - best_f) / tau) * stats.norm.pdf(z)

    # Split at the sigmoid's centre so quad resolves its steep transition.
    z0 = (best_f - mu) / sigma
    left = integrate.quad(integrand, -math.inf, z0, limit=200)[0]
    right = integrate.quad(integrand, z0, math.inf, limit=200)[0]
    return left + right


class TestQSoftPI(BotorchTestCase):
    def test_exact_values_with_mock(self):
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            n, b, q = 6, 3, 2
            samples = torch.randn(n, b, q, 1, **tkw)
            model = make_mock(samples)
            X = torch.zeros(b, q, 1, **tkw)
            sampler = IIDNormalSampler(torch.Size([n]))
            val = qSoftPI(model, best_f=0.2, tau=0.5, sampler=sampler)(X)
            expected = _brute_force_soft_pi(samples[..., 0].double(), 0.2, 0.5)
            self.assertEqual(val.shape, torch.Size([b]))
            self.assertEqual(val.dtype, dtype)
            self.assertAllClose(val.double().cpu(), expected, rtol=1e-5, atol=1e-6)
            log_val = qLogSoftPI(
                model, best_f=0.2, tau=0.5, sampler=IIDNormalSampler(torch.Size([n]))
            )(X)
            self.assertAllClose(
                log_val.double().cpu(), expected.log(), rtol=1e-5, atol=1e-5
            )

    def test_subclass_and_defaults(self):
        model = make_gp(device=self.device)
        soft = qSoftPI(model, 0.3)
        self.assertIsInstance(soft, qProbabilityOfImprovement)
        log_soft = qLogSoftPI(model, 0.3)
        # Log values are not probabilities: no is-a relation, as for BoTorch's
        # qLogExpectedImprovement and qExpectedImprovement.
        self.assertNotIsInstance(log_soft, qProbabilityOfImprovement)
        for acqf in (soft, log_soft):
            self.assertEqual(acqf.tau.item(), torch.tensor(DEFAULT_TAU).item())
            self.assertEqual(acqf.best_f.item(), torch.tensor(0.3).item())
        self.assertEqual(DEFAULT_TAU, 0.01)

    def test_botorch_calling_style(self):
        # qProbabilityOfImprovement(model, best_f, sampler, objective,
        # posterior_transform, X_pending, tau, constraints, eta), positionally.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            model = make_gp(**tkw)
            X = torch.rand(4, 2, 2, **tkw)
            X_pending = torch.rand(1, 2, **tkw)
            weights = torch.tensor([1.5], **tkw)

            def sampler():
                return SobolQMCNormalSampler(torch.Size([64]), seed=0)

            constraints = [lambda Y: Y[..., 0] - 1.0]
            for cls in (qSoftPI, qLogSoftPI):
                short = cls(model, 0.4, sampler())
                self.assertAllClose(
                    short(X), cls(model, best_f=0.4, sampler=sampler())(X)
                )
                self.assertEqual(short.tau.item(), torch.tensor(DEFAULT_TAU).item())
                full = cls(
                    model,
                    0.4,
                    sampler(),
                    LinearMCObjective(weights),
                    None,
                    X_pending,
                    0.2,
                    constraints,
                    0.05,
                )
                keywords = cls(
                    model,
                    best_f=0.4,
                    sampler=sampler(),
                    objective=LinearMCObjective(weights),
                    X_pending=X_pending,
                    tau=0.2,
                    constraints=constraints,
                    eta=0.05,
                )
                self.assertAllClose(full(X), keywords(X))
                self.assertEqual(full.tau.item(), torch.tensor(0.2).item())
                self.assertIs(full._constraints, constraints)
                self.assertEqual(full._eta, 0.05)

    def test_equals_botorch_qpi_at_equal_tau(self):
        # Same samples, same tau: BoTorch's value to the last bit, with and without
        # objective, constraints and pending points; exp(qLogSoftPI) to rounding.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            model = make_gp(**tkw)
            X = torch.rand(5, 3, 2, **tkw)
            best_f = model.train_targets.max().item() - 0.5
            settings = (
                {},
                {"tau": 0.05},
                {
                    "tau": 0.2,
                    "objective": LinearMCObjective(torch.tensor([0.7], **tkw)),
                },
                {
                    "tau": 0.1,
                    "constraints": [lambda Y: Y[..., 0] - 0.2],
                    "eta": 0.05,
                    "X_pending": torch.rand(1, 2, **tkw),
                },
            )
            for kw in settings:
                kw = {"tau": DEFAULT_TAU, **kw}

                def sampler():
                    return SobolQMCNormalSampler(torch.Size([128]), seed=3)

                ours = qSoftPI(model, best_f, sampler(), **kw)(X)
                ref = qProbabilityOfImprovement(model, best_f, sampler(), **kw)(X)
                self.assertEqual(ours.dtype, dtype)
                self.assertTrue(torch.equal(ours, ref), msg=f"{dtype} {kw}")
                log_ours = qLogSoftPI(model, best_f, sampler(), **kw)(X)
                self.assertAllClose(log_ours.exp(), ref, rtol=1e-4, atol=1e-6)

    def test_batched_best_f_and_objective(self):
        n, b, q = 4, 2, 3
        samples = torch.randn(n, b, q, 2, device=self.device, dtype=torch.double)
        weights = torch.tensor([1.0, -0.5], device=self.device, dtype=torch.double)
        best_f = torch.tensor([0.1, -0.3], device=self.device, dtype=torch.double)
        model = make_mock(samples)
        acqf = qSoftPI(
            model,
            best_f=best_f,
            tau=0.3,
            sampler=IIDNormalSampler(torch.Size([n])),
            objective=LinearMCObjective(weights),
        )
        val = acqf(torch.zeros(b, q, 1, device=self.device, dtype=torch.double))
        obj = samples @ weights
        for i in range(b):
            expected = _brute_force_soft_pi(obj[:, i : i + 1], best_f[i].item(), 0.3)
            self.assertAllClose(val[i : i + 1].cpu(), expected)

    def test_q1_matches_quadrature_and_analytic_pi(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            X = torch.rand(5, 1, 2, device=self.device, dtype=dtype)
            post = model.posterior(X)
            mu = post.mean.view(-1).double()
            sigma = post.variance.view(-1).sqrt().double()
            best_f = mu.max().item()
            sampler = SobolQMCNormalSampler(torch.Size([4096]), seed=0)
            val = qSoftPI(model, best_f=best_f, tau=0.05, sampler=sampler)(X).double()
            for i in range(5):
                ref = _quadrature_soft_pi(mu[i].item(), sigma[i].item(), best_f, 0.05)
                self.assertAlmostEqual(val[i].item(), ref, delta=5e-3)
            # tau -> 0 recovers the exact PI, Phi((mu - best_f) / sigma).
            sampler = SobolQMCNormalSampler(torch.Size([4096]), seed=0)
            val = qSoftPI(model, best_f=best_f, tau=1e-5, sampler=sampler)(X).double()
            analytic = torch.distributions.Normal(0.0, 1.0).cdf((mu - best_f) / sigma)
            self.assertAllClose(val.cpu(), analytic.cpu(), atol=5e-3, rtol=0)

    def test_log_variant_matches_exp_in_normal_range(self):
        model = make_gp(device=self.device)
        X = torch.rand(6, 3, 2, device=self.device, dtype=torch.double)
        best_f = model.posterior(X).mean.max().item()
        kw = {"best_f": best_f, "tau": 0.1}
        soft = qSoftPI(
            model, sampler=SobolQMCNormalSampler(torch.Size([256]), seed=1), **kw
        )
        log_soft = qLogSoftPI(
            model, sampler=SobolQMCNormalSampler(torch.Size([256]), seed=1), **kw
        )
        self.assertAllClose(log_soft(X).exp(), soft(X), rtol=1e-10, atol=1e-12)

    def test_gradients_far_below_the_incumbent(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            x0 = torch.full((1, 1, 2), 0.4, device=self.device, dtype=dtype)
            post = model.posterior(x0)
            mu, sigma = post.mean.item(), post.variance.sqrt().item()
            best_f = mu + 60 * sigma  # 60 posterior standard deviations above

            def value_and_grad(acqf, x0=x0):
                x = x0.clone().requires_grad_(True)
                val = acqf(x)
                (grad,) = torch.autograd.grad(val.sum(), x)
                return val, grad

            _, bt_grad = value_and_grad(qProbabilityOfImprovement(model, best_f=best_f))
            self.assertEqual(bt_grad.abs().max().item(), 0.0)
            # At BoTorch's tau the linear-space value underflows to exactly 0 ...
            soft_val, soft_grad = value_and_grad(
                qSoftPI(model, best_f=best_f, tau=1e-3)
            )
            self.assertEqual(soft_val.item(), 0.0)
            self.assertEqual(soft_grad.abs().max().item(), 0.0)
            # ... while the log-space value and gradient stay finite and non-zero,
            # at that tau and at the default one.
            for tau in (1e-3, 0.01):
                log_val, log_grad = value_and_grad(
                    qLogSoftPI(model, best_f=best_f, tau=tau)
                )
                self.assertTrue(torch.isfinite(log_val).all())
                self.assertTrue(torch.isfinite(log_grad).all())
                self.assertGreater(log_grad.abs().max().item(), 0.0)
                # log value ~ -(60 sigma - sigma max_k z_k) / tau, max_k z_k < 10.
                self.assertLess(log_val.item(), -50 * sigma / tau)

    def test_constraints(self):
        n, b, q = 4, 2, 2
        samples = torch.randn(n, b, q, 2, device=self.device, dtype=torch.double)
        model = make_mock(samples)
        X = torch.zeros(b, q, 1, device=self.device, dtype=torch.double)
        objective = LinearMCObjective(torch.tensor([1.0, 0.0]).to(samples))
        kw = {"best_f": 0.0, "tau": 0.5, "objective": objective}
        for cls in (qSoftPI, qLogSoftPI):
            free = cls(model, sampler=IIDNormalSampler(torch.Size([n])), **kw)(X)
            feasible = cls(
                model,
                sampler=IIDNormalSampler(torch.Size([n])),
                constraints=[lambda Y: -torch.ones_like(Y[..., 0])],
                **kw,
            )(X)
            infeasible = cls(
                model,
                sampler=IIDNormalSampler(torch.Size([n])),
                constraints=[lambda Y: torch.ones_like(Y[..., 0])],
                **kw,
            )(X)
            self.assertAllClose(feasible, free, atol=1e-6, rtol=1e-6)
            ref = free.exp() if cls is qLogSoftPI else free
            inf = infeasible.exp() if cls is qLogSoftPI else infeasible
            self.assertTrue((inf < 1e-100 * ref + 1e-100).all())

    def test_x_pending_and_batched_model(self):
        # A batched model with a batched best_f: member i is scored against
        # best_f[i] exactly as the unbatched model built from it (q = 2 equals the
        # batch size, so a best_f aligned with q instead would broadcast silently).
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device, batch_shape=(2,))
            X = torch.rand(3, 1, 2, 2, device=self.device, dtype=dtype)
            best_f = model.train_targets.amax(dim=-1) + torch.tensor([-0.3, 0.2]).to(X)
            tol = 1e-5 if dtype == torch.float else 1e-10
            for cls in (qSoftPI, qLogSoftPI):
                sampler = SobolQMCNormalSampler(torch.Size([256]), seed=0)
                val = cls(model, best_f=best_f, tau=0.1, sampler=sampler)(X)
                self.assertEqual(val.shape, torch.Size([3, 2]))
                for i in range(2):
                    member = unbatched_member(model, i)
                    sampler = SobolQMCNormalSampler(torch.Size([256]), seed=0)
                    want = cls(member, best_f=best_f[i], tau=0.1, sampler=sampler)(
                        X[:, 0]
                    )
                    self.assertAllClose(val[:, i], want, atol=tol, rtol=tol)
        model = make_gp(device=self.device)
        X = torch.rand(3, 2, 2, device=self.device, dtype=torch.double)
        X_pending = torch.rand(2, 2, device=self.device, dtype=torch.double)
        for cls in (qSoftPI, qLogSoftPI):
            pending = cls(
                model,
                best_f=0.5,
                sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0),
                X_pending=X_pending,
            )
            plain = cls(
                model,
                best_f=0.5,
                sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0),
            )
            joint = torch.cat([X, X_pending.expand(3, 2, 2)], dim=-2)
            self.assertAllClose(pending(X), plain(joint))

    def test_bad_input(self):
        model = make_gp(device=self.device)
        for cls in (qSoftPI, qLogSoftPI):
            for tau in (0.0, -1.0, float("nan")):
                with self.assertRaisesRegex(ValueError, "`tau`"):
                    cls(model, best_f=0.0, tau=tau)
            with self.assertRaisesRegex(ValueError, "`best_f`"):
                cls(model, best_f=float("nan"))
            X = torch.full(
                (1, 1, 2), float("nan"), device=self.device, dtype=torch.double
            )
            with self.assertRaisesRegex(ValueError, "NaN"):
                cls(model, best_f=0.0)(X)

    def test_optimize_acqf(self):
        for dtype in (torch.float, torch.double):
            model = make_gp(dtype=dtype, device=self.device)
            bounds = torch.tensor(
                [[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=dtype
            )
            best_f = model.train_targets.max().item()
            for cls in (qSoftPI, qLogSoftPI):
                acqf = cls(
                    model,
                    best_f=best_f,
                    sampler=SobolQMCNormalSampler(torch.Size([64])),
                )
                for q, sequential in ((1, False), (3, False), (3, True)):
                    cand, val = optimize_acqf(
                        acqf, bounds, q=q, num_restarts=2, raw_samples=32,
                        sequential=sequential,
                    )  # fmt: skip
                    self.assertEqual(cand.shape, torch.Size([q, 2]))
                    self.assertTrue(((cand >= 0) & (cand <= 1)).all())
                    self.assertTrue(torch.isfinite(val).all())

    def test_posterior_transform_matches_linear_objective(self):
        model = ModelListGP(
            make_gp(device=self.device), make_gp(device=self.device, seed=1)
        )
        weights = torch.tensor([0.5, 1.0], device=self.device, dtype=torch.double)
        X = torch.rand(3, 2, 2, device=self.device, dtype=torch.double)
        for cls in (qSoftPI, qLogSoftPI):
            kw = {"best_f": 0.3, "tau": 0.2}
            via_pt = cls(
                model,
                sampler=SobolQMCNormalSampler(torch.Size([4096])),
                posterior_transform=ScalarizedPosteriorTransform(weights),
                **kw,
            )(X)
            via_obj = cls(
                model,
                sampler=SobolQMCNormalSampler(torch.Size([4096])),
                objective=LinearMCObjective(weights),
                **kw,
            )(X)
            self.assertAllClose(via_pt, via_obj, atol=1e-2, rtol=1e-2)
