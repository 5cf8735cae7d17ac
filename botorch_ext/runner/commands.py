r"""The ``botorch-ext`` subcommands: what each does once its arguments are parsed.

``botorch_ext.runner.cli`` parses and validates the command line and calls one of
these: ``problems_command`` and ``methods_command`` (list them),
``run_command`` (one BO loop), ``compare_command`` (methods x seeds, with a
summary table and a plot), ``plot_command`` and ``summary_command`` (redraw and
tabulate stored results) and ``demo_command`` (a small comparison for a first
look). Each returns the process exit status. The progress bar (``tqdm``) and the
plot (``matplotlib``) are imported when a command needs them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botorch_ext.runner.compare import BACKENDS, format_summary, run_grid, summarize
from botorch_ext.runner.evaluation import FaultPolicy
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.methods import METHOD_SUMMARIES, METHODS
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import PROBLEMS, botorch_function_names, get_problem
from botorch_ext.runner.schema import RowDict

if TYPE_CHECKING:
    from botorch_ext.runner.results import Output

#: The ``demo`` comparison: small enough for about two minutes on 2 cores.
DEMO: dict[str, Any] = {
    "problem": "hartmann6",
    "methods": ("sobol", "qlogei", "qucb", "qlogsoftpi", "qes"),
    "seeds": (0, 1, 2, 3),
    "budget": 40,
    "n_init": 10,
    "q": 3,
    "num_restarts": 4,
    "raw_samples": 256,
}


def problems_command() -> int:
    r"""``botorch-ext problems``: list the problems, their dimensions and optima."""
    print(
        f"{'problem':<20}{'dim':>5}  {'optimum':>10}  {'sense':<9}{'native domain':<20}"
        "scalable"
    )
    for name, entry in PROBLEMS.items():
        p = get_problem(name)
        scalable = "no" if entry.fixed_dim else f"yes (--dim >= {entry.min_dim})"
        print(
            f"{name:<20}{p.dim:>5}  {p.optimal_value:>10.6g}  {p.sense:<9}"
            f"{p.domain:<20}{scalable}"
        )
    print(
        "also botorch:NAME, any of: "
        + ", ".join(botorch_function_names())
        + " (--dim where it takes one; BoTorch's bounds and optimum), and "
        "module:callable, your own SyntheticTestFunction subclass or factory"
    )
    print("every problem is exposed to BoTorch on [0, 1]^d")
    return 0


def methods_command() -> int:
    r"""``botorch-ext methods``: list the methods, one line each."""
    width = max(map(len, METHODS)) + 2
    for name, summary in METHOD_SUMMARIES.items():
        print(f"{name:<{width}}{summary}")
    print(
        "also module:attribute, a method in an importable module (see "
        "botorch_ext.runner.methods.register_method)"
    )
    return 0


def run_command(
    config: RunConfig,
    out: Path,
    threads: int,
    resume: bool,
    overwrite: bool,
    faults: FaultPolicy | None = None,
) -> int:
    r"""``botorch-ext run``: one BO loop, its rows written to ``out/results.csv``.

    Args:
        config: The run.
        out: The output directory.
        threads: Torch threads.
        resume: Continue the results in ``out``.
        overwrite: Discard the results in ``out``.
        faults: What to do about failed evaluations.

    Returns:
        The exit status, 0.
    """
    import torch
    from tqdm import tqdm

    from botorch_ext.runner.checkpoint import state_path
    from botorch_ext.runner.loop import run_bo
    from botorch_ext.runner.problems import get_problem
    from botorch_ext.runner.results import open_output

    torch.set_num_threads(threads)
    faults = FaultPolicy() if faults is None else faults
    settings = {
        "command": "run",
        **config.to_dict(),
        "threads": threads,
        **_fault_settings(faults),
    }
    dim = get_problem(config.problem, config.dim).dim
    output = open_output(out, settings, dim, resume=resume, overwrite=overwrite)
    stored = output.stored_rows
    bar = tqdm(
        total=config.budget,
        initial=min(len(stored), config.budget),
        desc=f"{config.method} on {config.problem}",
        unit="eval",
    )

    def on_row(row: RowDict) -> None:
        output.writer.write(row)
        bar.update(1)
        if row["best_value"] != "":
            bar.set_postfix(best=f"{row['best_value']:.5g}")

    status = "interrupted"
    try:
        rows = run_bo(
            config,
            on_row=on_row,
            stored_rows=stored,
            faults=faults,
            state_path=state_path(out, config.method, config.seed),
        )
        status = "finished"
    finally:
        bar.close()
        output.close(status)
    last = rows[-1]
    failed = sum(r["status"] != "ok" for r in rows)
    best = (
        "no successful evaluation"
        if last["best_value"] == ""
        else f"best value {last['best_value']:.6g} (regret {last['regret']:.3g})"
    )
    print(
        f"{best} after {last['n_evals']} evaluations ({failed} failed), "
        f"{last['seconds']:.1f} s; results in {out}"
    )
    return 0


def _fault_settings(faults: FaultPolicy) -> dict[str, Any]:
    return {"on_error": faults.on_error, "eval_timeout": faults.eval_timeout}


def compare_command(
    config: RunConfig,
    methods: list[str],
    seeds: list[int],
    workers: int,
    out: Path,
    threads: int = 1,
    resume: bool = False,
    overwrite: bool = False,
    backend: str = "processes",
    scheduler: str | None = None,
    band: str = "se",
    faults: FaultPolicy | None = None,
) -> int:
    r"""``botorch-ext compare``: run methods x seeds, then tabulate and plot them.

    Rows are written to ``out/results.csv`` as they come; the summary table is
    printed and ``out/regret.png`` drawn at the end (an interrupted grid draws
    what it kept).

    Args:
        config: The runs' settings (its method and seed are the grid's).
        methods: Method names.
        seeds: Seeds.
        workers: Worker processes (or the embedded Dask cluster's workers).
        out: The output directory.
        threads: Torch threads of each run.
        resume: Continue the results in ``out``.
        overwrite: Discard the results in ``out``.
        backend: ``"processes"`` or ``"dask"``.
        scheduler: An existing Dask scheduler's address (``backend="dask"``).
        band: The plot's band over seeds (``plotting.BANDS``).
        faults: What to do about failed evaluations.

    Returns:
        The exit status, 0.

    Raises:
        ValueError: For a bad argument (before any run).
    """
    import torch

    from botorch_ext.runner.plotting import plot_regret
    from botorch_ext.runner.results import open_output

    _check_grid(config, methods, workers, backend, scheduler, band)
    torch.set_num_threads(threads)
    settings = _grid_settings(
        config, methods, seeds, threads, workers, backend, scheduler, faults
    )
    problem = get_problem(config.problem, config.dim)
    output = open_output(out, settings, problem.dim, resume=resume, overwrite=overwrite)
    title = f"{problem.name}, dim {problem.dim}"
    grid = _Grid(output, out, title, band, total=len(methods) * len(seeds))
    status = "interrupted"
    try:
        rows = grid.run(
            config,
            methods,
            seeds,
            workers,
            threads=threads,
            backend=backend,
            scheduler=scheduler,
            faults=faults,
        )
        status = "finished"
    finally:
        grid.close(status)
    print(f"\n{problem.name} (dim {problem.dim}, optimum {problem.optimal_value:g})")
    print(format_summary(summarize(rows)))
    if grid.notes:
        print(f"\n{len(grid.notes)} fault notes (also in config.json):")
        print("\n".join(f"- {n}" for n in grid.notes))
    plot_regret(rows, out / "regret.png", title=grid.title, band=band)
    print(f"\nresults: {out / 'results.csv'}; plot: {out / 'regret.png'}")
    return 0


def _check_grid(
    config: RunConfig,
    methods: list[str],
    workers: int,
    backend: str,
    scheduler: str | None,
    band: str,
) -> None:
    # Raises ValueError for any bad argument of `compare`, before any run.
    from botorch_ext.runner.plotting import BANDS

    if band not in BANDS:
        raise ValueError(f"unknown band {band!r}; choose from {', '.join(BANDS)}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if backend not in BACKENDS:
        raise ValueError(
            f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}"
        )
    if scheduler is not None and backend != "dask":
        raise ValueError("--scheduler needs --backend dask")
    for method in methods:
        replace(config, method=method).validate()


def _grid_settings(
    config: RunConfig,
    methods: list[str],
    seeds: list[int],
    threads: int,
    workers: int,
    backend: str,
    scheduler: str | None,
    faults: FaultPolicy | None,
) -> dict[str, Any]:
    # The settings `compare` writes to config.json (and a resume must match).
    from botorch_ext.runner.metadata import redact

    run_settings = config.to_dict()
    del run_settings["method"], run_settings["seed"]  # the grid's are below
    return {
        "command": "compare",
        **run_settings,
        "methods": methods,
        "seeds": seeds,
        "threads": threads,
        "workers": workers,
        "backend": backend,
        "scheduler": None if scheduler is None else redact(scheduler),
        **_fault_settings(FaultPolicy() if faults is None else faults),
    }


class _Grid:
    # One `compare` grid's output: rows written as they come, a progress bar,
    # the fault notes, and the plot of what an interrupted grid kept.

    def __init__(
        self, output: Output, out: Path, title: str, band: str, total: int
    ) -> None:
        from tqdm import tqdm

        self.output, self.out, self.title, self.band = output, out, title, band
        self.seen = list(output.stored_rows)
        self.notes: list[str] = []
        self.bar = tqdm(total=total, desc="runs", unit="run")
        self.write = tqdm.write

    def on_row(self, row: RowDict) -> None:
        self.output.writer.write(row)
        self.seen.append(row)

    def on_run_done(self, done: RunConfig) -> None:
        self.bar.update(1)
        self.bar.set_postfix(last=f"{done.method}/seed {done.seed}")

    def log(self, message: str) -> None:
        self.notes.append(message)
        self.write(f"note: {message}", file=sys.stderr)

    def run(
        self,
        config: RunConfig,
        methods: list[str],
        seeds: list[int],
        workers: int,
        **kwargs: Any,
    ) -> list[RowDict]:
        return run_grid(
            config,
            methods,
            seeds,
            workers,
            on_row=self.on_row,
            on_run_done=self.on_run_done,
            stored_rows=self.output.stored_rows,
            log=self.log,
            state_dir=self.out,
            **kwargs,
        )

    def close(self, status: str) -> None:
        self.bar.close()
        if self.notes:
            notes = self.output.config.get("fault_notes", []) + self.notes
            self.output.config["fault_notes"] = notes
        self.output.close(status)
        if status == "interrupted" and self.seen:
            # The plot of an interrupted grid shows what it kept; a failure to
            # draw must not hide the interrupt (or error) being raised.
            from botorch_ext.runner.plotting import plot_regret

            try:
                plot_regret(
                    self.seen, self.out / "regret.png", title=self.title, band=self.band
                )
            except Exception as e:  # pragma: no cover (a drawing failure)
                print(f"no regret.png: {e}", file=sys.stderr)


def _by_problem(rows: list[RowDict]) -> dict[tuple[str, int], list[RowDict]]:
    groups: dict[tuple[str, int], list[RowDict]] = {}
    for row in rows:
        groups.setdefault((row["problem"], row["dim"]), []).append(row)
    return groups


def plot_command(dirs: list[str], output: Path | None, band: str) -> int:
    r"""``botorch-ext plot``: redraw the regret plot of stored results.

    Args:
        dirs: Output directories, all of one problem.
        output: The PNG to write (``regret.png`` in the first directory if None).
        band: The band over seeds (``plotting.BANDS``).

    Returns:
        The exit status, 0.

    Raises:
        ValueError: For a bad band, directories of several problems, or a file
            that cannot be written.
    """
    from botorch_ext.runner.plotting import BANDS, plot_regret
    from botorch_ext.runner.results import load_results

    if band not in BANDS:
        raise ValueError(f"unknown band {band!r}; choose from {', '.join(BANDS)}")
    groups = _by_problem(load_results([Path(d) for d in dirs]))
    if len(groups) != 1:
        held = ", ".join(f"{p} (dim {d})" for p, d in groups) or "no rows"
        raise ValueError(f"the directories hold {held}; plot one problem at a time")
    (((name, dim), rows),) = groups.items()
    path = output if output is not None else Path(dirs[0]) / "regret.png"
    try:
        plot_regret(rows, path, title=f"{name}, dim {dim}", band=band)
    except OSError as e:
        flag = "" if output is None else "argument --output: "
        raise ValueError(f"{flag}cannot write {str(path)!r} ({e.strerror})") from e
    print(f"plot: {path}")
    return 0


def summary_command(dirs: list[str]) -> int:
    r"""``botorch-ext summary``: tabulate stored results per problem and method.

    Args:
        dirs: Output directories.

    Returns:
        The exit status, 0.

    Raises:
        ValueError: If the directories hold no rows.
    """
    from botorch_ext.runner.compare import format_summary, summarize
    from botorch_ext.runner.plotting import run_settings
    from botorch_ext.runner.results import load_results

    groups = _by_problem(load_results([Path(d) for d in dirs]))
    if not groups:
        raise ValueError(f"no result rows in {', '.join(map(repr, dirs))}")
    for (name, dim), rows in groups.items():
        s = run_settings(rows)
        print(
            f"{name} (dim {dim}): budget {s['budget']}, n-init {s['n_init']}, "
            f"q {s['q']}, outcome transform {s['outcome_transform']}, "
            f"{s['seeds']} seeds"
        )
        print(format_summary(summarize(rows)))
        print()
    return 0


def demo_command(workers: int, out: Path, resume: bool, overwrite: bool) -> int:
    r"""``botorch-ext demo``: the ``DEMO`` comparison, as ``compare`` runs it.

    Args:
        workers: Worker processes (at most the machine's cores).
        out: The output directory.
        resume: Continue the results in ``out``.
        overwrite: Discard the results in ``out``.

    Returns:
        The exit status, 0.
    """
    config = RunConfig(
        problem=DEMO["problem"],
        method=DEMO["methods"][0],
        budget=DEMO["budget"],
        n_init=DEMO["n_init"],
        q=DEMO["q"],
        options=MethodOptions(
            num_restarts=DEMO["num_restarts"], raw_samples=DEMO["raw_samples"]
        ),
    )
    workers = max(1, min(workers, os.cpu_count() or 1))
    return compare_command(
        config,
        list(DEMO["methods"]),
        list(DEMO["seeds"]),
        workers,
        out,
        resume=resume,
        overwrite=overwrite,
    )
