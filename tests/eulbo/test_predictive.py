r"""``EULBOModel.posterior``'s dense path against ``SingleTaskVariationalGP``'s."""

from __future__ import annotations

import functools
import gc
import pickle

import torch
from botorch.acquisition import qLogExpectedImprovement
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models.approximate_gp import SingleTaskVariationalGP
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import EULBOModel, predictive
from botorch_ext.eulbo.predictive import supports_dense_predictive
from tests.eulbo.helpers import make_data


def _model(dtype: torch.dtype, device: torch.device) -> EULBOModel:
    r"""A model with ``n > m`` and a ``q(v)`` away from the prior's."""
    X, Y = make_data(n=30, d=3, dtype=dtype)
    model = EULBOModel(X.to(device), Y.to(device), num_inducing_points=8)
    model.set_optimal_variational_distribution()
    return model


def _reference(model, X, **kwargs):
    r"""BoTorch's posterior of the same model (GPyTorch's lazy path)."""
    return SingleTaskVariationalGP.posterior(model, X, **kwargs)


class TestDensePosterior(BotorchTestCase):
    def _close(self, a, b, dtype, ulp=2**12):
        eps = torch.finfo(dtype).eps
        scale = max(1.0, b.abs().max().item())
        self.assertLessEqual((a - b).abs().max().item(), ulp * eps * scale)

    def test_matches_botorch_posterior(self):
        for dtype in (torch.float32, torch.float64):
            with self.subTest(dtype=dtype):
                model = _model(dtype, self.device)
                self.assertTrue(supports_dense_predictive(model))
                for shape in ((5, 3), (4, 5, 3), (2, 4, 1, 3)):
                    X = torch.rand(*shape, dtype=dtype, device=self.device)
                    for noise in (False, True):
                        fast = model.posterior(X, observation_noise=noise)
                        ref = _reference(model, X, observation_noise=noise)
                        self.assertEqual(fast.mean.shape, ref.mean.shape)
                        self._close(fast.mean, ref.mean, dtype)
                        self._close(
                            fast.distribution.covariance_matrix,
                            ref.distribution.covariance_matrix,
                            dtype,
                        )

    def test_posterior_transform(self):
        # A ScalarizedPosteriorTransform (weight 2, offset 1) is applied as
        # BoTorch's path applies it: mean 2 m + 1, variance 4 v.
        model = _model(torch.float64, self.device)
        X = torch.rand(4, 3, 3, dtype=torch.float64, device=self.device)
        weights = torch.tensor([2.0], dtype=torch.float64, device=self.device)
        transform = ScalarizedPosteriorTransform(weights, offset=1.0)
        plain = _reference(model, X)
        fast = model.posterior(X, posterior_transform=transform)
        self._close(fast.mean, 2 * plain.mean + 1, torch.float64)
        self._close(fast.variance, 4 * plain.variance, torch.float64)

    def test_covariance_is_lazy_and_sliceable(self):
        # As GPyTorch's: BoTorch's Standardize then scales it lazily, and a
        # block of it can be taken (the one-shot soft KG takes two).
        model = _model(torch.float64, self.device)
        X = torch.rand(2, 6, 3, dtype=torch.float64, device=self.device)
        for noise in (False, True):
            fast = model.posterior(X, observation_noise=noise).distribution
            ref = _reference(model, X, observation_noise=noise).distribution
            self.assertTrue(fast.islazy)
            for rows, cols in ((slice(3, None), slice(3)), (slice(3), slice(3))):
                self._close(
                    fast.lazy_covariance_matrix[..., rows, cols].to_dense(),
                    ref.lazy_covariance_matrix[..., rows, cols].to_dense(),
                    torch.float64,
                )

    def test_gradients_match(self):
        # In X (what an acquisition optimizer uses) and in w (the state).
        for dtype in (torch.float32, torch.float64):
            with self.subTest(dtype=dtype):
                model = _model(dtype, self.device)
                Z = model.model.variational_strategy.inducing_points
                grads = []
                paths = (model.posterior, functools.partial(_reference, model))
                for posterior in paths:
                    X = torch.rand(4, 3, 3, dtype=dtype, device=self.device)
                    X = X.requires_grad_(True) if not grads else grads[0][2]
                    post = posterior(X)
                    value = (post.mean + post.variance.sqrt()).sum()
                    gX, gZ = torch.autograd.grad(value, [X, Z])
                    grads.append((gX, gZ, X))
                self._close(grads[0][0], grads[1][0], dtype, ulp=2**14)
                self._close(grads[0][1], grads[1][1], dtype, ulp=2**14)

    def test_kept_terms_follow_the_state(self):
        # An in-place change of w (an optimizer step, load_state_dict) must not
        # leave the kept terms stale.
        dtype = torch.float64
        model = _model(dtype, self.device)
        X = torch.rand(6, 3, dtype=dtype, device=self.device)
        before = model.posterior(X).mean
        strategy = model.model.variational_strategy
        with torch.no_grad():
            strategy._variational_distribution.variational_mean.mul_(0.5)
        changed = model.posterior(X)
        self._close(changed.mean, _reference(model, X).mean, dtype)
        self.assertGreater((changed.mean - before).abs().max().item(), 1e-3)
        with torch.no_grad():
            strategy.inducing_points.add_(0.05)
            model.likelihood.noise = 0.3
        for noise in (False, True):
            self._close(
                model.posterior(X, observation_noise=noise).variance,
                _reference(model, X, observation_noise=noise).variance,
                dtype,
            )
        other = _model(dtype, self.device)
        other.load_state_dict(model.state_dict())
        self._close(other.posterior(X).mean, model.posterior(X).mean, dtype)

    def test_pickles_and_is_released_after_a_call(self):
        # The runner saves its models with pickle after each step; the kept
        # terms are not part of the model and do not keep it alive.
        model = _model(torch.float64, self.device)
        X = torch.rand(5, 3, dtype=torch.float64, device=self.device)
        mean = model.posterior(X).mean
        clone = pickle.loads(pickle.dumps(model))
        self._close(clone.posterior(X).mean, mean, torch.float64)
        kept = len(predictive._TERMS)
        del model, clone
        gc.collect()
        self.assertEqual(len(predictive._TERMS), kept - 2)

    def test_falls_back_to_botorch(self):
        model = _model(torch.float64, self.device)
        X = torch.rand(5, 3, dtype=torch.float64, device=self.device)
        with self.assertRaises(NotImplementedError):
            model.posterior(X, output_indices=[0])
        # Before q(v) is initialized: GPyTorch's path initializes it.
        fresh = EULBOModel(*make_data(n=30, d=3), num_inducing_points=8)
        fresh.model.variational_strategy.variational_params_initialized.fill_(0)
        self.assertFalse(supports_dense_predictive(fresh))
        fresh.posterior(X)
        self.assertTrue(supports_dense_predictive(fresh))

    def test_optimize_acqf(self):
        # Drop-in: the same batch as BoTorch's path from the same start.
        model = _model(torch.float64, self.device)
        bounds = torch.zeros(2, 3, dtype=torch.float64, device=self.device)
        bounds[1] = 1
        best_f = make_data(n=30, d=3)[1].max()
        batches = []
        for dense in (True, False):
            acqf = qLogExpectedImprovement(model, best_f=best_f)
            if not dense:
                acqf.model = _Reference(model)
            torch.manual_seed(0)
            batch, _ = optimize_acqf(acqf, bounds, q=2, num_restarts=2, raw_samples=16)
            batches.append(batch)
        self.assertLessEqual((batches[0] - batches[1]).abs().max().item(), 1e-6)


class _Reference(torch.nn.Module):
    r"""``model`` with BoTorch's posterior, for the drop-in comparison."""

    def __init__(self, model):
        super().__init__()
        self.inner = model
        self.num_outputs = 1

    def posterior(self, X, **kwargs):
        return _reference(self.inner, X, **kwargs)
