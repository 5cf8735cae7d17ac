r"""Command-line front end: parse, validate, call the runner's commands.

Subcommands: ``problems`` and ``methods`` (list them), ``run`` (one BO loop),
``compare`` (methods x seeds, in worker processes or on Dask, with a summary table
and a plot), ``demo`` (a small comparison for a first look), and ``plot`` and
``summary`` (redraw and tabulate stored results of one or more output directories).
Bad input ends with a one-line error naming the flag, the value and, where there are
few, the valid choices, with exit status 2, before any evaluation; Ctrl-C keeps the
rows written so far, marks the output ``interrupted`` and exits with 130, SIGTERM
likewise with 143 (128 + 15, the shell's convention); a run stopped at a failed
evaluation (``--on- error``), a lost Dask scheduler or workers that keep dying end
with a one-line message naming the ``--resume`` command and exit status 1. An output
directory holding results is refused unless ``--resume`` (continue it) or
``--overwrite`` (start afresh) is given. The library's errors name its arguments
(``n_init``); they are reported here as flags (``--n-init``).

This module parses and validates; what each subcommand then does is in
``botorch_ext.runner.commands``; how a library error's argument names are written
as flags, in ``botorch_ext.runner.errors``. ``botorch-ext`` and ``python -m
botorch_ext`` reach ``main`` through ``botorch_ext.console``.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

from botorch_ext import __version__
from botorch_ext.runner.backends.dask import RunFailedOnWorkers, SchedulerLost
from botorch_ext.runner.backends.processes import WorkersLost
from botorch_ext.runner.commands import (
    compare_command,
    demo_command,
    methods_command,
    plot_command,
    problems_command,
    run_command,
    summary_command,
)
from botorch_ext.runner.compare import BACKENDS
from botorch_ext.runner.errors import ArgumentError, flag_message
from botorch_ext.runner.evaluation import ON_ERROR, EvaluationFailed, FaultPolicy
from botorch_ext.runner.initial_conditions import INITIAL_CONDITIONS
from botorch_ext.runner.loop import INITS, RunConfig
from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.plotting import BANDS
from botorch_ext.runner.problems import PROBLEMS, get_problem
from botorch_ext.runner.signals import stop_requests
from botorch_ext.runner.transforms import OUTCOME_TRANSFORMS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


# Argument types: a bad value ends parsing with "argument --FLAG: ..." (exit 2),
# before anything runs. Each message names the value.


def _at_least(minimum: int) -> Callable[[str], int]:
    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}, got {text!r}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return integer


_T = TypeVar("_T")


def _unique(items: list[_T], what: str, text: str) -> list[_T]:
    for item in items:
        if items.count(item) > 1:
            raise argparse.ArgumentTypeError(
                f"{what} {item!r} is given twice in {text!r}"
            )
    return items


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in _split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    return _unique(seeds, "seed", text)


def _method(text: str) -> str:
    try:
        get_method(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    return text


def _method_list(text: str) -> list[str]:
    try:
        names = _split(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    return _unique([_method(name) for name in names], "method", text)


def _scheduler(text: str) -> str:
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(text)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"not a Dask scheduler address ({e}), got {text!r}; e.g. "
            "tcp://10.0.0.5:8786"
        ) from e
    return text


def _png_path(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a directory; give the plot's file, e.g. "
            f"{str(path / 'regret.png')!r}"
        )
    if path.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(
            f"the plot is a PNG; give a path ending in .png, got {text!r}"
        )
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"no directory {str(path.parent)!r} to write {text!r} in"
        )
    return path


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--problem",
        required=True,
        help=f"one of: {', '.join(PROBLEMS)}; botorch:NAME (a class of "
        "botorch.test_functions.synthetic); module:callable (your own "
        "SyntheticTestFunction subclass or factory)",
    )
    p.add_argument(
        "--dim", type=int, default=None, help="dimension (scalable problems)"
    )
    p.add_argument("--budget", type=int, required=True, help="total evaluations")
    p.add_argument("--n-init", type=int, default=10, help="initial design size")
    p.add_argument("--q", type=int, default=1, help="batch size per iteration")
    p.add_argument("--init", default="sobol", help=f"one of: {', '.join(INITS)}")
    p.add_argument(
        "--outcome-transform",
        default="standardize",
        help=f"one of: {', '.join(OUTCOME_TRANSFORMS)}",
    )
    p.add_argument(
        "--num-restarts",
        type=_at_least(1),
        default=10,
        help="starting points of the acquisition optimization",
    )
    p.add_argument(
        "--raw-samples",
        type=_at_least(1),
        default=512,
        help="random points scored to choose the starting points (with "
        "--initial-conditions botorch: at least --num-restarts)",
    )
    p.add_argument(
        "--num-inducing-points",
        type=int,
        default=100,
        help="inducing points m of the SVGP methods (eulbo-*, elbo-svgp*, "
        "turbo-*); 100 in the EULBO paper",
    )
    p.add_argument(
        "--threads",
        type=_at_least(1),
        default=1,
        help="torch threads of each run (results are reproducible at a fixed "
        "thread count)",
    )
    p.add_argument(
        "--initial-conditions",
        default="botorch",
        help=f"one of: {', '.join(INITIAL_CONDITIONS)} (bock: the BOCK paper's "
        "candidate scheme, Sobol points plus sprays around the incumbent, best "
        "--num-restarts refined)",
    )
    p.add_argument(
        "--on-error",
        default="auto",
        help=f"one of: {', '.join(ON_ERROR)}: what a run does after a failed "
        "evaluation (a NaN or inf value, an exception, a timeout), which is "
        "recorded as a row with status failed and never enters a model. auto "
        "(default): go on after NaN/inf values and timeouts, stop at an "
        "exception; skip: always go on; stop: always stop",
    )
    p.add_argument(
        "--eval-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="record an evaluation (one batch) that runs longer as failed and "
        "abandon it (evaluations then run in a child process)",
    )


def _add_output(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--output", default=default, help="output directory")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--resume",
        action="store_true",
        help="continue the results in --output: skip finished runs, continue "
        "partial ones from their rows and, for the SVGP and TuRBO methods, their "
        "saved state (the settings must match config.json)",
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="discard the results (and saved states) in --output and start afresh",
    )


def _add_band(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--band",
        default="se",
        choices=BANDS,
        help="the plot's band over seeds: se (mean +/- 1 standard error, default), "
        "std (mean +/- 1 standard deviation) or quantiles (median, 25%%-75%%)",
    )


def build_parser() -> argparse.ArgumentParser:
    r"""Build the ``botorch-ext`` argument parser.

    Returns:
        The configured ``argparse.ArgumentParser``.
    """
    parser = _Parser(
        prog="botorch-ext",
        description="Bayesian-optimization benchmark runner for botorch_ext methods.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("problems", help="list problems, dimensions and optima")
    sub.add_parser("methods", help="list the methods, one line each")
    run = sub.add_parser("run", help="run one BO loop")
    _add_common(run)
    run.add_argument(
        "--method",
        required=True,
        type=_method,
        help="a name from `botorch-ext methods`, or module:attribute",
    )
    run.add_argument("--seed", type=int, default=0)
    _add_output(run, "results")
    compare = sub.add_parser("compare", help="compare methods over seeds")
    _add_common(compare)
    compare.add_argument(
        "--methods", required=True, type=_method_list, help="comma-separated methods"
    )
    compare.add_argument(
        "--seeds", default="0,1,2", type=_seed_list, help="comma-separated seeds"
    )
    compare.add_argument(
        "--workers",
        type=_at_least(1),
        default=1,
        help="worker processes (processes backend: 1 runs in this process; dask: "
        "the embedded LocalCluster's workers)",
    )
    compare.add_argument(
        "--backend",
        default="processes",
        choices=BACKENDS,
        help=f"one of: {', '.join(BACKENDS)} (dask: one Dask task per run, on an "
        "embedded LocalCluster or on --scheduler)",
    )
    compare.add_argument(
        "--scheduler",
        default=None,
        type=_scheduler,
        metavar="ADDRESS",
        help="with --backend dask: the address of an existing Dask scheduler "
        "(e.g. tcp://10.0.0.5:8786) instead of an embedded LocalCluster",
    )
    _add_output(compare, "results")
    _add_band(compare)
    plot = sub.add_parser(
        "plot", help="redraw the regret plot from stored results (no runs)"
    )
    plot.add_argument("dirs", nargs="+", metavar="DIR", help="output directories")
    plot.add_argument(
        "--output",
        default=None,
        type=_png_path,
        help="the PNG file to write, in an existing directory (default: regret.png "
        "in the first DIR)",
    )
    _add_band(plot)
    summary = sub.add_parser(
        "summary", help="tabulate stored results per problem and method (no runs)"
    )
    summary.add_argument("dirs", nargs="+", metavar="DIR", help="output directories")
    demo = sub.add_parser("demo", help="a two-minute comparison on Hartmann6")
    _add_output(demo, "demo-results")
    demo.add_argument("--workers", type=_at_least(1), default=2)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    r"""Entry point of ``botorch-ext`` and ``python -m botorch_ext``.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        The process exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "problems":
        return problems_command()
    if args.command == "methods":
        return methods_command()
    # SIGTERM (kill, a job scheduler, a container's stop) stops as Ctrl-C does.
    with stop_requests() as terminated:
        try:
            if args.command == "plot":
                return plot_command(args.dirs, args.output, args.band)
            if args.command == "summary":
                return summary_command(args.dirs)
            reuse = {"resume": args.resume, "overwrite": args.overwrite}
            if args.command == "run":
                config = _config(args, method=args.method, seed=args.seed)
                return run_command(
                    config,
                    _output_dir(args.output),
                    args.threads,
                    faults=_faults(args),
                    **reuse,
                )
            if args.command == "compare":
                config = _config(args, method=args.methods[0], seed=0)
                return compare_command(
                    config,
                    args.methods,
                    args.seeds,
                    args.workers,
                    _output_dir(args.output),
                    args.threads,
                    backend=args.backend,
                    scheduler=args.scheduler,
                    band=args.band,
                    faults=_faults(args),
                    **reuse,
                )
            if args.command == "demo":
                return demo_command(args.workers, _output_dir(args.output), **reuse)
        except (EvaluationFailed, SchedulerLost, WorkersLost, RunFailedOnWorkers) as e:
            print(
                f"botorch-ext: {e}; the rows so far are kept; continue with: "
                f"{resume_command(sys.argv[1:] if argv is None else argv)}",
                file=sys.stderr,
            )
            return 1
        except ArgumentError as e:
            parser.error(flag_message(str(e)))
        except ValueError as e:
            parser.error(str(e))
        except KeyboardInterrupt:
            what = "terminated (SIGTERM)" if terminated else "interrupted"
            print(
                f"\n{what}: the rows evaluated so far are in the output CSV; "
                "continue them with the same command and --resume",
                file=sys.stderr,
            )
            return 128 + signal.SIGTERM if terminated else 130
    return 2  # pragma: no cover


