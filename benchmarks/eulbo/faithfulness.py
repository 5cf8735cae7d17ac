r"""Is ``eulbo-ei-authors`` the authors' loop? Per-step statistics of the preset.

Runs the runner's ``eulbo-ei-authors`` method (``EULBOOptions.authors``) on
Hartmann6 from the authors' initial design of each seed (``--init uniform``: the
same 100 points as ``torch.manual_seed(seed); torch.rand(100, 6)`` in their code),
q = 1, and writes per step the statistics that ``aabo_reference.py`` records for
the authors' code (``joint.csv``): the expected log utility at the warm start and
after the joint phase, the per-datum ELBO on the window before and after, how far
``x`` moved (max-norm) and the fitted noise before and after.

``--compare`` reads both sets of ``joint.csv`` files and prints, at the given
steps, the mean +/- standard error over seeds of each statistic for both, their
difference and whether it is within 2 standard errors (of the difference); with
``--fixture PATH`` it writes the figures as JSON (the test fixture of
``tests/eulbo/test_authors_faithfulness.py``).

Example::

    OMP_NUM_THREADS=1 python benchmarks/eulbo/faithfulness.py run --seeds 0,1 \
        --steps 100 --output runs/preset
    python benchmarks/eulbo/faithfulness.py compare --authors runs/aabo \
        --preset runs/preset --at 1,10,100
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import warnings
from pathlib import Path

import torch
from botorch.test_functions import Hartmann

from botorch_ext.runner.loop import initial_design
from botorch_ext.runner.methods import get_method
from botorch_ext.runner.options import MethodOptions

#: The authors' release the fixtures come from (as in ``aabo_reference.py``).
PINNED_COMMIT = "b1072730abe35b14ce024b98012073382bb5ac63"

#: The statistics compared, as (name, column or function of a joint.csv row).
STATISTICS = {
    "elogu_gain": lambda r: float(r["elogu_after"]) - float(r["elogu_before"]),
    "x_move": lambda r: float(r["x_move"]),
    "elbo_paid": lambda r: float(r["elbo_before"]) - float(r["elbo_after"]),
    "noise_after": lambda r: float(r["noise_after"]),
}
COLUMNS = (
    "step",
    "n_evals",
    "n_window",
    "elogu_before",
    "elogu_after",
    "elbo_before",
    "elbo_after",
    "x_move",
    "noise_before",
    "noise_after",
)


def step_row(step: int, n: int, model: torch.nn.Module) -> dict:
    r"""The ``joint.csv`` row of one step of the preset, from ``last_optimization``."""
    lo = model.last_optimization
    x0, utility = lo["warm_start_candidates"], lo["utility"]
    value = float(lo["trace"][-1])
    return dict(
        step=step,
        n_evals=n,
        n_window=model.train_X_full.shape[-2],
        elogu_before=lo["warm_start_utility"],
        elogu_after=utility,
        elbo_before=lo["warm_start_value"] - lo["warm_start_utility"],
        elbo_after=value - utility,
        x_move=float((lo["candidates"] - x0).abs().max()),
        noise_before=lo["warm_start_noise"],
        noise_after=float(model.likelihood.noise.detach().reshape(-1)[0]),
    )


def run_seed(seed: int, steps: int, path: Path) -> None:
    r"""``steps`` steps of ``eulbo-ei-authors`` from the authors' design of ``seed``.

    Rows are appended as the steps end. A file with fewer rows than ``steps`` is
    redone from the start (the run is deterministic, and the preset's state is
    not saved), and one with enough is left as it is.
    """
    done = 0
    if path.exists():
        done = sum(1 for _ in csv.DictReader(path.open()))
    if done >= steps:
        return
    torch.manual_seed(seed)
    f = Hartmann(negate=True)
    X = initial_design(6, 100, seed, "uniform")
    Y = f(X).unsqueeze(-1)
    bounds = torch.stack([torch.zeros(6), torch.ones(6)]).double()
    run = get_method("eulbo-ei-authors").new_run()
    options = MethodOptions(num_inducing_points=100)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS)
        writer.writeheader()
        for step in range(1, steps + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                x = run.propose(X, Y, bounds, 1, seed, options).candidates
            model = run.previous
            model.last_optimization["candidates"] = torch.cat(
                [x, model.last_optimization["warm_start_candidates"][1:]]
            )
            writer.writerow(step_row(step, X.shape[0], model))
            fh.flush()
            X, Y = torch.cat([X, x]), torch.cat([Y, f(x).unsqueeze(-1)])


def per_seed(paths: list[Path], at: list[int]) -> dict:
    r"""``{step: {statistic: [one value per seed]}}`` from the seeds' joint.csv files.

    Seeds whose file is shorter than a step are left out of that step.
    """
    tables = [list(csv.DictReader(p.open())) for p in paths]
    return {
        step: {
            name: [fn(t[step - 1]) for t in tables if len(t) >= step]
            for name, fn in STATISTICS.items()
        }
        for step in at
    }


def mean_se(values: list[float]) -> tuple[float, float, int]:
    r"""Mean, standard error (NaN for one value) and count."""
    se = math.nan
    if len(values) > 1:
        se = statistics.stdev(values) / math.sqrt(len(values))
    return statistics.fmean(values), se, len(values)


def summarize(paths: list[Path], at: list[int]) -> dict:
    r"""``{step: {statistic: (mean, se, n)}}`` over the seeds' joint.csv files."""
    return {
        step: {name: mean_se(values) for name, values in stats.items()}
        for step, stats in per_seed(paths, at).items()
    }


