r"""Run the EULBO authors' released code, unchanged, as the reference for the preset.

The authors' loop (``scripts/run_bo.py``'s ``Optimize`` in github.com/nataliemaus/aabo,
pinned at ``PINNED_COMMIT``) is imported from a checkout that the user names with
``--aabo PATH``; none of its code is copied here. This script only builds their
``Optimize`` object with the arguments of one arm and calls its ``run()``, and
records what happens:

* ``OUT/results.csv``: one row per evaluation in the runner's schema
  (``botorch_ext.runner.schema``), so ``botorch-ext summary`` and ``plot`` read it.
  Their objective is ``-Hartmann6`` (maximized); the rows hold Hartmann6's own
  value (minimized), as every other row of the project does. ``seconds`` is the
  whole step, ``fit_seconds`` their ELBO fit, ``acq_seconds`` their ``qEI``
  warm start plus, for the EULBO arm, their joint phase.
* ``OUT/joint.csv`` (EULBO arm): per step, the statistics the preset's
  faithfulness test compares: the expected log utility of the batch at the warm
  start and after the joint phase (their own ``get_expected_log_utility_x_next``),
  the per-datum ELBO on the training window before and after, how far ``x`` moved
  (max-norm, native units) and the fitted noise before and after.
* ``OUT/checkpoint.pt``: after every evaluation, the loop's whole state (data,
  model ``state_dict``, the torch/NumPy/``random`` generators' states, the call
  count). ``--resume`` rebuilds ``Optimize`` with the same arguments and restores
  that state, so an interrupted run continues where it stopped, with the same
  random stream; the statistics above are computed without drawing random numbers,
  so recording them does not change the run.

Shims, for the environment only (their code is not changed):

1. ``wandb``: a stub module whose ``init`` returns an object with no-op ``log`` and
   ``finish`` (their tracker; no network here).
2. ``fire``: a stub module if it is not installed (used only under ``__main__``).
3. ``LinearOperator.diag``: an alias of ``LinearOperator.diagonal``, removed from
   ``linear_operator`` after their release (Moss et al.'s inducing-point allocator
   calls it).
4. Instrumentation: ``update_model_elbo``, ``generate_batch`` and
   ``update_model_and_generate_candidates_eulbo`` are wrapped in ``run_bo``'s
   namespace to time them and record the statistics above; each wrapper calls the
   original with the same arguments and returns its result.
5. The objective is wrapped to write rows and the checkpoint after each call; it
   returns what their objective returns.

Anomaly detection stays on, as in their code (their EULBO update turns it on): a
NaN raises, and their lr/10 retry handles it.

Example::

    git clone https://github.com/nataliemaus/aabo /tmp/aabo
    git -C /tmp/aabo checkout b1072730abe35b14ce024b98012073382bb5ac63
    OMP_NUM_THREADS=1 python benchmarks/eulbo/aabo_reference.py --aabo /tmp/aabo \
        --arm eulbo --seed 0 --budget 300 --output runs/aabo-eulbo-0
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import random
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

from botorch_ext.runner.results import CsvWriter, read_results
from botorch_ext.runner.schema import build_row, columns, diagnostic_fields

#: The authors' release that this harness runs (``git rev-parse HEAD``).
PINNED_COMMIT = "b1072730abe35b14ce024b98012073382bb5ac63"

#: Hartmann6's global minimum (BoTorch's ``Hartmann(dim=6).optimal_value``).
HARTMANN6_MIN = -3.32237

#: The method names the rows carry, by arm.
METHODS = {"eulbo": "aabo-eulbo-ei", "elbo": "aabo-elbo-svgp"}

JOINT_COLUMNS = (
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
    "seconds",
)


def check_checkout(path: Path) -> None:
    r"""Raise a ValueError unless ``path`` is the pinned, unchanged release."""
    try:
        head = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(path), "diff", "--name-only", "HEAD", "--", "*.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        raise ValueError(f"--aabo {str(path)!r} is not a git checkout") from None
    if head != PINNED_COMMIT:
        raise ValueError(f"--aabo {str(path)!r} is at {head}, not {PINNED_COMMIT}")
    if changed:
        raise ValueError(f"--aabo {str(path)!r} has changed files: {changed}")


def install_shims() -> None:
    r"""The environment shims listed in the module docstring (1-3)."""
    wandb = types.ModuleType("wandb")

    class _Tracker:
        def log(self, *args: object, **kwargs: object) -> None:
            pass

        def finish(self) -> None:
            pass

    wandb.init = lambda **kwargs: _Tracker()  # type: ignore[attr-defined]
    sys.modules["wandb"] = wandb
    if importlib.util.find_spec("fire") is None:
        fire = types.ModuleType("fire")
        fire.Fire = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        sys.modules["fire"] = fire
    from linear_operator.operators import LinearOperator

    if not hasattr(LinearOperator, "diag"):
        LinearOperator.diag = LinearOperator.diagonal  # type: ignore[attr-defined]


def import_run_bo(path: Path) -> types.ModuleType:
    r"""Import their ``scripts/run_bo.py`` with the checkout's root on ``sys.path``."""
    install_shims()
    root = str(path.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(
        "aabo_run_bo", path / "scripts" / "run_bo.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(sys.stderr):
        spec.loader.exec_module(module)
    return module


def arm_kwargs(arm: str, seed: int, budget: int, n_init: int, m: int) -> dict:
    r"""``Optimize``'s arguments for one arm of the Hartmann6 reference.

    Everything not named here keeps their default (``lr`` 0.01, ``x_next_lr`` 0.001,
    ``acq_func`` "ei", ``n_update_epochs`` 5, ``train_bsz`` 32, ``grad_clip`` 2,
    3 failures / 30 epochs, 10 warm-start epochs, ``update_on_n_pts`` 100,
    alternating updates, float64, Moss et al. inducing points).
    """
    if arm not in METHODS:
        raise ValueError(f"--arm {arm!r} is not one of {sorted(METHODS)}")
    return dict(
        task_id="hartmann6",
        seed=seed,
        max_n_oracle_calls=budget,
        bsz=1,
        num_initialization_points=n_init,
        n_inducing_pts=m,
        eulbo=arm == "eulbo",
        use_turbo=False,
        verbose=False,
    )


def _noise(model: torch.nn.Module) -> float:
    return float(model.likelihood.noise.detach().reshape(-1)[0])


def _window_elbo(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    r"""GPyTorch's per-datum ELBO on ``(x, y)``: deterministic, no random numbers."""
    import gpytorch

    was_training = model.training
    model.train()
    with torch.no_grad():
        mll = gpytorch.mlls.VariationalELBO(model.likelihood, model, num_data=len(y))
        value = float(mll(model(x), y))
    model.train(was_training)
    return value


class Recorder:
    r"""Wraps their objective: writes rows and the checkpoint after each call."""

    def __init__(self, opt: object, arm: str, seed: int, output: Path) -> None:
        self.opt = opt
        self.inner = opt.objective  # type: ignore[attr-defined]
        self.method = METHODS[arm]
        self.seed = seed
        self.output = output
        self.rows: list[dict] = []
        self.joint: list[dict] = []
        self.best = math.inf
        self.step_start = time.perf_counter()
        self.fit_seconds = 0.0
        self.acq_seconds = 0.0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    @property
    def num_calls(self) -> int:
        return self.inner.num_calls

    @num_calls.setter
    def num_calls(self, value: int) -> None:
        self.inner.num_calls = value

    def initial_rows(self, x: torch.Tensor, y: torch.Tensor) -> None:
        for point, value in zip(x, y.reshape(-1), strict=True):
            self._add_row(point, float(value), iteration=0, position=0, seconds=0.0)

    def _add_row(
        self,
        point: torch.Tensor,
        value: float,
        iteration: int,
        position: int,
        seconds: float,
    ) -> None:
        hartmann = -value
        self.best = min(self.best, hartmann)
        model = getattr(self.opt, "model", None)
        diagnostics = None
        if iteration > 0 and model is not None:
            diagnostics = {"noise": _noise(model)}
        row = build_row(
            [float(v) for v in point],
            problem="hartmann6",
            dim=6,
            method=self.method,
            seed=self.seed,
            n_evals=len(self.rows) + 1,
            iteration=iteration,
            batch_position=position,
            value=hartmann,
            status="ok",
            error="",
            best_value=self.best,
            regret=max(self.best - HARTMANN6_MIN, 0.0),
            seconds=seconds,
            fit_seconds=self.fit_seconds if iteration else 0.0,
            acq_seconds=self.acq_seconds if iteration else 0.0,
            eval_seconds=0.0,
            init="uniform",
            outcome_transform="standardize-once",
            **diagnostic_fields(diagnostics),
        )
        self.rows.append(row)

    def __call__(self, x_next: torch.Tensor) -> torch.Tensor:
        start = time.perf_counter()
        y_next = self.inner(x_next)
        seconds = time.perf_counter() - self.step_start
        eval_seconds = time.perf_counter() - start
        iteration = 1 + max((r["iteration"] for r in self.rows), default=0)
        first = len(self.rows)
        for position, (point, value) in enumerate(
            zip(x_next, y_next.reshape(-1), strict=True)
        ):
            self._add_row(point, float(value), iteration, position, seconds)
        for row in self.rows[first:]:
            row["eval_seconds"] = eval_seconds
        self.save(x_next, y_next)
        self.fit_seconds = self.acq_seconds = 0.0
        self.step_start = time.perf_counter()
        return y_next

    def save(self, x_next: torch.Tensor, y_next: torch.Tensor) -> None:
        r"""Checkpoint the state that ``run()`` will hold after appending this batch."""
        opt = self.opt
        state = {
            "train_x": torch.cat((opt.train_x, x_next), dim=-2),  # type: ignore[attr-defined]
            "train_y": torch.cat((opt.train_y, y_next), dim=-2),  # type: ignore[attr-defined]
            "model": opt.model.state_dict(),  # type: ignore[attr-defined]
            "num_calls": self.inner.num_calls,
            "torch_rng": torch.get_rng_state(),
            # their set_seed seeds the legacy global stream, so that is what is saved
            "numpy_rng": np.random.get_state(),  # noqa: NPY002
            "python_rng": random.getstate(),
            "rows": self.rows,
            "joint": self.joint,
        }
        tmp = self.output / "checkpoint.pt.tmp"
        torch.save(state, tmp)
        os.replace(tmp, self.output / "checkpoint.pt")
        write_csv_atomic(self.output / "results.csv", columns(6), self.rows)
        if self.joint:
            write_csv_atomic(self.output / "joint.csv", JOINT_COLUMNS, self.joint)


def write_csv_atomic(path: Path, fieldnames: tuple[str, ...], rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    writer = CsvWriter(tmp, fieldnames)
    for row in rows:
        writer.write(row)
    writer.close()
    os.replace(tmp, path)


def instrument(run_bo: types.ModuleType, recorder: Recorder) -> None:
    r"""Wrap their three step functions in ``run_bo``'s namespace (shim 4)."""
    fit, propose = run_bo.update_model_elbo, run_bo.generate_batch
    joint = run_bo.update_model_and_generate_candidates_eulbo

    def timed_fit(**kwargs: object) -> dict:
        start = time.perf_counter()
        out = fit(**kwargs)
        recorder.fit_seconds += time.perf_counter() - start
        return out

    def timed_propose(**kwargs: object) -> torch.Tensor:
        start = time.perf_counter()
        out = propose(**kwargs)
        recorder.acq_seconds += time.perf_counter() - start
        return out

    def recorded_joint(**kwargs: object) -> dict:
        from utils.compute_expected_log_utility import get_expected_log_utility_x_next

        model, x, y = kwargs["model"], kwargs["train_x"], kwargs["train_y"]
        x0 = kwargs["init_x_next"]
        q = x0.shape[0]  # type: ignore[union-attr]
        if q != 1:  # their q > 1 utility draws base samples; keep the stream intact
            raise ValueError(f"the recorded statistics need q = 1, got {q}")

        def elogu(m: torch.nn.Module, xq: torch.Tensor) -> float:
            with torch.no_grad():
                return float(
                    get_expected_log_utility_x_next(
                        use_kg=False,
                        acquisition_bsz=1,
                        model=m,
                        x_next=xq,
                        kg_samples=None,
                        zs=None,
                        normed_best_f=kwargs["normed_best_f"],
                        base_samples=None,
                        num_mc_samples_qei=kwargs["num_mc_samples_qei"],
                    )
                )

        before = (elogu(model, x0), _window_elbo(model, x, y), _noise(model))
        start = time.perf_counter()
        out = joint(**kwargs)
        seconds = time.perf_counter() - start
        recorder.acq_seconds += seconds
        new_model, x1 = out["model"], out["x_next"]
        recorder.joint.append(
            dict(
                step=len(recorder.joint) + 1,
                n_evals=recorder.inner.num_calls,
                n_window=len(y),  # type: ignore[arg-type]
                elogu_before=before[0],
                elogu_after=elogu(new_model, x1),
                elbo_before=before[1],
                elbo_after=_window_elbo(new_model, x, y),
                x_move=float((x1 - x0.detach().cpu()).abs().max()),
                noise_before=before[2],
                noise_after=_noise(new_model),
                seconds=seconds,
            )
        )
        return out

    run_bo.update_model_elbo = timed_fit
    run_bo.generate_batch = timed_propose
    run_bo.update_model_and_generate_candidates_eulbo = recorded_joint


def restore(opt: object, recorder: Recorder, state: dict) -> None:
    r"""Put a checkpoint's state back into a freshly built ``Optimize``."""
    opt.train_x = state["train_x"]  # type: ignore[attr-defined]
    opt.train_y = state["train_y"]  # type: ignore[attr-defined]
    opt.model.load_state_dict(state["model"])  # type: ignore[attr-defined]
    opt.init_training_complete = True  # type: ignore[attr-defined]
    recorder.inner.num_calls = state["num_calls"]
    recorder.rows = state["rows"]
    recorder.joint = state["joint"]
    recorder.best = min(r["best_value"] for r in recorder.rows)
    torch.set_rng_state(state["torch_rng"])
    np.random.set_state(state["numpy_rng"])  # noqa: NPY002
    random.setstate(state["python_rng"])


def run(args: argparse.Namespace) -> Path:
    r"""Run (or resume) one arm and seed; returns the output directory."""
    aabo = Path(args.aabo)
    check_checkout(aabo)
    output = Path(args.output)
    checkpoint = output / "checkpoint.pt"
    if output.exists() and any(output.iterdir()) and not args.resume:
        raise ValueError(f"--output {str(output)!r} holds results; pass --resume")
    output.mkdir(parents=True, exist_ok=True)
    run_bo = import_run_bo(aabo)
    kwargs = arm_kwargs(args.arm, args.seed, args.budget, args.n_init, args.m)
    opt = run_bo.Optimize(**kwargs)
    recorder = Recorder(opt, args.arm, args.seed, output)
    if args.resume and checkpoint.exists():
        restore(opt, recorder, torch.load(checkpoint, weights_only=False))
    else:
        recorder.initial_rows(opt.train_x, opt.train_y)
    opt.objective = recorder
    instrument(run_bo, recorder)
    if recorder.inner.num_calls < args.budget:
        recorder.step_start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):
            opt.run()
    else:
        write_csv_atomic(output / "results.csv", columns(6), recorder.rows)
    return output


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run the EULBO authors' released code (unchanged) on Hartmann6."
    )
    parser.add_argument("--aabo", required=True, help="checkout of nataliemaus/aabo")
    parser.add_argument("--arm", required=True, choices=sorted(METHODS))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--budget", type=int, default=300, help="evaluations in all")
    parser.add_argument("--n-init", type=int, default=100)
    parser.add_argument("--m", type=int, default=100, help="inducing points")
    parser.add_argument("--output", required=True)
    parser.add_argument("--resume", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out = run(args)
    except ValueError as error:
        print(f"aabo_reference.py: error: {error}", file=sys.stderr)
        return 2
    rows = read_results(out / "results.csv").rows
    print(f"{out}: {len(rows)} rows, best {rows[-1]['best_value']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
