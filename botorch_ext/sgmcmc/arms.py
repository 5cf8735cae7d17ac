r"""One MAMBA arm: its hyperparameters, settings, run and Stein reward.

``mamba`` (in ``botorch_ext.sgmcmc.mamba``) runs these arms by successive
halving; ``run_and_score_arm`` is public so that grid searches and evaluations
score arms exactly as MAMBA does.

References:

.. [Coullon2023mamba]
    J. Coullon, L. South and C. Nemeth. Efficient and generalizable tuning
    strategies for stochastic gradient MCMC. Statistics and Computing, 2023.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from botorch_ext.sgmcmc.samplers import (
    GradientEstimator,
    SamplerResult,
    SamplerState,
    sghmc,
    sgld,
)
from botorch_ext.sgmcmc.stein import (
    finite_set_stein_discrepancy,
    kernel_stein_discrepancy,
)
from botorch_ext.validation import check_positive, check_positive_int

SAMPLERS = ("sgld", "sghmc")
METRICS = ("ksd", "fssd")
BUDGET_UNITS = ("seconds", "steps")


@dataclass(frozen=True)
class MambaArm:
    r"""One hyperparameter setting of MAMBA's grid.

    Attributes:
        step_size: The sampler's step size ``h``.
        batch_size: The minibatch size (capped at ``num_data`` when run).
        num_leapfrog_steps: SGHMC's leapfrog steps; ``None`` for SGLD.
    """

    step_size: float
    batch_size: int
    num_leapfrog_steps: int | None = None


@dataclass
class ArmScore:
    r"""One arm's run and its Stein discrepancy, from ``run_and_score_arm``.

    Attributes:
        run: The ``SamplerResult`` of the run: all its thinned samples, its final
            state (continue the chain from it), its steps and seconds.
        samples: The samples the metric scored: at most ``max_metric_samples``
            of ``run.samples``, evenly spaced along the chain.
        metric: Their Stein discrepancy; ``inf`` for a diverged run, fewer than
            two samples or non-finite scores (MAMBA ranks such arms last).
    """

    run: SamplerResult
    samples: Tensor
    metric: float


@dataclass(frozen=True)
class ArmSettings:
    r"""How MAMBA runs and scores every arm: the settings shared by all arms.

    The arms differ in step size, batch size and leapfrog steps (``MambaArm``);
    everything else about a run and its reward is set here once.

    Example:
        >>> settings = ArmSettings(sampler="sghmc", thin=5, metric_kwargs={"c": 0.1})
        >>> result = mamba(grad, theta_map, N, [1e-4, 1e-5], [N], budget=1.0,
        ...                settings=settings)

    Args:
        sampler: ``"sgld"`` or ``"sghmc"``.
        metric: ``"ksd"`` or ``"fssd"``.
        score: ``samples (k x d) -> k x d`` full-batch ``grad log pi``; default
            ``gradient(chunk, None)`` over chunks of ``score_chunk_size`` samples
            (the estimator must then accept a batch).
        score_chunk_size: Samples per full-batch score call (bounds memory).
        metric_kwargs: Passed to the discrepancy, e.g. ``{"c": 0.1}``. The IMQ
            kernel's ``c`` sets the scale it resolves: with ``c = 1`` and a
            posterior much narrower than 1, the KSD reacts to a shifted mean far
            more than to an inflated spread.
        thin: Keep every ``thin``-th iterate along each arm's chain. A round
            with fewer than two thinned samples ranks the arm last, like a
            diverged one: under a time budget an arm too slow to produce samples
            is a poor arm (scoring unthinned, correlated iterates instead would
            favour such arms, since the KSD shrinks with the number of samples).
        max_metric_samples: Cap on the samples entering the metric, evenly
            spaced along the chain (the KSD's cost is quadratic).
        budget_unit: ``"seconds"`` ([Coullon2023mamba]_) or ``"steps"``
            (iterations: deterministic).
        friction: SGHMC friction.
    """

    sampler: str = "sgld"
    metric: str = "ksd"
    score: Callable[[Tensor], Tensor] | None = None
    score_chunk_size: int = 64
    metric_kwargs: dict[str, Any] | None = None
    thin: int = 10
    max_metric_samples: int = 1000
    budget_unit: str = "seconds"
    friction: float = 0.01

    def __post_init__(self) -> None:
        """Check the choices and the chunk size."""
        _check_choices(self.sampler, self.metric, self.budget_unit)
        check_positive_int("score_chunk_size", self.score_chunk_size)


def mamba_arms(
    step_sizes: Sequence[float],
    batch_sizes: Sequence[int],
    num_leapfrog_steps: Sequence[int] | None = None,
) -> list[MambaArm]:
    r"""The grid of arms: every combination of the given values.

    Args:
        step_sizes: Step sizes ``h`` (the paper used ``10^-1 ... 10^-7.5``).
        batch_sizes: Minibatch sizes (the paper used 100%, 10%, 1%, 0.1% of N).
        num_leapfrog_steps: For SGHMC (the paper used 5 and 10); ``None`` for SGLD.

    Returns:
        A list of ``MambaArm``.

    Raises:
        ValueError: For a grid that is not a sequence (a single number), is
            empty, or holds a value out of range.
    """
    for name, grid in (
        ("step_sizes", step_sizes),
        ("batch_sizes", batch_sizes),
        ("num_leapfrog_steps", num_leapfrog_steps),
    ):
        if grid is not None and not isinstance(grid, (Sequence, Tensor)):
            raise ValueError(
                f"`{name}` must be a sequence of values (a grid), got {grid!r}; "
                f"for one value pass [{grid!r}]."
            )
    if len(step_sizes) == 0 or len(batch_sizes) == 0:
        raise ValueError(
            f"The grid is empty: step_sizes={list(step_sizes)}, "
            f"batch_sizes={list(batch_sizes)}."
        )
    if num_leapfrog_steps is not None and len(num_leapfrog_steps) == 0:
        raise ValueError("The grid is empty: num_leapfrog_steps=[].")
    for h in step_sizes:
        check_positive("step_sizes", h)
    for n in batch_sizes:
        check_positive_int("batch_sizes", n)
    leapfrogs = [None] if num_leapfrog_steps is None else list(num_leapfrog_steps)
    for L in leapfrogs:
        if L is not None:
            check_positive_int("num_leapfrog_steps", L)
    # Repeated grid values would make equal arms share one chain: merged.
    return list(
        dict.fromkeys(
            MambaArm(float(h), int(n), L)
            for h, n, L in itertools.product(step_sizes, batch_sizes, leapfrogs)
        )
    )


def arm_settings(settings: ArmSettings | None = None, **overrides: Any) -> ArmSettings:
    r"""``settings`` (default ``ArmSettings()``) with some fields replaced.

    Example:
        >>> arm_settings(ArmSettings(thin=5), sampler="sghmc").thin
        5

    Args:
        settings: The base settings; ``None`` for the defaults.
        **overrides: Fields of ``ArmSettings`` to replace.

    Returns:
        The merged ``ArmSettings`` (checked again).
    """
    if settings is not None and not isinstance(settings, ArmSettings):
        raise ValueError(
            f"`settings` must be an ArmSettings, got {type(settings).__name__}."
        )
    base = settings if settings is not None else ArmSettings()
    return dataclasses.replace(base, **overrides) if overrides else base


def run_and_score_arm(
    gradient: GradientEstimator,
    theta: Tensor | SamplerState,
    arm: MambaArm,
    budget: float,
    num_data: int,
    settings: ArmSettings | None = None,
    generator: torch.Generator | None = None,
    **setting_overrides: Any,
) -> ArmScore:
    r"""Run one arm's sampler for ``budget`` and score its samples as MAMBA does.

    One step of ``mamba``'s rounds, public for grid searches and evaluations that
    must score arms exactly as MAMBA does: the arm's sampler (SGLD, or SGHMC
    with the arm's leapfrog steps) runs from ``theta`` with the arm's step size
    and batch size (capped at ``num_data``), and its thinned samples get the
    reward of ``stein_metric``. A diverged chain passed as ``theta`` is not run
    again (an empty run, metric ``inf``).

    Example:
        >>> arm = MambaArm(step_size=1e-5, batch_size=N // 10)
        >>> scored = run_and_score_arm(grad, theta_map, arm, budget=1.0, num_data=N)
        >>> scored.metric, scored.run.samples.shape

    Args:
        gradient: ``gradient(theta, indices)``, unbiased for ``grad log pi``.
        theta: ``d`` start, or a ``SamplerState`` to continue its chain (updated
            in place by the sampler).
        arm: The hyperparameters. With ``sampler="sghmc"``,
            ``arm.num_leapfrog_steps`` is required; with ``"sgld"`` it must be
            None.
        budget: Seconds (or iterations, see ``ArmSettings.budget_unit``) of this
            run.
        num_data: ``N``.
        settings: How the arm is run and scored (``ArmSettings``).
        generator: Drives the sampler's noise and minibatches.
        **setting_overrides: Fields of ``ArmSettings`` replacing those of
            ``settings``, e.g. ``thin=2, budget_unit="steps"``.

    Returns:
        An ``ArmScore``: the run, the scored samples and the metric.
    """
    s = arm_settings(settings, **setting_overrides)
    if s.sampler == "sghmc" and arm.num_leapfrog_steps is None:
        raise ValueError("`arm.num_leapfrog_steps` is required with sampler='sghmc'.")
    if s.sampler == "sgld" and arm.num_leapfrog_steps is not None:
        raise ValueError(
            "`arm.num_leapfrog_steps` is an SGHMC setting; sampler='sgld'."
        )
    check_positive("budget", budget)
    check_positive_int("num_data", num_data)
    score = s.score
    if score is None:
        chunk_size = s.score_chunk_size

        def score(samples: Tensor) -> Tensor:
            return torch.cat([gradient(c, None) for c in samples.split(chunk_size)])

    if isinstance(theta, SamplerState) and theta.diverged:
        # Its chain has left the posterior for good; more steps cannot help.
        empty = theta.theta.new_empty(0, theta.theta.numel())
        run = SamplerResult(empty, theta, 0, 0, 0.0)
    else:
        run = _run_arm(gradient, theta, arm, budget, num_data, s, generator)
    value, samples = stein_metric(
        run.samples,
        score,
        metric=s.metric,
        diverged=run.state.diverged,
        max_samples=s.max_metric_samples,
        metric_kwargs=s.metric_kwargs,
    )
    return ArmScore(run=run, samples=samples, metric=value)


def stein_metric(
    samples: Tensor,
    score: Callable[[Tensor], Tensor],
    metric: str = "ksd",
    diverged: bool = False,
    max_samples: int = 1000,
    metric_kwargs: dict[str, Any] | None = None,
) -> tuple[float, Tensor]:
    r"""MAMBA's reward of a set of samples: their Stein discrepancy.

    At most ``max_samples`` samples are scored, with full-batch scores, evenly
    spaced along the chain, so a long run is judged on its whole length
    at a bounded (quadratic, for the KSD) cost. ``inf`` for a diverged chain,
    fewer than two samples (nothing about the spread) or non-finite scores, so
    that such arms rank last.

    Example:
        >>> value, used = stein_metric(reference_samples, lambda s: grad(s, None))

    Args:
        samples: ``k x d`` samples, in chain order.
        score: ``samples (m x d) -> m x d`` full-batch ``grad log pi``.
        metric: ``"ksd"`` (``kernel_stein_discrepancy``) or ``"fssd"``
            (``finite_set_stein_discrepancy``, test locations drawn from a fixed
            seed unless ``metric_kwargs`` gives a ``generator``).
        diverged: The chain diverged (the metric is then ``inf``).
        max_samples: Cap on the samples scored.
        metric_kwargs: Passed to the discrepancy, e.g. ``{"c": 0.1}``.

    Returns:
        The metric and the samples it scored.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {METRICS}.")
    check_positive_int("max_samples", max_samples)
    if samples.shape[0] > max_samples:
        idx = torch.linspace(0, samples.shape[0] - 1, max_samples).round().long()
        samples = samples[idx]
    # Fewer than two samples say nothing about the spread: ranked with the
    # diverged arms, last.
    if diverged or samples.shape[0] < 2:
        return math.inf, samples
    scores = score(samples)
    if not bool(torch.isfinite(scores).all()):
        return math.inf, samples
    kwargs = dict(metric_kwargs or {})
    if metric == "ksd":
        discrepancy = kernel_stein_discrepancy(samples, scores, **kwargs)
    else:
        kwargs.setdefault("generator", torch.Generator().manual_seed(0))
        discrepancy = finite_set_stein_discrepancy(samples, scores, **kwargs)
    value = float(discrepancy)
    return (value if math.isfinite(value) else math.inf), samples


def _check_choices(sampler: str, metric: str, budget_unit: str) -> None:
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose from {SAMPLERS}.")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {METRICS}.")
    if budget_unit not in BUDGET_UNITS:
        raise ValueError(
            f"unknown budget_unit {budget_unit!r}; choose from {BUDGET_UNITS}."
        )


def _run_arm(
    gradient: GradientEstimator,
    theta: Tensor | SamplerState,
    arm: MambaArm,
    budget: float,
    num_data: int,
    settings: ArmSettings,
    generator: torch.Generator | None,
) -> SamplerResult:
    r"""The arm's sampler run for ``budget`` seconds or steps."""
    limit: dict[str, Any] = (
        {"time_budget": budget}
        if settings.budget_unit == "seconds"
        else {"num_steps": int(budget)}
    )
    common: dict[str, Any] = dict(
        gradient=gradient,
        theta=theta,
        step_size=arm.step_size,
        batch_size=min(arm.batch_size, num_data),
        num_data=num_data,
        thin=settings.thin,
        generator=generator,
        **limit,
    )
    if settings.sampler == "sghmc":
        # run_and_score_arm checked that an SGHMC arm has leapfrog steps.
        assert arm.num_leapfrog_steps is not None
        return sghmc(
            num_leapfrog_steps=arm.num_leapfrog_steps,
            friction=settings.friction,
            **common,
        )
    return sgld(**common)
