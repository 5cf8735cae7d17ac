import itertools
import math
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.sgmcmc import samplers
from botorch_ext.sgmcmc.samplers import (
    SamplerState,
    control_variate_gradient,
    log_posterior_gradient,
    sghmc,
    sgld,
)

MEAN = torch.tensor([1.0, -2.0])
COV = torch.tensor([[1.0, 0.5], [0.5, 2.0]])


def gaussian_gradient(dtype):
    # An exact gradient of log N(MEAN, COV), for any batch of thetas.
    prec = torch.linalg.inv(COV.to(dtype))
    mean = MEAN.to(dtype)

    def gradient(theta, indices=None):
        return -(theta - mean) @ prec

    return gradient


def gaussian_mean_problem(n=200, dtype=torch.float64, seed=0):
    # y_i ~ N(theta, I) with prior N(0, 10^2 I): posterior
    # N(sum(y) / (n + 0.01), I / (n + 0.01)).
    gen = torch.Generator().manual_seed(seed)
    Y = torch.randn(n, 2, generator=gen, dtype=dtype) + torch.tensor([0.5, -1.0])
    grad = log_posterior_gradient(
        lambda t: -0.5 * (t / 10.0).pow(2).sum(-1),
        lambda t, idx: (
            -0.5
            * (Y if idx is None else Y[idx]).sub(t.unsqueeze(-2)).pow(2).sum((-1, -2))
        ),
        num_data=n,
    )
    prec = n + 0.01
    return Y, grad, Y.sum(0) / prec, 1.0 / prec


class TestGradientEstimators(BotorchTestCase):
    def test_log_posterior_gradient_unbiased_over_an_epoch(self):
        for dtype in (torch.float32, torch.float64):
            Y, grad, _, _ = gaussian_mean_problem(n=120, dtype=dtype)
            theta = torch.tensor([0.3, 0.7], dtype=dtype)
            full = grad(theta, None)
            # Closed form: prior term + sum_i (y_i - theta).
            expected = -theta / 100.0 + (Y - theta).sum(0)
            self.assertAllClose(full, expected, rtol=1e-5, atol=1e-4)
            # The minibatches of one reshuffled epoch average to the full value.
            perm = torch.randperm(120, generator=torch.Generator().manual_seed(1))
            avg = torch.stack([grad(theta, idx) for idx in perm.split(30)]).mean(0)
            self.assertAllClose(avg, full, rtol=1e-5, atol=1e-4)
            # A batch of thetas gives one gradient per theta.
            batch = torch.stack([theta, theta + 1])
            self.assertEqual(grad(batch, None).shape, torch.Size([2, 2]))
            self.assertAllClose(grad(batch, None)[0], full)

    def test_control_variates(self):
        Y, grad, _, _ = gaussian_mean_problem(n=100)
        centre = torch.tensor([0.4, -0.9], dtype=torch.float64)
        grad_cv = control_variate_gradient(grad, centre)
        idx = torch.arange(10)
        # Exact at the centre for any minibatch.
        self.assertAllClose(grad_cv(centre, idx), grad(centre, None))
        # Unbiased elsewhere: a partition of the data averages to the full value.
        theta = torch.tensor([1.0, 2.0], dtype=torch.float64)
        avg = torch.stack([grad_cv(theta, i) for i in torch.arange(100).split(10)])
        self.assertAllClose(avg.mean(0), grad(theta, None))
        # Smaller variance than the plain estimator near the centre.
        near = centre + 0.01
        parts = torch.arange(100).split(5)
        var_cv = torch.stack([grad_cv(near, i) for i in parts]).var(0).sum()
        var_plain = torch.stack([grad(near, i) for i in parts]).var(0).sum()
        self.assertLess(var_cv, 1e-3 * var_plain)
        with self.assertRaisesRegex(ValueError, "centre"):
            control_variate_gradient(grad, torch.tensor([math.nan, 0.0]))


