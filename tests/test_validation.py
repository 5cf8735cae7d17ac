import numpy as np
import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.validation import (
    check_bounds,
    check_finite,
    check_no_nan_inputs,
    check_positive,
    check_positive_int,
)


class TestValidation(BotorchTestCase):
    def test_check_positive(self):
        check_positive("a", 1e-12)
        check_positive("a", torch.tensor([1.0, 2.0]))
        check_positive("a", 0.0, allow_zero=True)
        for bad in (0.0, -1.0, float("nan"), float("inf"), torch.tensor([1.0, -1.0])):
            with self.assertRaisesRegex(ValueError, "`a` must be finite and positive"):
                check_positive("a", bad)
        with self.assertRaisesRegex(ValueError, "non-negative, got -0.5"):
            check_positive("a", -0.5, allow_zero=True)
        # Not a number at all: the argument is named, not a torch error.
        for bad in ("2", None, [1.0, "x"]):
            with self.assertRaisesRegex(ValueError, "`a` must be a real number, got"):
                check_positive("a", bad)
            with self.assertRaisesRegex(ValueError, "`a` must be a real number, got"):
                check_finite("a", bad)

    def test_check_finite(self):
        check_finite("b", torch.zeros(3))
        check_finite("b", torch.tensor([1, 2]))  # integer tensors are finite
        with self.assertRaisesRegex(ValueError, "`b` must be finite, got nan"):
            check_finite("b", float("nan"))
        with self.assertRaisesRegex(ValueError, r"shape \(2,\)"):
            check_finite("b", torch.tensor([1.0, float("inf")]))

    def test_check_positive_int(self):
        check_positive_int("n", 3)
        check_positive_int("n", np.int64(3))  # NumPy's integers are integers
        for bad in (0, -2, 1.5, True, "3", np.float64(3.0), np.int64(0)):
            with self.assertRaisesRegex(ValueError, "`n` must be a positive integer"):
                check_positive_int("n", bad)

    def test_check_no_nan_inputs(self):
        check_no_nan_inputs(torch.zeros(2, 1, 3))
        X = torch.zeros(2, 1, 3)
        X[1, 0, 2] = float("nan")
        with self.assertRaisesRegex(ValueError, "`X` contains NaN \\(1 of 6 entries"):
            check_no_nan_inputs(X)
        X[1, 0, 2] = -float("inf")  # an infinite candidate is as useless
        with self.assertRaisesRegex(ValueError, "`X_pending` contains an infinite"):
            check_no_nan_inputs(X, "X_pending")
        check_no_nan_inputs(torch.zeros(2, 1, 3, dtype=torch.long))

    def test_check_bounds(self):
        for dtype in (torch.float, torch.double):
            good = torch.tensor([[0.0, -1.0], [1e-6, 2.0]], dtype=dtype)
            check_bounds("bounds", good)
            check_bounds("bounds", good, d=2)
            cases = (
                (torch.zeros(1, 2), "bounds", r"`2 x d` tensor .* got shape \(1, 2\)"),
                (torch.zeros(2, 0), "bounds", r"got shape \(2, 0\)"),
                (torch.zeros(3, 2), "box", r"`box` must be a `2 x d` tensor"),
                (
                    torch.tensor([[0.0, float("nan")], [1.0, 1.0]]),
                    "bounds",
                    r"`bounds` must be finite, got lower = nan and upper = 1.0 in "
                    r"column 1 \(1 of 2 columns bad\)",
                ),
                (
                    torch.tensor([[0.0, 0.0], [float("inf"), 1.0]]),
                    "bounds",
                    r"must be finite, got lower = 0.0 and upper = inf in column 0",
                ),
                (
                    # lower == upper is rejected: strictly lower < upper.
                    torch.tensor([[0.0, 0.5], [1.0, 0.5]]),
                    "bounds",
                    r"`bounds` must have lower < upper in every column, got lower = "
                    r"0.5 and upper = 0.5 in column 1 \(1 of 2 columns bad\)",
                ),
                (
                    torch.tensor([[1.0, 1.0], [0.0, 0.0]]),
                    "region",
                    r"`region` must have lower < upper .* column 0 \(2 of 2",
                ),
            )
            for value, name, pattern in cases:
                if isinstance(value, torch.Tensor):
                    value = value.to(dtype)
                with self.assertRaisesRegex(ValueError, pattern):
                    check_bounds(name, value)
            with self.assertRaisesRegex(ValueError, r"`2 x 3` tensor .* \(2, 2\)"):
                check_bounds("bounds", good, d=3)
            with self.assertRaisesRegex(ValueError, "`2 x d` tensor, got list"):
                check_bounds("bounds", good.tolist())

    def test_one_bounds_rule_everywhere(self):
        # qES's representer points and EULBO's optimizer apply the same rule and
        # message; lower == upper used to pass EULBO's own check.
        from botorch_ext.acquisition import draw_representer_points
        from botorch_ext.eulbo import EULBOModel, optimize_eulbo
        from tests.acquisition.helpers import make_gp

        flat = torch.tensor([[0.0, 0.3], [1.0, 0.3]], dtype=torch.double)
        message = r"`bounds` must have lower < upper in every column, got lower = 0.3"
        with self.assertRaisesRegex(ValueError, message):
            draw_representer_points(make_gp(), flat, num_points=4)
        X = torch.rand(12, 2, dtype=torch.double)
        model = EULBOModel(X, X.sum(-1, keepdim=True), num_inducing_points=4)
        with self.assertRaisesRegex(ValueError, message):
            optimize_eulbo(model, flat)