def resume_command(argv: Sequence[str]) -> str:
    r"""The shell command that continues ``botorch-ext ARGV``.

    The same arguments, without ``--overwrite``, with ``--resume``.
    """
    args = [a for a in argv if a != "--overwrite"]
    if "--resume" not in args:
        args.append("--resume")
    return shlex.join(["botorch-ext", *args])


def _faults(args: argparse.Namespace) -> FaultPolicy:
    faults = FaultPolicy(on_error=args.on_error, eval_timeout=args.eval_timeout)
    faults.validate()
    return faults


def _split(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"expected a comma-separated list, got {text!r}")
    return items


def _config(args: argparse.Namespace, method: str, seed: int) -> RunConfig:
    try:
        get_problem(args.problem, args.dim)
    except ArgumentError:
        raise  # names its argument (dim), which main writes as its flag
    except ValueError as e:
        raise ValueError(f"argument --problem: {e}") from e
    if args.initial_conditions == "botorch" and args.raw_samples < args.num_restarts:
        raise ValueError(
            f"argument --raw-samples: must be >= --num-restarts ({args.num_restarts}) "
            f"with --initial-conditions botorch, got {args.raw_samples}"
        )
    config = RunConfig(
        problem=args.problem,
        method=method,
        budget=args.budget,
        dim=args.dim,
        n_init=args.n_init,
        q=args.q,
        seed=seed,
        init=args.init,
        options=MethodOptions(
            outcome_transform=args.outcome_transform,
            num_restarts=args.num_restarts,
            raw_samples=args.raw_samples,
            initial_conditions=args.initial_conditions,
            num_inducing_points=args.num_inducing_points,
        ),
    )
    config.validate()
    return config


def _output_dir(path: str) -> Path:
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ValueError(
            f"output directory {path!r} is not writable ({e.strerror})"
        ) from e
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
