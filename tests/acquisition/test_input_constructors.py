import math

import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.objective import LinearMCObjective
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.testing import BotorchTestCase

from botorch_ext.acquisition import qES, qLogSoftPI, qSoftPI, qUCB
from tests.acquisition.helpers import make_gp


class TestInputConstructors(BotorchTestCase):
    def setUp(self):
        super().setUp()
        self.model = make_gp(device=self.device)
        X = self.model.train_inputs[0]
        # Outcomes on a large scale, so that tau scaling is visible.
        self.Y = 100.0 * self.model.train_targets.unsqueeze(-1)
        self.data = SupervisedDataset(
            X, self.Y, feature_names=["x0", "x1"], outcome_names=["y"]
        )

    def _build(self, cls, **kwargs):
        kw = get_acqf_input_constructor(cls)(
            model=self.model, training_data=self.data, **kwargs
        )
        acqf = cls(**kw)
        self.assertIsInstance(acqf, cls)
        return kw, acqf

    def test_every_class_is_registered_by_exact_class(self):
        from botorch.acquisition.input_constructors import (
            ACQF_INPUT_CONSTRUCTOR_REGISTRY,
        )

        for cls in (qUCB, qSoftPI, qLogSoftPI, qES):
            self.assertIn(cls, ACQF_INPUT_CONSTRUCTOR_REGISTRY)
        # The two soft-PI variants take the same arguments and share one.
        self.assertIs(
            get_acqf_input_constructor(qSoftPI), get_acqf_input_constructor(qLogSoftPI)
        )

    def test_qucb(self):
        kw, acqf = self._build(qUCB)
        self.assertEqual(kw["beta"], math.sqrt(3.0))  # [Wilson2017reparam]'s choice
        kw, acqf = self._build(qUCB, beta=0.5, objective_thresholds=None)
        self.assertEqual(acqf.beta, 0.5)
        X = torch.rand(2, 3, 2, device=self.device, dtype=torch.double)
        self.assertEqual(acqf(X).shape, torch.Size([2]))

    def test_soft_pi(self):
        std = self.Y.std().item()
        for cls in (qSoftPI, qLogSoftPI):
            kw, acqf = self._build(cls)
            self.assertAllClose(kw["best_f"], self.Y.max())
            self.assertAlmostEqual(kw["tau"], 0.01 * std, places=10)
            # Explicit values win; objectives enter best_f and the tau scale.
            weights = torch.tensor([-2.0], device=self.device, dtype=torch.double)
            kw, acqf = self._build(cls, objective=LinearMCObjective(weights), tau=0.3)
            self.assertAllClose(kw["best_f"], (-2.0 * self.Y).max())
            self.assertEqual(kw["tau"], 0.3)
            kw, _ = self._build(cls, objective=LinearMCObjective(weights))
            self.assertAlmostEqual(kw["tau"], 0.01 * 2.0 * std, places=10)

    def test_qes(self):
        # Bounds are d (lower, upper) pairs, as BoTorch's constructors take them.
        bounds = [(0.0, 1.0), (0.5, 2.0)]
        kw, acqf = self._build(qES, bounds=bounds, num_representer_points=16, seed=1)
        R = kw["representer_points"]
        self.assertEqual(R.shape, torch.Size([16, 2]))
        self.assertTrue(((R[:, 1] >= 0.5) & (R[:, 1] <= 2.0)).all())
        self.assertAlmostEqual(kw["tau"], 0.01 * self.Y.std().item(), places=10)
        # A tensor is read as ``2 x d`` (optimize_acqf's convention), even at d = 2.
        tensor_bounds = torch.tensor(bounds, dtype=torch.double).T.to(self.device)
        kw2, _ = self._build(
            qES, bounds=tensor_bounds, num_representer_points=16, seed=1
        )
        self.assertAllClose(kw2["representer_points"], R)
        R = torch.rand(5, 2, device=self.device, dtype=torch.double)
        kw, _ = self._build(qES, representer_points=R, tau=0.2)
        self.assertIs(kw["representer_points"], R)
        with self.assertRaisesRegex(ValueError, "`representer_points` or `bounds`"):
            get_acqf_input_constructor(qES)(model=self.model, training_data=self.data)
