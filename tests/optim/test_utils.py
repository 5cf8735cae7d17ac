import re
import warnings
from pathlib import Path

import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import optimize_acqf
from botorch.utils.testing import BotorchTestCase
from linear_operator.utils.warnings import NumericalWarning

from botorch_ext.acquisition import qUCB
from botorch_ext.optim import (
    OPTIMIZE_ACQF_RETRY_MESSAGE,
    ignore_optimize_acqf_retry_warnings,
)
from tests.acquisition.helpers import make_gp

PACKAGE = Path(__file__).resolve().parents[2] / "botorch_ext"


def _failing_gen_candidates(initial_conditions, acquisition_function, **kwargs):
    """``gen_candidates_scipy`` after an L-BFGS-B run that ended ABNORMAL."""
    warnings.warn(
        "Optimization failed within `scipy.optimize.minimize`: ABNORMAL",
        OptimizationWarning,
        stacklevel=1,
    )
    with torch.no_grad():
        values = acquisition_function(initial_conditions)
    return initial_conditions, values


class TestIgnoreOptimizeAcqfRetryWarnings(BotorchTestCase):
    def _optimize(self, dtype):
        model = make_gp(dtype=dtype, device=self.device)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], device=self.device, dtype=dtype)
        # Other RuntimeWarnings raised around the optimization stay visible.
        warnings.warn(
            "added jitter of 1.0e-06 to the diagonal", NumericalWarning, stacklevel=1
        )
        warnings.warn("overflow encountered in exp", RuntimeWarning, stacklevel=1)
        return optimize_acqf(
            qUCB(model, beta=1.0),
            bounds,
            q=1,
            num_restarts=2,
            raw_samples=8,
            gen_candidates=_failing_gen_candidates,
        )

    def test_matches_botorch_retry_messages_only(self):
        for dtype in (torch.float, torch.double):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._optimize(dtype)
            retry = [
                w
                for w in caught
                if re.match(OPTIMIZE_ACQF_RETRY_MESSAGE, str(w.message))
            ]
            # BoTorch's own messages: the retry notice and the second failure.
            self.assertEqual(len(retry), 2)
            self.assertTrue(all(w.category is RuntimeWarning for w in retry))
            self.assertIn("Trying again", str(retry[0].message))
            self.assertIn("on the second try", str(retry[1].message))

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ignore_optimize_acqf_retry_warnings()
                candidates, _ = self._optimize(dtype)
            self.assertEqual(candidates.shape, torch.Size([1, 2]))
            messages = [str(w.message) for w in caught]
            self.assertFalse(any("Optimization failed" in m for m in messages))
            self.assertIn("added jitter of 1.0e-06 to the diagonal", messages)
            self.assertIn("overflow encountered in exp", messages)
        # The filter ends with its `catch_warnings` block.
        self.assertFalse(
            any(
                f[1] is not None and f[1].pattern == OPTIMIZE_ACQF_RETRY_MESSAGE
                for f in warnings.filters
            )
        )

    def test_no_blanket_runtime_warning_filter_in_the_package(self):
        pattern = re.compile(r"simplefilter\(\s*\"ignore\",\s*RuntimeWarning")
        offenders = [
            str(path.relative_to(PACKAGE))
            for path in PACKAGE.rglob("*.py")
            if pattern.search(path.read_text())
        ]
        self.assertEqual(offenders, [])
