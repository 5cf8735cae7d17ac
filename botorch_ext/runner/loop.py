r"""One Bayesian-optimization run: initial design, then batches of ``q`` proposals.

Data path: problem + method + seed -> initial design -> loop (fit, propose,
evaluate, append row) -> rows, each handed to ``on_row`` as soon as it exists so
that an interrupted run keeps what it evaluated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
from botorch.utils.sampling import draw_sobol_samples

from botorch_ext.runner.methods import (
    INITIAL_CONDITIONS,
    OUTCOME_TRANSFORMS,
    SVGP_METHODS,
    MethodOptions,
    get_method,
)
from botorch_ext.runner.problems import get_problem

INITS = ("sobol", "center", "uniform")

#: Columns of ``results.csv``, in order.
COLUMNS = (
    "problem",
    "dim",
    "method",
    "seed",
    "n_evals",
    "value",
    "best_value",
    "regret",
    "seconds",
    "init",
    "outcome_transform",
    "model_noise",
    "model_lengthscales",
    "model_elbo",
    "model_utility",
    "model_fit_steps",
    "model_angular_weights",
    "model_warp",
)

#: The model-state columns: the fitted state of the iteration that proposed the
#: row (empty for the initial design and for model-free methods). ``model_noise``
#: is the noise variance on the model's (standardized) scale,
#: ``model_lengthscales`` the ``;``-joined lengthscales, ``model_elbo`` the
#: per-datum ELBO (SVGP methods), ``model_utility`` the expected log soft
#: improvement of the proposal under the SVGP (the EULBO's utility term; for
#: ``elbo-svgp`` at ``q = 1`` only), ``model_fit_steps`` the Adam steps of the fit,
#: and for BOCK ``model_angular_weights`` (``c_0;...;c_P``) and ``model_warp``
#: (``alpha;beta``).
DIAGNOSTIC_COLUMNS = {
    "model_noise": "noise",
    "model_lengthscales": "lengthscales",
    "model_elbo": "elbo",
    "model_utility": "utility",
    "model_fit_steps": "fit_steps",
    "model_angular_weights": "angular_weights",
    "model_warp": "warp",
}


def _diagnostic_fields(diagnostics: dict | None) -> dict:
    out = {}
    for column, key in DIAGNOSTIC_COLUMNS.items():
        value = (diagnostics or {}).get(key)
        if isinstance(value, list | tuple):
            value = ";".join(f"{v:.4g}" for v in value)
        out[column] = "" if value is None else value
    return out


@dataclass(frozen=True)
class RunConfig:
    r"""Everything that determines one run (and is written to ``config.json``).

    Args:
        problem: A registered problem name.
        method: A registered method name.
        budget: Total number of evaluations, initial design included.
        dim: Problem dimension (the problem's default if None).
        n_init: Size of the initial design.
        q: Batch size of each proposal.
        seed: Seed of the initial design and of the method.
        init: ``"sobol"``, ``"center"`` (the cube's centre plus ``n_init - 1``
            Sobol points, the BOCK paper's start) or ``"uniform"`` (i.i.d.
            uniform points, the EULBO paper's start).
        options: Settings of the model-based methods.
    """

    problem: str
    method: str
    budget: int
    dim: int | None = None
    n_init: int = 10
    q: int = 1
    seed: int = 0
    init: str = "sobol"
    options: MethodOptions = field(default_factory=MethodOptions)

    def validate(self) -> None:
        r"""Raise ``ValueError`` with a one-line message for any bad setting."""
        get_problem(self.problem, self.dim)
        get_method(self.method)
        if self.q < 1:
            raise ValueError(f"q must be >= 1, got {self.q}")
        if self.n_init < 1:
            raise ValueError(f"n-init must be >= 1, got {self.n_init}")
        if self.budget < self.n_init:
            raise ValueError(
                f"budget ({self.budget}) must be at least the initial design "
                f"(n-init = {self.n_init})"
            )
        if self.method == "qes" and self.options.outcome_transform != "standardize":
            raise ValueError(
                "method 'qes' needs a Gaussian posterior; use --outcome-transform "
                "standardize"
            )
        if (
            self.method in SVGP_METHODS
            and self.options.outcome_transform != "standardize"
        ):
            raise ValueError(
                f"method {self.method!r} standardizes its outcomes itself; use "
                "--outcome-transform standardize"
            )
        if self.options.initial_conditions not in INITIAL_CONDITIONS:
            raise ValueError(
                f"unknown initial conditions {self.options.initial_conditions!r}; "
                f"choose from {', '.join(INITIAL_CONDITIONS)}"
            )
        if self.options.outcome_transform not in OUTCOME_TRANSFORMS:
            raise ValueError(
                f"unknown outcome transform {self.options.outcome_transform!r}; "
                f"choose from {', '.join(OUTCOME_TRANSFORMS)}"
            )
        problem = get_problem(self.problem, self.dim)
        if self.options.outcome_transform == "log" and problem.optimal_value < 0:
            raise ValueError(
                "--outcome-transform log needs a positive objective, but "
                f"{self.problem} reaches {problem.optimal_value:g}; use standardize "
                "or bilog"
            )
        if self.init not in INITS:
            raise ValueError(
                f"unknown init {self.init!r}; choose from {', '.join(INITS)}"
            )

    def to_dict(self) -> dict:
        r"""A JSON-serializable view, with the resolved dimension."""
        out = asdict(self)
        out["dim"] = get_problem(self.problem, self.dim).dim
        return out


def initial_design(dim: int, n_init: int, seed: int, init: str) -> torch.Tensor:
    r"""The ``n_init x dim`` initial design in the unit cube.

    Args:
        dim: The dimension.
        n_init: Number of points.
        seed: Seed of the scrambled Sobol sequence.
        init: ``"sobol"``, ``"center"`` (centre first, then Sobol points) or
            ``"uniform"`` (i.i.d. uniform points, the EULBO paper's start).

    Returns:
        An ``n_init x dim`` float64 tensor.
    """
    if init == "uniform":
        gen = torch.Generator().manual_seed(seed)
        return torch.rand(n_init, dim, generator=gen, dtype=torch.double)
    bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).double()
    X = draw_sobol_samples(bounds=bounds, n=n_init, q=1, seed=seed).squeeze(-2)
    if init == "center":
        X = torch.cat([torch.full((1, dim), 0.5, dtype=X.dtype), X[: n_init - 1]])
    return X


def run_bo(
    config: RunConfig,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    r"""Run one BO loop and return one row per evaluation.

    Example:
        >>> rows = run_bo(RunConfig("branin", "qlogei", budget=15, n_init=5))

    Args:
        config: The run configuration (validated here).
        on_row: Called with each row as soon as it is evaluated.

    Returns:
        The rows (dicts with the keys ``COLUMNS``), in evaluation order.
    """
    config.validate()
    problem = get_problem(config.problem, config.dim)
    method = get_method(config.method)
    if hasattr(method, "new_run"):  # methods with state across iterations
        method = method.new_run()
    bounds = problem.bounds
    rows: list[dict] = []
    best = float("inf")
    start = time.monotonic()

    def record(X_new: torch.Tensor, diagnostics: dict | None = None) -> torch.Tensor:
        nonlocal best
        extra = _diagnostic_fields(diagnostics)
        values = problem(X_new)
        seconds = time.monotonic() - start  # one timestamp per batch
        for v in values.tolist():
            best = min(best, v)
            row = {
                "problem": problem.name,
                "dim": problem.dim,
                "method": config.method,
                "seed": config.seed,
                "n_evals": len(rows) + 1,
                "value": v,
                "best_value": best,
                "regret": max(best - problem.optimal_value, 0.0),
                "seconds": seconds,
                "init": config.init,
                "outcome_transform": config.options.outcome_transform,
                **extra,
            }
            rows.append(row)
            if on_row is not None:
                on_row(row)
        return values

    X = initial_design(problem.dim, config.n_init, config.seed, config.init)
    Y = -record(X).unsqueeze(-1)  # BoTorch maximizes
    while len(rows) < config.budget:
        q = min(config.q, config.budget - len(rows))
        candidates = method(X, Y, bounds, q, config.seed, config.options)
        candidates = candidates.clamp(0.0, 1.0).to(X)
        diagnostics = getattr(method, "diagnostics", None)
        Y = torch.cat([Y, -record(candidates, diagnostics).unsqueeze(-1)])
        X = torch.cat([X, candidates])
    return rows
