r"""``Snapshot``, the one save/restore of the EULBO's fits, and paths that use it."""

import math
import warnings
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import EULBO, EULBOModel, EULBOOptions, fit_elbo, warm_start
from botorch_ext.eulbo.adam import BestState
from botorch_ext.eulbo.joint import JointProblem, lbfgs_joint_phase
from botorch_ext.eulbo.snapshot import Snapshot
from tests.eulbo.helpers import FAST, make_data

DTYPES = (torch.float, torch.double)


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def _assert_state(test, model, state):
    current = model.state_dict()
    test.assertEqual(set(current), set(state))
    for key, value in state.items():
        test.assertTrue(torch.equal(current[key], value), key)


class TestSnapshot(BotorchTestCase):
    def test_a_module_snapshot_restores_parameters_and_buffers(self):
        for dtype in DTYPES:
            X, Y = make_data(n=20, dtype=dtype)
            model = EULBOModel(X, Y, num_inducing_points=6)
            before = _state(model)
            snapshot = Snapshot(model)
            buffer = model.model.variational_strategy.variational_params_initialized
            for _ in range(2):  # the saved copy survives a restore
                with torch.no_grad():
                    for p in model.parameters():
                        p.add_(1.0)
                    buffer.fill_(1 - int(buffer))
                snapshot.restore()
                _assert_state(self, model, before)
                self.assertEqual(
                    model.state_dict()["likelihood.noise_covar.raw_noise"].dtype, dtype
                )

    def test_a_tensor_snapshot_restores_only_its_tensors_in_place(self):
        for dtype in DTYPES:
            saved, other = torch.randn(3, dtype=dtype), torch.randn(2, dtype=dtype)
            values, other_values = saved.clone(), other.clone()
            snapshot = Snapshot([saved])
            saved.add_(1.0)
            other.add_(1.0)
            self.assertAlmostEqual(snapshot.distance(), math.sqrt(3.0), places=5)
            pointer = saved.data_ptr()
            snapshot.restore()
            self.assertTrue(torch.equal(saved, values))
            self.assertEqual(saved.data_ptr(), pointer)
            self.assertTrue(torch.equal(other, other_values + 1.0))
            self.assertEqual(snapshot.distance(), 0.0)

    def test_offer_keeps_the_best_state(self):
        for dtype in DTYPES:
            t = torch.zeros(2, dtype=dtype)
            best = Snapshot([t], value=1.0)
            self.assertFalse(best.offer(0.5))  # lower: not saved
            t.fill_(2.0)
            self.assertTrue(best.offer(3.0))  # higher: saved
            t.fill_(4.0)
            self.assertFalse(best.offer(math.nan))
            self.assertFalse(best.offer(3.5, lambda v, b: v > b + 1.0))
            best.restore()
            self.assertTrue(torch.equal(t, torch.full((2,), 2.0, dtype=dtype)))
            self.assertEqual(best.value, 3.0)
        self.assertEqual(Snapshot([t]).value, -math.inf)

    def test_distance_needs_tensors(self):
        X, Y = make_data(n=10)
        with self.assertRaisesRegex(TypeError, "tensors"):
            Snapshot(EULBOModel(X, Y, num_inducing_points=4)).distance()

    def test_best_state_is_a_deprecated_snapshot(self):
        t = torch.zeros(2)
        with self.assertWarnsRegex(DeprecationWarning, "Snapshot"):
            best = BestState([t], 1.0)
        t.fill_(1.0)
        best.offer([t], 2.0)
        t.fill_(5.0)
        self.assertEqual(best.restore([t]), 2.0)
        self.assertTrue(torch.equal(t, torch.ones(2)))


class TestPathsThatRestore(BotorchTestCase):
    def test_the_adam_fit_ends_at_its_best_check_above_its_start(self):
        # The "steps" rule: from an unfitted model the best check is above the
        # start, and the fit ends there (not back at its start).
        for dtype in DTYPES:
            X, Y = make_data(n=40, dtype=dtype)
            model = EULBOModel(X, Y, num_inducing_points=8)
            objective = EULBO()
            model.train()
            with torch.no_grad():  # the check set is all 40 points
                elbo = objective.elbo(model, model.train_X_full, model.train_Y_std)
            start = objective.per_datum(model, elbo.item())
            before = _state(model)
            value = fit_elbo(model, FAST, objective, seed=0)
            self.assertGreater(value, start)
            moved = [
                k
                for k, v in model.state_dict().items()
                if v.is_floating_point() and not torch.equal(v, before[k])
            ]
            self.assertTrue(moved)

    def test_the_lbfgs_joint_phase_rolls_back_to_its_warm_start(self):
        # A result that does not exceed the warm start is replaced by it: the
        # whole state (buffers included) and the warm-start candidates.
        for dtype in DTYPES:
            X, Y = make_data(n=30, dtype=dtype)
            bounds = torch.stack([torch.zeros(2), torch.ones(2)]).to(X)
            model = EULBOModel(X, Y, num_inducing_points=8)
            options = EULBOOptions(warm_start=FAST.warm_start)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit_elbo(model, options, seed=0)
                x0 = warm_start(model, bounds, 1, 0, options=options)
            before = _state(model)
            problem = JointProblem(model, EULBO(), options, bounds, 1, "ei")
            with mock.patch("botorch_ext.eulbo.joint.exceeds", return_value=False):
                cand, value = lbfgs_joint_phase(problem, x0)
            info = model.last_optimization
            self.assertTrue(info["rolled_back"])
            self.assertGreater(info["steps"], 0)
            self.assertEqual(info["w_moved"], 0.0)
            self.assertTrue(torch.equal(cand, x0))
            self.assertEqual(value.item(), info["warm_start_value"])
            _assert_state(self, model, before)
