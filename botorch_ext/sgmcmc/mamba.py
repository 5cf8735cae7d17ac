r"""MAMBA: successive halving over SGMCMC hyperparameters with a Stein reward.

.. [Coullon2023mamba]
    J. Coullon, L. South and C. Nemeth. Efficient and generalizable tuning
    strategies for stochastic gradient MCMC. Statistics and Computing, 2023.
.. [Jamieson2016sh]
    K. Jamieson and A. Talwalkar. Non-stochastic best arm identification and
    hyperparameter optimization. AISTATS 2016.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from tqdm import tqdm

from botorch_ext.sgmcmc import arms as arm_module
from botorch_ext.sgmcmc.samplers import GradientEstimator, SamplerState
from botorch_ext.validation import check_positive, check_positive_int

__all__ = ["MambaResult", "MambaRound", "mamba", "round_budgets"]

#: The arm-level names that this module re-exported in 0.2.0 (their home is
#: ``botorch_ext.sgmcmc.arms``): still importable from here, with a
#: ``DeprecationWarning``, until 0.3.0.
_MOVED = (
    "ArmScore",
    "ArmSettings",
    "MambaArm",
    "arm_settings",
    "mamba_arms",
    "run_and_score_arm",
    "stein_metric",
)


def __getattr__(name: str) -> object:
    r"""Serve the arm-level names from ``botorch_ext.sgmcmc.arms``, with a warning."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__}.{name} moved to botorch_ext.sgmcmc.arms.{name}; import it from "
        "there (the old path goes in 0.3.0)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(arm_module, name)


@dataclass
class MambaRound:
    r"""One round of successive halving.

    Attributes:
        budget: Per-arm budget of the round (seconds or iterations).
        arms: One dict per arm run in the round: ``arm``, ``metric`` (``inf`` for
            a diverged arm or one without samples), ``num_samples`` (used by the
            metric), ``num_steps``, ``seconds``, ``diverged``.
        survivors: The arms promoted to the next round (the best one after the
            last round).
    """

    budget: float
    arms: list[dict[str, Any]] = field(default_factory=list)
    survivors: list[arm_module.MambaArm] = field(default_factory=list)


@dataclass
class MambaResult:
    r"""Output of ``mamba``.

    Attributes:
        best_arm: The selected ``MambaArm``.
        samples: The best arm's samples of the last round (those its reward was
            measured on), thinned.
        state: The best arm's final ``SamplerState`` (continue sampling from it).
        metric: The best arm's last Stein discrepancy.
        history: One ``MambaRound`` per round.
        seconds: Wall-clock seconds of the whole tuning run.
    """

    best_arm: arm_module.MambaArm
    samples: Tensor
    state: SamplerState
    metric: float
    history: list[MambaRound]
    seconds: float


def round_budgets(budget: float, num_arms: int, eta: int = 3) -> list[float]:
    r"""Per-arm budgets ``r_i = eta^i r_0`` of MAMBA's ``floor(log_eta M)`` rounds.

    ``r_0 = R (eta - 1) / (eta^K - 1)`` makes ``sum_i r_i = R``: the arm that
    survives every round has run for exactly the budget ``R`` [Coullon2023mamba,
    Sec. 3.2.3, where ``R`` is "the run time of the longest sampler"]. One round
    when ``M < eta``.

    Args:
        budget: ``R > 0``.
        num_arms: ``M >= 1``.
        eta: Reduction factor ``>= 2``.

    Returns:
        The list ``[r_0, ..., r_{K-1}]``.
    """
    check_positive("budget", budget)
    check_positive_int("num_arms", num_arms)
    if int(eta) != eta or eta < 2:
        raise ValueError(f"`eta` must be an integer >= 2, got {eta}.")
    # The epsilon guards floor(log(9) / log(3)) = 1.999... style rounding.
    K = max(1, math.floor(math.log(num_arms) / math.log(eta) + 1e-9))
    r0 = budget * (eta - 1) / (eta**K - 1)
    return [r0 * eta**i for i in range(K)]


