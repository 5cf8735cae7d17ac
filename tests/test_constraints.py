r"""Constraints that hold under any optimizer.

``ReflectedInterval`` against hand-computed reflections; MAP fits with it equal to
those with an untransformed box; and every bounded hyperparameter of the package's
kernels (BOCK's ``BOCKKernel``, the runner's kernels) stays in its box under
200 Adam steps with step size 1 on a loss that pushes it outward, and along an
SGLD chain.
"""

from __future__ import annotations

import math

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.optim.utils import get_parameters_and_bounds
from botorch.utils.testing import BotorchTestCase
from gpytorch.constraints import Interval
from gpytorch.kernels import MaternKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood

from benchmarks.bock.kernels import ABLATION_KERNELS
from botorch_ext.constraints import ReflectedInterval
from botorch_ext.kernels import BOCKKernel
from botorch_ext.runner.kernels import KERNELS
from botorch_ext.sgmcmc import sgld
from botorch_ext.sgmcmc.fully_bayesian import HyperparameterPosterior


def _reflect(x: float, lower: float, upper: float) -> float:
    r"""Mirror ``x`` at the ends of ``[lower, upper]`` until it lies inside."""
    while not lower <= x <= upper:
        x = 2 * upper - x if x > upper else 2 * lower - x
    return x


def _constrained(model: torch.nn.Module) -> list[tuple[str, torch.Tensor, Interval]]:
    r"""``(name, value, constraint)`` for every constrained parameter of ``model``."""
    return [
        (name, constraint.transform(param), constraint)
        for name, param, constraint in model.named_parameters_and_constraints()
        if constraint is not None
    ]


def _outward_loss(model: torch.nn.Module, direction: float) -> torch.Tensor:
    r"""``-direction * sum`` of every constrained value, scaled by its box's width
    where it has two ends: ``direction = 1`` pushes every value up, ``-1`` down
    (onto every floor)."""
    total = 0.0
    for _, value, constraint in _constrained(model):
        width = constraint.upper_bound - constraint.lower_bound
        scale = torch.where(torch.isfinite(width), width, 1.0).to(value)
        total = total + (value / scale).sum()
    return -direction * total


