import math
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.plotting import (
    BANDS,
    band_over_seeds,
    plot_regret,
    run_settings,
)


def _run(method, seed, regrets, n_init, q, transform="standardize"):
    rows = []
    for i, regret in enumerate(regrets):
        iteration = 0 if i < n_init else 1 + (i - n_init) // q
        position = i if i < n_init else (i - n_init) % q
        rows.append(
            {"method": method, "seed": seed, "n_evals": i + 1, "regret": regret,
             "iteration": iteration, "batch_position": position,
             "outcome_transform": transform}
        )  # fmt: skip
    return rows


class TestPlotting(BotorchTestCase):
    def test_bands_by_hand(self):
        values = np.array([[1.0, 4.0], [3.0, 6.0], [5.0, 11.0]])
        center, low, high = band_over_seeds(values)  # se by default
        std = np.array([2.0, math.sqrt(13.0)])  # ddof = 1
        np.testing.assert_allclose(center, [3.0, 7.0])
        np.testing.assert_allclose(high - center, std / math.sqrt(3))
        np.testing.assert_allclose(center - low, std / math.sqrt(3))
        _, low, high = band_over_seeds(values, "std")
        np.testing.assert_allclose(high, [5.0, 7.0 + math.sqrt(13.0)])
        center, low, high = band_over_seeds(values, "quantiles")
        np.testing.assert_allclose(center, [3.0, 6.0])
        np.testing.assert_allclose(low, [2.0, 5.0])
        np.testing.assert_allclose(high, [4.0, 8.5])
        one = band_over_seeds(values[:1])
        np.testing.assert_allclose(one[1], one[2])
        with self.assertRaisesRegex(ValueError, "unknown band 'x'; choose from se"):
            band_over_seeds(values, "x")

    def test_settings_read_from_the_rows(self):
        # Budget 8 = 3 initial + batches of 2, 2 and a short last one of 1.
        rows = _run("a", 0, [1.0] * 8, n_init=3, q=2)
        rows += _run("a", 1, [1.0] * 8, n_init=3, q=2)
        rows += _run("b", 0, [1.0] * 8, n_init=3, q=2)
        settings = run_settings(rows)
        self.assertEqual(
            settings,
            {"budget": "8", "n_init": "3", "q": "2",
             "outcome_transform": "standardize", "seeds": 2},
        )  # fmt: skip
        mixed = rows + _run("c", 0, [1.0] * 6, n_init=4, q=1, transform="bilog")
        settings = run_settings(mixed)
        self.assertEqual(settings["n_init"], "3/4")
        self.assertEqual(settings["outcome_transform"], "bilog/standardize")

    def test_plot_says_what_it_shows(self):
        rows = _run("a", 0, [10.0, 5.0, 1.0, 0.5, 0.1], n_init=3, q=1)
        rows += _run("a", 1, [8.0, 4.0, 2.0, 0.2, 0.0], n_init=3, q=1)
        for band, caption in BANDS.items():
            with (
                tempfile.TemporaryDirectory() as tmp,
                mock.patch("matplotlib.pyplot.close") as close,
            ):
                plot_regret(rows, Path(tmp) / "p.png", title="t", band=band)
                self.assertEqual((Path(tmp) / "p.png").read_bytes()[:4], b"\x89PNG")
            ax = close.call_args.args[0].axes[0]
            self.assertEqual(ax.get_legend().get_title().get_text(), caption)
            self.assertIn(
                "budget 5, n-init 3 (dotted line), q 1, outcome transform "
                "standardize, 2 seeds",
                ax.get_title(),
            )
            # The end of the initial design, between evaluations 3 and 4.
            vertical = [line.get_xdata() for line in ax.lines
                        if len(set(line.get_xdata())) == 1]  # fmt: skip
            self.assertEqual([list(v) for v in vertical], [[3.5, 3.5]])
