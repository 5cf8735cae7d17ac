r"""Plot of best value (as log10 regret) against evaluations, one band per method.

The band is stated in the legend's title (mean +/- 1 standard error over seeds by
default), a dotted vertical line marks the end of the initial design, and a
subtitle gives the budget, the initial design size, ``q``, the outcome transform
and the number of seeds, all read from the rows themselves (so merged
directories are described by what they hold).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from botorch_ext.runner.schema import RowDict

#: Band choices, mean +/- 1 standard error, mean +/- 1 standard deviation, or the
#: median with the 25%-75% quantile band.
BANDS = {
    "se": "mean +/- 1 s.e. over seeds",
    "std": "mean +/- 1 std over seeds",
    "quantiles": "median, 25%-75% quantiles over seeds",
}


def band_over_seeds(values: np.ndarray, band: str = "se") -> tuple[np.ndarray, ...]:
    r"""The center line and band of ``seeds x n`` curves.

    Example:
        >>> center, low, high = band_over_seeds(np.log10(regrets), "se")

    Args:
        values: One curve per row (seed).
        band: One of ``BANDS``: ``"se"`` (mean +/- standard deviation / sqrt(seeds),
            the standard deviation with ``ddof=1``), ``"std"`` (mean +/- standard
            deviation) or ``"quantiles"`` (median, 25% and 75% quantiles). With
            one seed the band is the curve itself.

    Returns:
        ``(center, low, high)``, each of length ``n``.

    Raises:
        ValueError: For an unknown ``band``.
    """
    if band not in BANDS:
        raise ValueError(f"unknown band {band!r}; choose from {', '.join(BANDS)}")
    if band == "quantiles":
        low, center, high = np.quantile(values, [0.25, 0.5, 0.75], axis=0)
        return center, low, high
    n = values.shape[0]
    center = values.mean(0)
    spread = values.std(0, ddof=1) if n > 1 else np.zeros_like(center)
    if band == "se":
        spread = spread / math.sqrt(n)
    return center, center - spread, center + spread


def _joined(values: Iterable[Any]) -> str:
    found = sorted({v for v in values if v != ""}, key=str)
    return "/".join(str(v) for v in found) if found else "?"


def run_settings(rows: list[RowDict]) -> dict[str, Any]:
    r"""The settings a set of rows was run with, read from the rows.

    Example:
        >>> run_settings(rows)["n_init"]
        '10'

    Args:
        rows: Rows of one or more runs (schema version 2, with ``iteration`` and
            ``batch_position``; older rows give ``"?"`` for ``n_init`` and ``q``).

    Returns:
        ``budget``, ``n_init``, ``q``, ``outcome_transform`` (each a string, with
        ``/`` between differing values of different runs) and ``seeds`` (the
        largest number of seeds of one method).
    """
    runs: dict[tuple[str, int], list[RowDict]] = {}
    for row in rows:
        runs.setdefault((row["method"], row["seed"]), []).append(row)
    n_init: set[int] = set()
    q: set[int] = set()
    for run in runs.values():
        if any(r.get("iteration", "") == "" for r in run):
            continue
        initial = [r for r in run if r["iteration"] == 0]
        if initial:
            n_init.add(len(initial))
        q.update(r["batch_position"] + 1 for r in run if r["iteration"] > 0)
    seeds: dict[str, int] = {}
    for method, _ in runs:
        seeds[method] = seeds.get(method, 0) + 1
    return {
        "budget": _joined(max(r["n_evals"] for r in run) for run in runs.values()),
        "n_init": _joined(n_init),
        # A short last batch (budget not a multiple of q) is no other q.
        "q": _joined({max(q)} if q else ()),
        "outcome_transform": _joined(r.get("outcome_transform", "") for r in rows),
        "seeds": max(seeds.values(), default=0),
    }


def plot_regret(
    rows: list[RowDict], path: Path, title: str = "", band: str = "se"
) -> None:
    r"""Save a PNG of ``log10(regret)`` against evaluations, one band per method.

    Regret is ``best_value - optimum >= 0``; values below ``1e-12`` are floored
    there so that reaching the optimum exactly stays on the plot. Each method's
    curve covers the evaluations that all its runs reached (a run cut short
    shortens its method's curve). The legend counts each method's failed
    evaluations (over all its runs), and a run has no curve before its first
    successful evaluation.

    Example:
        >>> plot_regret(read_results(Path("results/results.csv")).rows,
        ...             Path("regret.png"), title="hartmann6", band="quantiles")

    Args:
        rows: Rows of one or more runs of one problem.
        path: Where to write the PNG.
        title: The plot title (the subtitle with the settings is added below it).
        band: One of ``BANDS``: ``"se"`` (mean +/- 1 standard error, the default),
            ``"std"`` (mean +/- 1 standard deviation) or ``"quantiles"`` (median
            and the 25%-75% band).

    Raises:
        ValueError: For an unknown ``band``.
    """
    if band not in BANDS:
        raise ValueError(f"unknown band {band!r}; choose from {', '.join(BANDS)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves: dict[str, dict[int, list[tuple[int, float]]]] = {}
    failed: dict[str, int] = {}
    for row in rows:
        per_seed = curves.setdefault(row["method"], {}).setdefault(row["seed"], [])
        # No best value before the first successful evaluation: a gap.
        regret = math.nan if row["regret"] == "" else row["regret"]
        per_seed.append((row["n_evals"], regret))
        failed[row["method"]] = failed.get(row["method"], 0) + (
            row.get("status", "ok") != "ok"
        )
    fig, ax = plt.subplots(figsize=(7, 4.4))
    for method, seeds in sorted(curves.items()):
        length = min(len(v) for v in seeds.values())
        logs = np.array(
            [
                [math.log10(max(r, 1e-12)) for _, r in sorted(v)[:length]]
                for v in seeds.values()
            ]
        )
        x = np.arange(1, length + 1)
        center, low, high = band_over_seeds(logs, band)
        label = f"{method} ({logs.shape[0]} seeds"
        if failed[method]:
            label += f", {failed[method]} failed evals"
        ax.plot(x, center, label=label + ")")
        ax.fill_between(x, low, high, alpha=0.2)
    settings = run_settings(rows)
    if settings["n_init"] != "?":
        for n_init in settings["n_init"].split("/"):
            ax.axvline(int(n_init) + 0.5, color="0.4", linestyle=":", linewidth=1)
    subtitle = (
        f"budget {settings['budget']}, n-init {settings['n_init']} (dotted line), "
        f"q {settings['q']}, outcome transform {settings['outcome_transform']}, "
        f"{settings['seeds']} seeds"
    )
    ax.set_title(f"{title}\n{subtitle}" if title else subtitle, fontsize=9)
    ax.set_xlabel("number of evaluations")
    ax.set_ylabel("log10 regret of the best value")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title=BANDS[band], title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
