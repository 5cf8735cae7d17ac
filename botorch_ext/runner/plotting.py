r"""Plot of best value (as log10 regret) against evaluations, one band per method."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def plot_regret(rows: list[dict], path: Path, title: str = "") -> None:
    r"""Save a PNG of ``log10(regret)`` against evaluations: mean over seeds with a
    ``± 1`` standard deviation band per method.

    Regret is ``best_value - optimum >= 0``; values below ``1e-12`` are floored
    there so that reaching the optimum exactly stays on the plot.

    Args:
        rows: Rows of one or more runs of one problem.
        path: Where to write the PNG.
        title: The plot title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves: dict[str, dict[int, list[float]]] = {}
    for row in rows:
        per_seed = curves.setdefault(row["method"], {}).setdefault(row["seed"], [])
        per_seed.append((row["n_evals"], row["regret"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    for method, seeds in sorted(curves.items()):
        length = min(len(v) for v in seeds.values())
        logs = np.array(
            [
                [math.log10(max(r, 1e-12)) for _, r in sorted(v)[:length]]
                for v in seeds.values()
            ]
        )
        x = np.arange(1, length + 1)
        mean, std = logs.mean(0), logs.std(0)
        ax.plot(x, mean, label=f"{method} ({logs.shape[0]} seeds)")
        ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("number of evaluations")
    ax.set_ylabel("log10 regret of the best value")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
