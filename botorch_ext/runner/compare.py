r"""A grid of runs (methods x seeds), optionally in worker processes, with results
written to one CSV as they arrive and summarised in a table."""

from __future__ import annotations

import csv
import math
import multiprocessing
import statistics
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

import torch

from botorch_ext.runner.loop import COLUMNS, RunConfig, run_bo


class CsvWriter:
    r"""Append rows to ``path`` and flush each one, so that an interrupted run
    keeps every evaluation made so far.

    Args:
        path: The CSV file (created with a header, or truncated).
    """

    def __init__(self, path: Path) -> None:
        self._file = open(path, "w", newline="")  # noqa: SIM115 (closed in close())
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS)
        self._writer.writeheader()
        self._file.flush()

    def write(self, row: dict) -> None:
        self._writer.writerow({k: row[k] for k in COLUMNS})
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _run_in_worker(config: RunConfig, threads: int) -> list[dict]:
    torch.set_num_threads(threads)
    return run_bo(config)


def run_grid(
    base: RunConfig,
    methods: Iterable[str],
    seeds: Iterable[int],
    workers: int = 1,
    on_row: Callable[[dict], None] | None = None,
    on_run_done: Callable[[RunConfig], None] | None = None,
) -> list[dict]:
    r"""Run every ``method x seed`` combination of ``base``.

    Args:
        base: The configuration shared by all runs (its ``method`` and ``seed``
            are replaced).
        methods: Method names.
        seeds: Seeds.
        workers: Number of worker processes (1 runs in this process). With
            several workers each uses one torch thread, so runs do not fight
            over cores.
        on_row: Called with every row, in this process: as it is evaluated
            when ``workers == 1``, and when its run finishes otherwise.
        on_run_done: Called with each finished run's configuration.

    Returns:
        All rows.
    """
    configs = [replace(base, method=m, seed=s) for m in methods for s in seeds]
    for config in configs:
        config.validate()
    rows: list[dict] = []

    def collect(run_rows: list[dict]) -> None:
        for row in run_rows:
            rows.append(row)
            if on_row is not None:
                on_row(row)

    if workers <= 1:
        # In-process runs hand over every row as it is evaluated, so an
        # interrupted comparison keeps the partial run too.
        for config in configs:
            rows.extend(run_bo(config, on_row=on_row))
            if on_run_done is not None:
                on_run_done(config)
        return rows
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(_run_in_worker, c, 1): c for c in configs}
        for future in as_completed(futures):
            collect(future.result())
            if on_run_done is not None:
                on_run_done(futures[future])
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    r"""Per-method summary: final best value (mean, std over seeds) and seconds
    per BO iteration.

    Args:
        rows: Rows of one or more runs.

    Returns:
        One dict per method with keys ``method, runs, n_evals, best_mean,
        best_std, regret_mean, seconds_per_iteration, init, outcome_transform``.
    """
    runs: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        runs.setdefault((row["method"], row["seed"]), []).append(row)
    by_method: dict[str, list[list[dict]]] = {}
    for (method, _), run_rows in runs.items():
        by_method.setdefault(method, []).append(
            sorted(run_rows, key=lambda r: r["n_evals"])
        )
    out = []
    for method, method_runs in by_method.items():
        finals = [r[-1] for r in method_runs]
        best = [f["best_value"] for f in finals]
        per_iteration = []
        for r in method_runs:
            # Rows of one batch share a timestamp; the first is the initial design.
            stamps = sorted({row["seconds"] for row in r})
            if len(stamps) > 1:
                per_iteration.append((stamps[-1] - stamps[0]) / (len(stamps) - 1))
        out.append(
            {
                "method": method,
                "runs": len(method_runs),
                "n_evals": max(f["n_evals"] for f in finals),
                "best_mean": statistics.fmean(best),
                "best_std": statistics.stdev(best) if len(best) > 1 else 0.0,
                "regret_mean": statistics.fmean(f["regret"] for f in finals),
                "seconds_per_iteration": (
                    statistics.fmean(per_iteration) if per_iteration else math.nan
                ),
                "init": finals[0]["init"],
                "outcome_transform": finals[0]["outcome_transform"],
            }
        )
    return out


def format_summary(summary: list[dict]) -> str:
    r"""Render ``summarize``'s output as a Markdown table."""
    lines = [
        "| method | runs | evals | final best value (mean ± std) | regret | "
        "s / iteration | init | outcome transform |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['method']} | {s['runs']} | {s['n_evals']} | "
            f"{s['best_mean']:.4g} ± {s['best_std']:.2g} | {s['regret_mean']:.3g} | "
            f"{s['seconds_per_iteration']:.2f} | {s['init']} | "
            f"{s['outcome_transform']} |"
        )
    return "\n".join(lines)