class TestSGLD(BotorchTestCase):
    def test_matches_gaussian_target(self):
        # Exact gradients, small step: mean and covariance within tolerance
        # (ULA's covariance bias is O(h)).
        gen = torch.Generator().manual_seed(0)
        res = sgld(
            gaussian_gradient(torch.float64),
            torch.zeros(2, dtype=torch.float64),
            step_size=0.01,
            batch_size=1,
            num_data=1,
            num_steps=40_000,
            thin=2,
            generator=gen,
        )
        burned = res.samples[1000:]
        self.assertEqual(res.num_steps, 40_000)
        self.assertEqual(res.num_gradients, 40_000)
        self.assertEqual(res.samples.shape, torch.Size([20_000, 2]))
        self.assertAllClose(burned.mean(0), MEAN.double(), atol=0.15)
        self.assertAllClose(burned.T.cov(), COV.double(), atol=0.2, rtol=0.1)

    def test_minibatch_and_cv_match_posterior(self):
        Y, grad, mean, var = gaussian_mean_problem(n=200)
        for g in (grad, control_variate_gradient(grad, mean.clone())):
            res = sgld(
                g,
                mean.clone(),
                step_size=1e-4,
                batch_size=20,
                num_data=200,
                num_steps=6000,
                generator=torch.Generator().manual_seed(3),
            )
            s = res.samples[500:]
            self.assertAllClose(s.mean(0), mean, atol=0.03)
            # Within a factor 2 of the posterior variance (SGLD's stochastic
            # gradient noise inflates it).
            ratio = s.var(0) / var
            self.assertTrue(bool(((ratio > 0.5) & (ratio < 2.0)).all()), ratio)

    def test_continuation_equals_one_long_run(self):
        _, grad, mean, _ = gaussian_mean_problem(n=50)
        kwargs = dict(step_size=1e-3, batch_size=7, num_data=50)
        one = sgld(
            grad,
            mean.clone(),
            num_steps=40,
            **kwargs,
            generator=torch.Generator().manual_seed(5),
        )
        gen = torch.Generator().manual_seed(5)
        first = sgld(grad, mean.clone(), num_steps=25, generator=gen, **kwargs)
        second = sgld(grad, first.state, num_steps=15, generator=gen, **kwargs)
        self.assertAllClose(torch.cat([first.samples, second.samples]), one.samples)
        self.assertEqual(second.state.num_steps, 40)

    def test_thinning_counts_along_the_chain(self):
        _, grad, mean, _ = gaussian_mean_problem(n=20)
        gen = torch.Generator().manual_seed(0)
        a = sgld(grad, mean.clone(), 1e-3, 20, 20, num_steps=7, thin=3, generator=gen)
        b = sgld(grad, a.state, 1e-3, 20, 20, num_steps=7, thin=3, generator=gen)
        # Steps 3, 6 | 9, 12: the thinning grid follows the chain, not the run.
        self.assertEqual(a.samples.shape[0], 2)
        self.assertEqual(b.samples.shape[0], 2)

    def test_time_budget(self):
        # A fake clock that advances 0.25 s per reading: the budget of 1 s is
        # checked before each step at 0.25, 0.5, 0.75 (run) and 1.0 (stop), so
        # exactly three steps run, whatever the machine's load.
        ticks = itertools.count()
        with mock.patch.object(
            samplers.time, "perf_counter", lambda: 0.25 * next(ticks)
        ):
            res = sgld(
                gaussian_gradient(torch.float64),
                torch.zeros(2, dtype=torch.float64),
                step_size=0.01,
                batch_size=1,
                num_data=1,
                time_budget=1.0,
            )
        self.assertEqual(res.num_steps, 3)
        # Both limits: the first one reached stops the run.
        res = sgld(
            gaussian_gradient(torch.float64),
            torch.zeros(2, dtype=torch.float64),
            0.01,
            1,
            1,
            num_steps=5,
            time_budget=10.0,
        )
        self.assertEqual(res.num_steps, 5)

    def test_divergence_is_flagged_and_samples_stay_finite(self):
        for dtype in (torch.float32, torch.float64):
            res = sgld(
                gaussian_gradient(dtype),
                torch.zeros(2, dtype=dtype),
                step_size=50.0,
                batch_size=1,
                num_data=1,
                num_steps=2000,
            )
            self.assertTrue(res.state.diverged)
            self.assertLess(res.num_steps, 2000)
            self.assertTrue(bool(torch.isfinite(res.samples).all()))
            self.assertTrue(bool(torch.isfinite(res.state.theta).all()))
            # A diverged chain does not move any more.
            again = sgld(gaussian_gradient(dtype), res.state, 50.0, 1, 1, num_steps=5)
            self.assertEqual(again.num_steps, 0)

    def test_bad_input(self):
        g = gaussian_gradient(torch.float64)
        t = torch.zeros(2, dtype=torch.float64)
        cases = [
            ({"step_size": 0.0}, "step_size"),
            ({"step_size": -1.0}, "step_size"),
            ({"batch_size": 0}, "batch_size"),
            ({"num_data": 0}, "num_data"),
            ({"num_steps": 0}, "num_steps"),
            ({"num_steps": None, "time_budget": 0.0}, "time_budget"),
            ({"num_steps": None}, "num_steps"),
            ({"thin": 0}, "thin"),
        ]
        for change, name in cases:
            kwargs = dict(step_size=0.1, batch_size=1, num_data=1, num_steps=3)
            kwargs.update(change)
            with self.assertRaisesRegex(ValueError, name):
                sgld(g, t, **kwargs)
        with self.assertRaisesRegex(ValueError, "theta"):
            sgld(g, torch.zeros(2, 2), 0.1, 1, 1, num_steps=1)
        with self.assertRaisesRegex(ValueError, "theta"):
            sgld(g, torch.tensor([math.nan, 0.0]), 0.1, 1, 1, num_steps=1)
        with self.assertRaisesRegex(ValueError, "theta"):
            sgld(g, SamplerState(theta=torch.zeros(0)), 0.1, 1, 1, num_steps=1)
        # A gradient of the wrong shape would broadcast silently.
        with self.assertRaisesRegex(ValueError, "`gradient` must return"):
            sgld(lambda t, i=None: torch.zeros(1, 2), t, 0.1, 1, 1, num_steps=1)


