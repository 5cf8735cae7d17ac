import math

import torch
from botorch.models import SingleTaskGP
from botorch.utils.testing import BotorchTestCase

from botorch_ext.optim import TurboState


class TestTurboState(BotorchTestCase):
    def test_defaults(self):
        s = TurboState(dim=20, batch_size=4)
        self.assertEqual(s.length, 0.8)
        self.assertEqual(s.length_min, 0.5**7)
        self.assertEqual(s.length_max, 1.6)
        self.assertEqual(s.failure_tolerance, 5)  # ceil(max(4/4, 20/4))
        self.assertEqual(TurboState(dim=2, batch_size=1).failure_tolerance, 4)
        self.assertEqual(TurboState(dim=10, batch_size=3).failure_tolerance, 4)

    def test_update_rules(self):
        s = TurboState(dim=2, batch_size=1, success_tolerance=2)
        s.update(torch.tensor([1.0]))  # first batch beats -inf
        self.assertEqual((s.success_counter, s.best_value), (1, 1.0))
        s.update(torch.tensor([2.0]))  # second success: the box doubles
        self.assertEqual((s.length, s.success_counter), (1.6, 0))
        # Within 1e-3 |best| of the best: a failure.
        s.update(torch.tensor([2.0005], dtype=torch.double))
        self.assertEqual((s.failure_counter, s.best_value), (1, 2.0005))
        for _ in range(3):
            s.update(torch.tensor([0.0]))
        self.assertEqual((s.length, s.failure_counter), (0.8, 0))  # halved
        while not s.restart_triggered:
            s.update(torch.tensor([-1.0]))
        self.assertLess(s.length, s.length_min)
        self.assertEqual(s.length, 0.8 / 2**7)

    def test_bounds(self):
        for dtype in (torch.float, torch.double):
            x = torch.tensor([0.5, 0.5, 0.05], dtype=dtype, device=self.device)
            s = TurboState(dim=3, length=0.4)
            box = s.bounds(x)
            self.assertAllClose(box[0], torch.tensor([0.3, 0.3, 0.0]).to(x))
            self.assertAllClose(box[1], torch.tensor([0.7, 0.7, 0.25]).to(x))
            ls = torch.tensor([1.0, 2.0, 4.0], dtype=dtype)
            box = s.bounds(torch.full((3,), 0.5, dtype=dtype), lengthscale=ls)
            side = box[1] - box[0]
            # Proportional to the lengthscales, geometric mean = length.
            self.assertAllClose(side / side[0], ls)
            self.assertAlmostEqual(side.log().mean().exp().item(), 0.4, places=5)

    def test_bounds_from_models(self):
        X = torch.rand(10, 3, dtype=torch.double)
        Y = X.sum(-1, keepdim=True)
        model = SingleTaskGP(X, Y)
        model.covar_module.lengthscale = torch.tensor([[0.1, 0.2, 0.4]])
        s = TurboState(dim=3, length=0.2)
        side = s.bounds(torch.full((3,), 0.5, dtype=torch.double), model)
        side = side[1] - side[0]
        self.assertAllClose(side / side[0], torch.tensor([1.0, 2.0, 4.0]).double())

    def test_bounds_from_variational_and_isotropic_models(self):
        # BoTorch's SingleTaskVariationalGP keeps its kernel on `.model`; an
        # isotropic lengthscale gives the cube of side `length`.
        from botorch.models import SingleTaskVariationalGP
        from gpytorch.kernels import MaternKernel, RBFKernel

        X = torch.rand(10, 3, dtype=torch.double)
        Y = X.sum(-1, keepdim=True)
        center = torch.full((3,), 0.5, dtype=torch.double)
        s = TurboState(dim=3, length=0.2)
        ard = RBFKernel(ard_num_dims=3).to(X)
        ard.lengthscale = torch.tensor([[0.1, 0.2, 0.4]])
        svgp = SingleTaskVariationalGP(X, Y, covar_module=ard)
        self.assertFalse(hasattr(svgp, "covar_module"))
        box = s.bounds(center, svgp)
        side = box[1] - box[0]
        self.assertAllClose(side / side[0], torch.tensor([1.0, 2.0, 4.0]).double())
        self.assertAlmostEqual(side.log().mean().exp().item(), 0.2, places=12)
        isotropic = SingleTaskGP(X, Y, covar_module=MaternKernel().to(X))
        box = s.bounds(center, isotropic)
        self.assertAllClose(box, torch.tensor([[0.4] * 3, [0.6] * 3]).double())

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "dim"):
            TurboState(dim=0)
        with self.assertRaisesRegex(ValueError, "batch_size"):
            TurboState(dim=2, batch_size=0)
        with self.assertRaisesRegex(ValueError, "length_min <= length"):
            TurboState(dim=2, length=2.0)
        s = TurboState(dim=2)
        with self.assertRaisesRegex(ValueError, "Y_next"):
            s.update(torch.tensor([math.nan]))
        with self.assertRaisesRegex(ValueError, "Y_next"):
            s.update(torch.tensor([]))
        with self.assertRaisesRegex(ValueError, "x_center"):
            s.bounds(torch.zeros(3))
        with self.assertRaisesRegex(ValueError, "lengthscale"):
            s.bounds(torch.zeros(2), lengthscale=torch.tensor([1.0, -1.0]))

    def test_values_that_would_silently_break_the_region_are_refused(self):
        tkw = {"device": self.device, "dtype": torch.double}
        # A best value of NaN (the max of data with a failed point) made every
        # later batch a failure; +inf too.
        for bad in (math.nan, math.inf, "0"):
            with self.assertRaisesRegex(ValueError, "`best_value`.*got"):
                TurboState(dim=2, best_value=bad)
        self.assertEqual(TurboState(dim=2, best_value=-math.inf).best_value, -math.inf)
        from_tensor = TurboState(dim=2, best_value=torch.tensor(1.5, **tkw))
        self.assertEqual(from_tensor.best_value, 1.5)  # Y.max() works, as a float
        self.assertIs(type(from_tensor.best_value), float)
        s = TurboState(dim=2)
        with self.assertRaisesRegex(ValueError, "without NaN or \\+inf"):
            s.update(torch.tensor([math.inf], **tkw))
        s.update(torch.tensor([-math.inf, 1.0], **tkw))  # -inf is just a bad value
        self.assertEqual(s.best_value, 1.0)
        # An incumbent in the problem's own units gave a zero-width box, a NaN
        # one a NaN box.
        for center in ([3.0, -2.0], [math.nan, 0.5], [1.0 + 1e-9, 0.5]):
            with self.assertRaisesRegex(ValueError, "`x_center` must lie in the unit"):
                s.bounds(torch.tensor(center, **tkw))
        box = s.bounds(torch.tensor([0.0, 1.0], **tkw))  # the cube's ends are in
        self.assertEqual(box.tolist(), [[0.0, 0.6], [0.4, 1.0]])
        with self.assertRaisesRegex(ValueError, "finite, positive"):
            s.bounds(
                torch.full((2,), 0.5, **tkw),
                lengthscale=torch.tensor([1.0, math.inf], **tkw),
            )

    def test_a_fully_bayesian_model_needs_explicit_lengthscales(self):
        from botorch.exceptions.errors import UnsupportedError

        from botorch_ext.sgmcmc import SGMCMCFullyBayesianSingleTaskGP

        X = torch.rand(8, 2, device=self.device, dtype=torch.double)
        model = SGMCMCFullyBayesianSingleTaskGP(X, X.sum(-1, keepdim=True))
        model.load_hyperparameter_samples(
            {n: p.detach().expand(3, *p.shape) for n, p in model.named_parameters()}
        )
        s = TurboState(dim=2)
        with self.assertRaisesRegex(
            UnsupportedError, "SGMCMCFullyBayesian.*`lengthscale`"
        ):
            s.bounds(X[0], model=model)
        ls = model.covar_module.lengthscale.median(0).values
        self.assertEqual(s.bounds(X[0], model=model, lengthscale=ls).shape, (2, 2))


class TestKernelLengthscale(BotorchTestCase):
    def test_follows_base_kernels(self):
        from gpytorch.kernels import LinearKernel, RBFKernel, ScaleKernel

        from botorch_ext.kernels.utils import kernel_lengthscale

        inner = RBFKernel(ard_num_dims=3)
        inner.lengthscale = torch.tensor([[0.1, 0.2, 0.4]])
        self.assertTrue(
            torch.equal(kernel_lengthscale(ScaleKernel(inner)), inner.lengthscale)
        )
        self.assertEqual(kernel_lengthscale(ScaleKernel(RBFKernel())).shape, (1, 1))
        self.assertIsNone(kernel_lengthscale(ScaleKernel(LinearKernel())))
        self.assertIsNone(kernel_lengthscale(None))