def compare(authors: dict, preset: dict) -> list[dict]:
    r"""One row per (step, statistic): both means, the difference and its 2-SE test."""
    rows = []
    for step, stats in authors.items():
        for name, (mean_a, se_a, n_a) in stats.items():
            mean_p, se_p, n_p = preset[step][name]
            se = math.sqrt(se_a**2 + se_p**2)
            diff = mean_p - mean_a
            rows.append(
                dict(
                    step=step,
                    statistic=name,
                    authors=f"{mean_a:.4g} +/- {se_a:.2g} ({n_a})",
                    preset=f"{mean_p:.4g} +/- {se_p:.2g} ({n_p})",
                    difference=f"{diff:+.3g} +/- {se:.2g}",
                    within_2se=abs(diff) <= 2 * se,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run the preset and write joint.csv per seed")
    run_p.add_argument("--seeds", required=True, help="comma-separated seeds")
    run_p.add_argument("--steps", type=int, default=100)
    run_p.add_argument("--output", required=True)
    cmp_p = sub.add_parser("compare", help="compare the preset with the authors' code")
    cmp_p.add_argument("--authors", required=True, help="aabo_reference.py outputs")
    cmp_p.add_argument("--preset", required=True, help="this script's run output")
    cmp_p.add_argument("--at", default="1,10,100")
    cmp_p.add_argument("--fixture", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.command == "run":
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for seed in (int(s) for s in args.seeds.split(",")):
            run_seed(seed, args.steps, out / f"joint-{seed}.csv")
            print(f"seed {seed} done", flush=True)
        return 0
    at = [int(s) for s in args.at.split(",")]
    authors_paths = sorted(Path(args.authors).glob("eulbo-*/joint.csv"))
    preset_paths = sorted(Path(args.preset).glob("joint-*.csv"))
    rows = compare(summarize(authors_paths, at), summarize(preset_paths, at))
    print(" | ".join(rows[0]))
    for row in rows:
        print(" | ".join(str(v) for v in row.values()))
    if args.fixture:
        fixture = {
            "source": f"aabo {PINNED_COMMIT}, benchmarks/eulbo/aabo_reference.py",
            "seeds": [p.parent.name for p in authors_paths],
            "authors": per_seed(authors_paths, at),
        }
        Path(args.fixture).write_text(json.dumps(fixture, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