class TestReflectedInterval(BotorchTestCase):
    def test_identity_inside_and_reflection_outside(self):
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            box = ReflectedInterval(0.5, 1.0).to(**tkw)
            raw = torch.tensor(
                [0.5, 0.7, 1.0, 1.1, 1.6, 2.3, 0.2, -0.45, -3.3, 17.05], **tkw
            )
            got = box.transform(raw)
            want = [_reflect(x, 0.5, 1.0) for x in raw.double().tolist()]
            tol = 1e-5 if dtype == torch.float else 1e-12
            want = torch.tensor(want, dtype=torch.double)
            self.assertAllClose(got.double().cpu(), want, atol=tol, rtol=0)
            # Inside the box the raw value itself, bit for bit.
            inner = torch.linspace(0.5, 1.0, 101, **tkw)
            self.assertTrue(torch.equal(box.transform(inner), inner))
            self.assertTrue(torch.equal(box.inverse_transform(inner), inner))
            # Slope +-1 everywhere off the ends: no vanishing gradient.
            x = raw[[1, 3, 4, 6, 7]].clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(box.transform(x).sum(), x)
            self.assertEqual(grad.tolist(), [1.0, -1.0, 1.0, -1.0, 1.0])
            self.assertTrue(box.enforced)
            self.assertTrue(box.check_raw(raw))

    def test_all_inside_is_the_identity_in_value_and_gradient(self):
        # The transform returns early when every raw value lies in the box: the
        # same values and unit gradients as the reflection's `where` gives there.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            boxes = (ReflectedInterval(0.5, 1.0), ReflectedInterval(0.025, math.inf))
            for box in boxes:
                box = box.to(**tkw)
                raw = torch.tensor([0.5, 0.61, 0.99, 1.0], **tkw).requires_grad_(True)
                out = box.transform(raw)
                self.assertTrue(torch.equal(out, raw))
                weight = torch.tensor([1.0, -2.0, 3.0, 0.5], **tkw)
                (grad,) = torch.autograd.grad((out * weight).sum(), raw)
                self.assertTrue(torch.equal(grad, weight))
            # One value outside: that one is reflected, the others kept.
            box = ReflectedInterval(0.5, 1.0).to(**tkw)
            raw = torch.tensor([0.7, 1.2], **tkw).requires_grad_(True)
            out = box.transform(raw)
            self.assertAllClose(
                out.detach().double(), torch.tensor([0.7, 0.8], dtype=torch.double)
            )
            (grad,) = torch.autograd.grad(out.sum(), raw)
            self.assertEqual(grad.tolist(), [1.0, -1.0])

    def test_one_sided_boxes_and_bad_input(self):
        floor = ReflectedInterval(0.025, math.inf, initial_value=0.3)
        ceiling = ReflectedInterval(-math.inf, 2.0)
        raw = torch.tensor([-1.0, 0.0, 0.02, 0.5, 3.0], dtype=torch.double)
        for box, lower, upper in ((floor, 0.025, math.inf), (ceiling, -math.inf, 2.0)):
            want = [_reflect(x, lower, upper) for x in raw.tolist()]
            self.assertAllClose(box.transform(raw), torch.tensor(want).to(raw))
        self.assertAlmostEqual(floor.transform(floor.initial_value).item(), 0.3, 6)
        # GPyTorch registers the initial value.
        kernel = MaternKernel(lengthscale_constraint=floor)
        self.assertAlmostEqual(kernel.lengthscale.item(), 0.3, places=6)
        with self.assertRaisesRegex(ValueError, "outside the box"):
            floor.inverse_transform(torch.tensor(0.01))
        with self.assertRaisesRegex(ValueError, "outside the box"):
            ReflectedInterval(0.0, 1.0).inverse_transform(float("nan"))
        with self.assertRaisesRegex(ValueError, r"finite bound; got .*-inf.* inf"):
            ReflectedInterval(-math.inf, math.inf)
        with self.assertRaisesRegex(ValueError, r"`lower_bound`.*\[0\.0, -inf\]"):
            ReflectedInterval(torch.tensor([0.0, -math.inf]), 1.0)
        for args, name in (
            ((math.nan, 1.0), "lower_bound"),
            ((0.0, math.nan), "upper_bound"),
        ):
            with self.assertRaisesRegex(
                ValueError, rf"`{name}` must not be NaN; got nan"
            ):
                ReflectedInterval(*args)
        with self.assertRaisesRegex(ValueError, r"`upper_bound` must not be NaN"):
            ReflectedInterval(0.0, torch.tensor([1.0, math.nan]))
        with self.assertRaisesRegex(ValueError, "empty"):
            ReflectedInterval(1.0, 1.0)
        # Errors and reprs show the bounds, tensor bounds elementwise.
        self.assertEqual(repr(floor), "ReflectedInterval(2.500E-02, inf)")
        vector = ReflectedInterval(torch.tensor([0.0, 0.5]), 1.0)
        self.assertEqual(repr(vector), "ReflectedInterval([0.0, 0.5], 1.000E+00)")
        with self.assertRaisesRegex(ValueError, r"1\.5 outside .* of Reflected"):
            vector.inverse_transform(torch.tensor([0.7, 1.5]))
        # Integer values are taken as the bounds' floating type.
        for box in (floor, vector):
            value = box.transform(torch.tensor([1, 2]))
            self.assertEqual(value.dtype, box.lower_bound.dtype)
            self.assertEqual(value.tolist(), [1.0, 1.0 if box is vector else 2.0])
            inverse = box.inverse_transform(torch.tensor([1, 1]))
            self.assertEqual(inverse.dtype, box.lower_bound.dtype)

    def test_map_fit_equals_the_untransformed_box(self):
        # fit_gpytorch_mll gets the same L-BFGS-B bounds and, inside them, the
        # same objective: the fitted state is identical, whether the optimum is
        # inside the box or (lengthscale pushed to 0.5) on its end.
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(15, 2, generator=gen, dtype=torch.double)
        for frequency, upper in ((3.0, 2.0), (0.5, 0.5)):
            Y = torch.sin(frequency * X).sum(-1, keepdim=True)
            states = []
            for box in (
                Interval(0.05, upper, transform=None, initial_value=0.3),
                ReflectedInterval(0.05, upper, initial_value=0.3),
            ):
                kernel = MaternKernel(nu=2.5, lengthscale_constraint=box)
                model = SingleTaskGP(X, Y, covar_module=kernel)
                mll = ExactMarginalLogLikelihood(model.likelihood, model)
                _, bounds = get_parameters_and_bounds(mll)
                states.append((bounds, fit_gpytorch_mll(mll).model.state_dict()))
            (bounds_a, fit_a), (bounds_b, fit_b) = states
            self.assertEqual(bounds_a, bounds_b)
            for key in fit_a:
                self.assertTrue(torch.equal(fit_a[key], fit_b[key]), key)
            lengthscale = fit_b["covar_module.raw_lengthscale"]
            if upper == 0.5:
                self.assertEqual(lengthscale.item(), 0.5)  # on the end of the box

    def test_hyperparameter_posterior_treats_it_as_an_untransformed_box(self):
        # The SGMCMC sampling variable z (logit of the position in the box) and
        # its density are those of an untransformed box: bock-sgmcmc's chains do
        # not change.
        gen = torch.Generator().manual_seed(1)
        X = torch.rand(12, 2, generator=gen, dtype=torch.double)
        Y = torch.sin(3 * X).sum(-1, keepdim=True)
        posts = []
        for box in (
            Interval(0.05, 2.0, transform=None, initial_value=0.3),
            ReflectedInterval(0.05, 2.0, initial_value=0.3),
        ):
            kernel = MaternKernel(nu=2.5, lengthscale_constraint=box)
            posts.append(
                HyperparameterPosterior(SingleTaskGP(X, Y, covar_module=kernel))
            )
        kinds = [{e["name"]: e["kind"] for e in p.entries} for p in posts]
        self.assertEqual(kinds[0], kinds[1])
        self.assertEqual(kinds[1]["covar_module.raw_lengthscale"], "box")
        z = posts[0].initial_point()
        self.assertAllClose(posts[1].initial_point(), z)
        for shift in (0.0, 1.5, -2.0):
            self.assertAllClose(
                posts[1].log_density(z + shift), posts[0].log_density(z + shift)
            )