class TestSGHMC(BotorchTestCase):
    def test_matches_gaussian_target(self):
        res = sghmc(
            gaussian_gradient(torch.float64),
            torch.zeros(2, dtype=torch.float64),
            step_size=0.01,
            batch_size=1,
            num_data=1,
            num_leapfrog_steps=5,
            friction=0.1,
            num_steps=8000,
            generator=torch.Generator().manual_seed(1),
        )
        # L per sample, plus the first position's gradient of a fresh chain.
        self.assertEqual(res.num_gradients, 5 * 8000 + 1)
        s = res.samples[500:]
        self.assertAllClose(s.mean(0), MEAN.double(), atol=0.15)
        self.assertAllClose(s.T.cov(), COV.double(), atol=0.25, rtol=0.15)

    def test_stationary_covariance_at_the_extremes(self):
        # L = 1: the half kicks make one iteration SGLD with step h / 2 (full
        # kicks would halve the covariance). Friction 1: each leapfrog step
        # replaces the momentum by h g + sqrt(2 h) xi, SGLD with step h (noise
        # sqrt(h) xi would halve it). ULA's bias at these steps is a few percent.
        for L, friction, h in ((1, 0.5, 0.1), (10, 1.0, 0.05)):
            res = sghmc(
                gaussian_gradient(torch.float64),
                MEAN.double().clone(),
                step_size=h,
                batch_size=1,
                num_data=1,
                num_leapfrog_steps=L,
                friction=friction,
                num_steps=60000 // L,
                generator=torch.Generator().manual_seed(2),
            )
            s = res.samples[200 // L :]
            # Within 12% (60,000 leapfrog steps; measured within 8% on seeds 2-4).
            self.assertAllClose(s.T.cov(), COV.double(), atol=0.05, rtol=0.12)

    def test_float32_minibatch(self):
        _, grad, mean, var = gaussian_mean_problem(n=100, dtype=torch.float32)
        res = sghmc(
            grad,
            mean.clone(),
            step_size=1e-4,
            batch_size=10,
            num_data=100,
            num_leapfrog_steps=3,
            num_steps=2000,
            generator=torch.Generator().manual_seed(0),
        )
        self.assertEqual(res.samples.dtype, torch.float32)
        self.assertAllClose(res.samples[200:].mean(0), mean, atol=0.05)

    def test_bad_input(self):
        g = gaussian_gradient(torch.float64)
        t = torch.zeros(2, dtype=torch.float64)
        with self.assertRaisesRegex(ValueError, "num_leapfrog_steps"):
            sghmc(g, t, 0.1, 1, 1, num_leapfrog_steps=0, num_steps=1)
        for friction in (0.0, 1.5, -0.1):
            with self.assertRaisesRegex(ValueError, "friction"):
                sghmc(g, t, 0.1, 1, 1, friction=friction, num_steps=1)
        with self.assertRaisesRegex(ValueError, "step_size"):
            sghmc(g, t, math.nan, 1, 1, num_steps=1)
