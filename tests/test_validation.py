import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.validation import (
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

    def test_check_finite(self):
        check_finite("b", torch.zeros(3))
        check_finite("b", torch.tensor([1, 2]))  # integer tensors are finite
        with self.assertRaisesRegex(ValueError, "`b` must be finite, got nan"):
            check_finite("b", float("nan"))
        with self.assertRaisesRegex(ValueError, r"shape \(2,\)"):
            check_finite("b", torch.tensor([1.0, float("inf")]))

    def test_check_positive_int(self):
        check_positive_int("n", 3)
        for bad in (0, -2, 1.5, True, "3"):
            with self.assertRaisesRegex(ValueError, "`n` must be a positive integer"):
                check_positive_int("n", bad)

    def test_check_no_nan_inputs(self):
        check_no_nan_inputs(torch.zeros(2, 1, 3))
        X = torch.zeros(2, 1, 3)
        X[1, 0, 2] = float("nan")
        with self.assertRaisesRegex(ValueError, "1 of 6 entries"):
            check_no_nan_inputs(X)