class TestBoxesHoldUnderAnyOptimizer(BotorchTestCase):
    def _models(self, dtype):
        tkw = {"device": self.device, "dtype": dtype}
        gen = torch.Generator().manual_seed(2)
        X = torch.rand(10, 3, generator=gen, dtype=torch.double).to(**tkw)
        Y = (X - 0.3).pow(2).sum(-1, keepdim=True)
        models = {}
        # bock-scaled: the BOCK study's ablation kernel (benchmarks/bock/kernels.py).
        factories = {**KERNELS, "bock-scaled": ABLATION_KERNELS["bock-scaled"]}
        for name in ("bock", "bock-scaled", "matern", "matern-scaled"):
            kernel, _ = factories[name](3)
            # GPyTorch's Gaussian likelihood (its noise floor has a softplus
            # transform): BoTorch's default floor has none, see the README.
            models[name] = SingleTaskGP(
                X, Y, covar_module=kernel, likelihood=GaussianLikelihood()
            ).to(**tkw)
        models["cylindrical-defaults"] = SingleTaskGP(
            X,
            Y,
            covar_module=ScaleKernel(BOCKKernel(center_rule="direction")),
            likelihood=GaussianLikelihood(),
        ).to(**tkw)
        return models

    def _assert_inside(self, model, label):
        for name, value, constraint in _constrained(model):
            self.assertTrue(constraint.enforced, f"{label}: {name}")
            self.assertTrue(
                bool(torch.isfinite(value).all()) and constraint.check(value),
                f"{label}: {name} = {value.tolist()} left {constraint}",
            )

    def test_every_bounded_parameter_is_enforced_and_starts_as_before(self):
        for name, factory in KERNELS.items():
            kernel, _ = factory(3)
            for pname, _, constraint in kernel.named_parameters_and_constraints():
                if constraint is not None:
                    self.assertTrue(constraint.enforced, f"{name}: {pname}")
        # The starting values are unchanged: the identity warp, lengthscale 1,
        # the Matern floor's prior mode.
        k = BOCKKernel()
        self.assertEqual((k.alpha.item(), k.beta.item()), (1.0, 1.0))
        self.assertEqual(k.radial_base_kernel.lengthscale.item(), 1.0)
        matern, _ = KERNELS["matern"](20)
        mode = matern.lengthscale_prior.mode.item()
        self.assertAlmostEqual(matern.lengthscale.item(), mode, places=5)

    def test_adam_with_step_size_one_stays_inside(self):
        for dtype in (torch.float, torch.double):
            for label, model in self._models(dtype).items():
                for direction in (1.0, -1.0):
                    params = [p for p in model.parameters() if p.requires_grad]
                    start = [p.detach().clone() for p in params]
                    opt = torch.optim.Adam(params, lr=1.0)
                    for _ in range(200):
                        opt.zero_grad()
                        _outward_loss(model, direction).backward()
                        opt.step()
                        self._assert_inside(model, f"{label}, {direction:+}")
                    # The push did move the raw parameters far out.
                    moved = max(
                        (p.detach() - s).abs().max().item()
                        for p, s in zip(params, start, strict=True)
                    )
                    self.assertGreater(moved, 10.0)

    def test_sgld_chain_stays_inside(self):
        # SGLD on the raw parameter vector, drifting outward with large noise
        # (step size 0.5): every iterate maps into every box.
        for dtype in (torch.float, torch.double):
            for label, model in self._models(dtype).items():
                params = [p for p in model.parameters() if p.requires_grad]
                theta0 = torch.nn.utils.parameters_to_vector(params).detach()

                def gradient(theta, indices=None, model=model, params=params):
                    torch.nn.utils.vector_to_parameters(theta, params)
                    with torch.enable_grad():
                        loss = _outward_loss(model, 1.0)
                        grads = torch.autograd.grad(loss, params, allow_unused=True)
                    flat = [
                        torch.zeros_like(p) if g is None else -g
                        for g, p in zip(grads, params, strict=True)
                    ]
                    return torch.cat([g.reshape(-1) for g in flat]).detach()

                gen = torch.Generator().manual_seed(0)
                result = sgld(gradient, theta0, 0.5, 1, 1, num_steps=200, generator=gen)
                self.assertEqual(result.samples.shape[0], 200)
                self.assertGreater((result.samples - theta0).abs().max().item(), 5.0)
                for sample in result.samples:
                    torch.nn.utils.vector_to_parameters(sample, params)
                    self._assert_inside(model, f"{label}, SGLD")
