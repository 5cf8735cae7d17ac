import warnings

import torch
from botorch.models import SingleTaskGP
from botorch.models.utils.inducing_point_allocators import (
    GreedyImprovementReduction,
    GreedyVarianceReduction,
)
from botorch.utils.testing import BotorchTestCase
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel

from botorch_ext.eulbo import EULBOModel
from botorch_ext.eulbo.inducing import (
    LowMemoryGreedyImprovementReduction,
    LowMemoryGreedyVarianceReduction,
    greedy_pivots,
)


class RecordingKernel(ScaleKernel):
    r"""A ScaleKernel that records the row counts of each full (non-diagonal) call."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[int, int]] = []

    def forward(self, x1, x2, diag=False, **params):
        if not diag:
            self.calls.append((x1.shape[-2], x2.shape[-2]))
        return super().forward(x1, x2, diag=diag, **params)


def _kernel(d, tkw, base=RBFKernel):
    kernel = ScaleKernel(base(ard_num_dims=d)).to(**tkw)
    kernel.base_kernel.lengthscale = torch.linspace(0.2, 0.6, d, **tkw)
    kernel.outputscale = 1.7
    return kernel


class TestGreedyPivots(BotorchTestCase):
    def test_same_points_as_botorch(self):
        # BoTorch's allocators build the full kernel matrix; the rows computed on
        # demand must give the same greedy choice, in the same order.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            for seed, (n, d, m), base in (
                (0, (200, 3, 25), RBFKernel),
                (1, (150, 6, 40), MaternKernel),
                (2, (60, 2, 60), RBFKernel),  # m = n: stops early at low rank
            ):
                if seed == 2 and dtype == torch.float:
                    # Near rank deficiency the conditional variances left are a
                    # few float32 ulps of the outputscale: both versions' late
                    # picks are then decided by rounding (they part at pick 39).
                    continue
                torch.manual_seed(seed)
                X = torch.rand(n, d, **tkw)
                kernel = _kernel(d, tkw, base)
                with self.subTest(dtype=dtype, seed=seed, rule="variance"):
                    expected = GreedyVarianceReduction().allocate_inducing_points(
                        X, kernel, m, torch.Size([])
                    )
                    got = LowMemoryGreedyVarianceReduction().allocate_inducing_points(
                        X, kernel, m, torch.Size([])
                    )
                    self.assertEqual(got.shape, expected.shape)
                    self.assertTrue(torch.equal(got, expected))
                Y = torch.sin(6 * X).sum(-1, keepdim=True)
                previous = SingleTaskGP(X, Y)
                with self.subTest(dtype=dtype, seed=seed, rule="improvement"):
                    expected = GreedyImprovementReduction(
                        previous, maximize=True
                    ).allocate_inducing_points(X, kernel, m, torch.Size([]))
                    got = LowMemoryGreedyImprovementReduction(
                        previous, maximize=True
                    ).allocate_inducing_points(X, kernel, m, torch.Size([]))
                    self.assertTrue(torch.equal(got, expected))

    def test_rows_only(self):
        # The whole point: no n x n kernel call, only the picked points' rows.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            X = torch.rand(300, 4, **tkw)
            kernel = RecordingKernel(RBFKernel()).to(**tkw)
            Z = greedy_pivots(X, kernel, 20, torch.ones(300, **tkw))
            self.assertEqual(Z.shape, torch.Size([20, 4]))
            self.assertEqual(kernel.calls, [(1, 300)] * 19)
            # BoTorch's allocator, for contrast, evaluates the full matrix.
            kernel.calls.clear()
            GreedyVarianceReduction().allocate_inducing_points(
                X, kernel, 20, torch.Size([])
            )
            self.assertIn((300, 300), kernel.calls)

    def test_first_pick_is_the_best_score(self):
        # With a constant kernel diagonal, the first pick is the best quality.
        tkw = {"device": self.device, "dtype": torch.double}
        X = torch.rand(50, 2, **tkw)
        quality = torch.rand(50, **tkw)
        Z = greedy_pivots(X, _kernel(2, tkw), 5, quality)
        self.assertTrue(torch.equal(Z[0], X[quality.argmax()]))
        # Picks are distinct training points.
        self.assertEqual(len({tuple(z.tolist()) for z in Z}), 5)

    def test_bad_input(self):
        tkw = {"device": self.device, "dtype": torch.double}
        kernel = _kernel(2, tkw)
        with self.assertRaisesRegex(ValueError, r"`inputs` must be n x d"):
            greedy_pivots(torch.rand(2, 5, 2, **tkw), kernel, 3, torch.ones(5, **tkw))
        with self.assertRaisesRegex(ValueError, r"`max_length` must be at least 1"):
            greedy_pivots(torch.rand(5, 2, **tkw), kernel, 0, torch.ones(5, **tkw))
        with self.assertRaisesRegex(ValueError, r"`quality_scores` must have"):
            greedy_pivots(torch.rand(5, 2, **tkw), kernel, 3, torch.ones(4, **tkw))

    def test_batched_inputs_use_botorch(self):
        tkw = {"device": self.device, "dtype": torch.double}
        X = torch.rand(3, 40, 2, **tkw)
        kernel = ScaleKernel(RBFKernel(batch_shape=torch.Size([3]))).to(**tkw)
        got = LowMemoryGreedyVarianceReduction().allocate_inducing_points(
            X, kernel, 10, torch.Size([3])
        )
        expected = GreedyVarianceReduction().allocate_inducing_points(
            X, kernel, 10, torch.Size([3])
        )
        self.assertTrue(torch.equal(got, expected))
        # Unbatched inputs and kernel with a batch shape: BoTorch's unbatched case.
        X2, kernel2 = X[0], _kernel(2, tkw)
        got = LowMemoryGreedyVarianceReduction().allocate_inducing_points(
            X2, kernel2, 10, torch.Size([2])
        )
        expected = GreedyVarianceReduction().allocate_inducing_points(
            X2, kernel2, 10, torch.Size([2])
        )
        self.assertEqual(got.shape, expected.shape)
        self.assertTrue(torch.equal(got, expected))


class TestEULBOModelAllocates(BotorchTestCase):
    def test_default_allocators(self):
        # A fresh model (no previous model) and a grown one use the row-wise rules:
        # the same points as BoTorch's allocators on the model's own kernel.
        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            torch.manual_seed(0)
            X = torch.rand(80, 3, **tkw)
            Y = torch.sin(5 * X).sum(-1, keepdim=True)
            model = EULBOModel(X, Y, num_inducing_points=20)
            Z = model.model.variational_strategy.inducing_points.detach()
            kernel = model.model.covar_module
            expected = GreedyVarianceReduction().allocate_inducing_points(
                X, kernel, 20, torch.Size([])
            )
            self.assertTrue(torch.equal(Z, expected))


class TestChunkedExpectedImprovementQuality(BotorchTestCase):
    def test_agrees_with_botorch(self):
        from botorch.models.utils.inducing_point_allocators import (
            ExpectedImprovementQualityFunction,
        )

        from botorch_ext.eulbo.inducing import ChunkedExpectedImprovementQuality

        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            torch.manual_seed(0)
            X = torch.rand(30, 2, **tkw)
            model = SingleTaskGP(X, torch.sin(5 * X).sum(-1, keepdim=True))
            inputs = torch.rand(97, 2, **tkw)
            for maximize in (True, False):
                expected = ExpectedImprovementQualityFunction(model, maximize)(inputs)
                for chunk_size in (1, 10, 97, 1000):
                    with self.subTest(dtype=dtype, max=maximize, chunk=chunk_size):
                        got = ChunkedExpectedImprovementQuality(
                            model, maximize, chunk_size=chunk_size
                        )(inputs)
                        self.assertEqual(got.shape, torch.Size([97]))
                        # Per-point posteriors: equal up to the batched algebra's
                        # rounding, relative to the scores' scale (the variance is
                        # a difference of two terms, so a few digits go).
                        tol = 1000 * torch.finfo(dtype).eps * expected.abs().max()
                        self.assertLessEqual((got - expected).abs().max(), tol)
            with self.assertRaisesRegex(ValueError, r"`chunk_size` must be"):
                ChunkedExpectedImprovementQuality(model, True, chunk_size=0)

    def test_svgp_posterior_in_chunks(self):
        # An EULBOModel's posterior on all inputs is joint (n x n); in chunks it
        # never sees more than chunk_size points at once.
        tkw = {"device": self.device, "dtype": torch.double}
        torch.manual_seed(0)
        X = torch.rand(40, 2, **tkw)
        previous = EULBOModel(X, X.sum(-1, keepdim=True), num_inducing_points=10)
        seen = []
        original = previous.posterior

        def recording_posterior(x, *args, **kwargs):
            seen.append(x.shape[-2])
            return original(x, *args, **kwargs)

        previous.posterior = recording_posterior
        from botorch_ext.eulbo.inducing import ChunkedExpectedImprovementQuality

        ChunkedExpectedImprovementQuality(previous, True, chunk_size=16)(X)
        self.assertEqual(seen, [16, 16, 8])


class TestWithBoTorchSVGP(BotorchTestCase):
    def test_single_task_variational_gp(self):
        # Drop-in for BoTorch's own SVGP: the same inducing points as its default.
        from botorch.models import SingleTaskVariationalGP

        for dtype in (torch.float, torch.double):
            tkw = {"device": self.device, "dtype": dtype}
            torch.manual_seed(0)
            X = torch.rand(50, 3, **tkw)
            Y = X.sum(-1, keepdim=True)
            points = {}
            for name, allocator in (
                ("botorch", GreedyVarianceReduction()),
                ("rows", LowMemoryGreedyVarianceReduction()),
            ):
                torch.manual_seed(1)
                with warnings.catch_warnings():
                    # BoTorch's advice to fix allocated points; not the subject here.
                    warnings.simplefilter("ignore", UserWarning)
                    model = SingleTaskVariationalGP(
                        X, Y, inducing_points=12, inducing_point_allocator=allocator
                    )
                strategy = model.model.variational_strategy
                points[name] = strategy.inducing_points.detach()
            self.assertEqual(points["rows"].shape, torch.Size([12, 3]))
            self.assertTrue(torch.equal(points["rows"], points["botorch"]))


class TestDocumentedDefaults(BotorchTestCase):
    def test_defaults(self):
        from botorch_ext.eulbo.inducing import (
            PIVOT_EPSILON,
            QUALITY_CHUNK,
            ChunkedExpectedImprovementQuality,
        )

        self.assertEqual(QUALITY_CHUNK, 1024)
        self.assertEqual(PIVOT_EPSILON, 1e-6)  # BoTorch's stopping threshold
        X = torch.rand(5, 1, device=self.device, dtype=torch.double)
        quality = ChunkedExpectedImprovementQuality(SingleTaskGP(X, X), True)
        self.assertEqual(quality.chunk_size, QUALITY_CHUNK)