def mamba(
    gradient: GradientEstimator,
    theta0: Tensor,
    num_data: int,
    step_sizes: Sequence[float],
    batch_sizes: Sequence[int],
    budget: float,
    num_leapfrog_steps: Sequence[int] | None = None,
    eta: int = 3,
    settings: arm_module.ArmSettings | None = None,
    generator: torch.Generator | None = None,
    progress: bool = True,
    **setting_overrides: Any,
) -> MambaResult:
    r"""Tune an SGMCMC sampler by successive halving on a Stein discrepancy.

    MAMBA [Coullon2023mamba]_ (Algorithm 1) starts ``M`` arms (the grid of step
    sizes x batch sizes x, for SGHMC, leapfrog steps) at ``theta0``. In round
    ``i`` every surviving arm runs for ``r_i = eta^i r_0`` more seconds,
    continuing its chain, and is scored by the reward ``-KSD`` (or ``-FSSD``) of
    that round's thinned samples with full-batch scores; the best
    ``floor(|S_i| / eta)`` arms survive. After ``floor(log_eta M)`` rounds the
    best arm wins. Diverged arms and arms without samples rank last. Since
    ``sum_i r_i = R`` the winner has run for ``R``, and the whole tuning costs
    far less than a grid search giving every arm ``R`` (successive halving,
    Jamieson and Talwalkar, 2016).

    Choices: ``eta = 3``, thinning by 10 and the KSD with the IMQ kernel
    (``c = 1``, ``beta = -1/2``) are the paper's logistic-regression settings.

    Example:
        >>> result = mamba(grad, theta_map, num_data=N,
        ...                step_sizes=[10**-e for e in (3, 4, 5, 6)],
        ...                batch_sizes=[N, N // 10, N // 100], budget=1.0)
        >>> result.best_arm, result.samples.shape

    Args:
        gradient: ``gradient(theta, indices)``, unbiased for ``grad log pi``.
        theta0: ``d`` starting point of every arm (the paper: the MAP).
        num_data: ``N``.
        step_sizes: Grid of step sizes.
        batch_sizes: Grid of batch sizes.
        budget: ``R``: seconds (or iterations, see ``ArmSettings.budget_unit``)
            the winning arm runs in total.
        num_leapfrog_steps: Grid of leapfrog steps (SGHMC only; default 10).
        eta: Reduction factor (integer >= 2).
        settings: How every arm is run and scored (``ArmSettings``).
        generator: Seeds one generator per arm (reproducible in ``"steps"``).
        progress: Show a progress bar over rounds.
        **setting_overrides: Fields of ``ArmSettings`` replacing those of
            ``settings``, e.g. ``sampler="sghmc", thin=5``.

    Returns:
        A ``MambaResult``.
    """
    merged = arm_module.arm_settings(settings, **setting_overrides)
    arms, budgets = _mamba_plan(
        merged,
        theta0,
        num_data,
        step_sizes,
        batch_sizes,
        budget,
        num_leapfrog_steps,
        eta,
    )
    seed_gen = generator or torch.Generator().manual_seed(0)
    generators = {
        a: torch.Generator().manual_seed(
            int(torch.randint(2**62, (1,), generator=seed_gen))
        )
        for a in arms
    }
    states = {a: SamplerState(theta=theta0.detach().clone()) for a in arms}
    last: dict[arm_module.MambaArm, tuple[float, Tensor]] = {}
    survivors, history = list(arms), []
    start = time.perf_counter()
    bar = tqdm(total=len(budgets), desc="MAMBA", disable=not progress, leave=False)
    for i, r in enumerate(budgets):
        record = MambaRound(budget=r)
        for arm in survivors:
            scored = arm_module.run_and_score_arm(
                gradient,
                states[arm],
                arm,
                r,
                num_data,
                settings=merged,
                generator=generators[arm],
            )
            last[arm] = (scored.metric, scored.samples)
            record.arms.append(_round_entry(arm, scored))
        ranked = sorted(survivors, key=lambda a: last[a][0])
        is_last = i == len(budgets) - 1
        survivors = ranked[:1] if is_last else ranked[: max(1, len(ranked) // eta)]
        record.survivors = list(survivors)
        history.append(record)
        bar.update(1)
        bar.set_postfix(arms=len(survivors), best=f"{last[ranked[0]][0]:.3g}")
    bar.close()
    best = survivors[0]
    value, samples = last[best]
    if math.isinf(value):
        warnings.warn(
            "No MAMBA arm produced two finite thinned samples in its last round; "
            "the 'best' arm is arbitrary. Increase `budget`, lower `thin` or "
            "shrink `step_sizes`.",
            RuntimeWarning,
            stacklevel=2,
        )
    return MambaResult(
        best_arm=best,
        samples=samples,
        state=states[best],
        metric=value,
        history=history,
        seconds=time.perf_counter() - start,
    )


def _mamba_plan(
    settings: arm_module.ArmSettings,
    theta0: Tensor,
    num_data: int,
    step_sizes: Sequence[float],
    batch_sizes: Sequence[int],
    budget: float,
    num_leapfrog_steps: Sequence[int] | None,
    eta: int,
) -> tuple[list[arm_module.MambaArm], list[float]]:
    r"""Check ``mamba``'s inputs; return its arms and per-round budgets."""
    sampler = settings.sampler
    if sampler == "sgld" and num_leapfrog_steps is not None:
        raise ValueError("`num_leapfrog_steps` is an SGHMC setting; sampler='sgld'.")
    arms = arm_module.mamba_arms(
        step_sizes,
        batch_sizes,
        (num_leapfrog_steps or [10]) if sampler == "sghmc" else None,
    )
    budgets = round_budgets(budget, len(arms), eta)
    if settings.budget_unit == "steps":
        # Whole iterations per round that add up to round(R) for the winner.
        cum = [round(sum(budgets[: i + 1])) for i in range(len(budgets))]
        budgets = [max(1, b - a) for a, b in zip([0, *cum[:-1]], cum, strict=True)]
    check_positive_int("num_data", num_data)
    check_positive_int("thin", settings.thin)
    check_positive_int("max_metric_samples", settings.max_metric_samples)
    if theta0.dim() != 1 or not bool(torch.isfinite(theta0).all()):
        raise ValueError(f"`theta0` must be a finite 1-d tensor, got {theta0}.")
    return arms, budgets


def _round_entry(
    arm: arm_module.MambaArm, scored: arm_module.ArmScore
) -> dict[str, Any]:
    r"""One arm's row in ``MambaRound.arms``."""
    return {
        "arm": arm,
        "metric": scored.metric,
        "num_samples": scored.samples.shape[0],
        "num_steps": scored.run.num_steps,
        "seconds": scored.run.seconds,
        "diverged": scored.run.state.diverged,
    }
