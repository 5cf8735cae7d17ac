r"""Input constructors registered with BoTorch, so Ax-style code can build the
acquisition functions of this package from a model and its training data.

Importing ``botorch_ext.acquisition`` registers them; afterwards
``get_acqf_input_constructor(qUCB)(model=model, training_data=dataset)`` returns
the keyword arguments of ``qUCB``. Registration is by exact class (a subclass
inherits nothing), so every class is registered explicitly; ``qSoftPI`` and
``qLogSoftPI`` share one constructor.

Defaults follow the experiments of [Wilson2017reparam]: ``beta = sqrt(3)`` for
q-UCB and ``tau = 0.01`` on *standardized* outcomes for q-PI and q-ES, and those
of [Maus2024eulbo] for ``qLogSoftKG``: ``c+`` the best observed value and
``tau = 1`` on standardized outcomes. Because a BoTorch posterior is reported on
the original outcome scale (outcome transforms are untransformed), the
constructors multiply the default ``tau`` by the standard deviation of the
training objective values, so that it means the same thing whatever the scale
of ``Y``; an explicit ``tau`` is used as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition.input_constructors import (
    MaybeDict,
    _get_dataset_field,
    acqf_input_constructor,
    get_best_f_analytic,
    get_best_f_mc,
)
from botorch.acquisition.objective import MCAcquisitionObjective, PosteriorTransform
from botorch.models.model import Model
from botorch.sampling.base import MCSampler
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from botorch_ext.acquisition.entropy_search import draw_representer_points, qES
from botorch_ext.acquisition.probability_of_improvement import (
    DEFAULT_TAU,
    qLogSoftPI,
    qSoftPI,
)
from botorch_ext.acquisition.soft_kg import DEFAULT_NUM_FANTASIES, qLogSoftKG
from botorch_ext.acquisition.ucb import qUCB

#: ``beta`` used in the q-UCB experiments of [Wilson2017reparam].
DEFAULT_BETA = math.sqrt(3.0)


@acqf_input_constructor(qUCB)
def construct_inputs_qUCB(
    model: Model,
    objective: MCAcquisitionObjective | None = None,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    sampler: MCSampler | None = None,
    beta: float = DEFAULT_BETA,
) -> dict[str, Any]:
    r"""Construct kwargs for ``botorch_ext.acquisition.qUCB``.

    Args:
        model: The model to be used in the acquisition function.
        objective: The objective to be used in the acquisition function.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        sampler: The sampler used to draw base samples (optional).
        beta: The exploration weight; ``sqrt(3)`` as in [Wilson2017reparam].

    Returns:
        A dict mapping kwarg names of the constructor to values.
    """
    return {
        "model": model,
        "beta": beta,
        "sampler": sampler,
        "objective": objective,
        "posterior_transform": posterior_transform,
        "X_pending": X_pending,
    }


@acqf_input_constructor(qSoftPI, qLogSoftPI)
def construct_inputs_soft_pi(
    model: Model,
    training_data: MaybeDict[SupervisedDataset],
    objective: MCAcquisitionObjective | None = None,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    sampler: MCSampler | None = None,
    best_f: float | Tensor | None = None,
    tau: float | None = None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    eta: Tensor | float = 1e-3,
) -> dict[str, Any]:
    r"""Construct kwargs for ``qSoftPI`` and ``qLogSoftPI`` (same arguments).

    Args:
        model: The model to be used in the acquisition function.
        training_data: Dataset(s) used to train the model.
        objective: The objective to be used in the acquisition function.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        sampler: The sampler used to draw base samples (optional).
        best_f: The incumbent; the best (feasible) training objective if None.
        tau: The temperature; ``0.01`` times the standard deviation of the
            training objective values if None.
        constraints: Outcome-constraint callables (feasible where < 0).
        eta: Temperature(s) of the constraint indicators.

    Returns:
        A dict mapping kwarg names of the constructor to values.
    """
    if best_f is None:
        best_f = get_best_f_mc(
            training_data=training_data,
            objective=objective,
            posterior_transform=posterior_transform,
            constraints=constraints,
            model=model,
        )
    if tau is None:
        tau = DEFAULT_TAU * training_objective_scale(
            training_data, objective=objective, posterior_transform=posterior_transform
        )
    return {
        "model": model,
        "best_f": best_f,
        "tau": tau,
        "sampler": sampler,
        "objective": objective,
        "posterior_transform": posterior_transform,
        "X_pending": X_pending,
        "constraints": constraints,
        "eta": eta,
    }


@acqf_input_constructor(qES)
def construct_inputs_qES(
    model: Model,
    training_data: MaybeDict[SupervisedDataset],
    bounds: list[tuple[float, float]] | Tensor | None = None,
    representer_points: Tensor | None = None,
    num_representer_points: int = 64,
    tau: float | None = None,
    num_fantasies: int = 16,
    num_inner_samples: int = 64,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    r"""Construct kwargs for ``botorch_ext.acquisition.qES``.

    Args:
        model: The model to be used in the acquisition function.
        training_data: Dataset(s) used to train the model.
        bounds: Search-space bounds, needed to draw representer points when
            ``representer_points`` is None: either a list of ``d`` ``(lower,
            upper)`` pairs (the convention of BoTorch's input constructors and
            Ax) or a ``2 x d`` tensor (the convention of ``optimize_acqf``). The
            type decides, so a ``2 x 2`` case is never ambiguous.
        representer_points: A ``m x d``-dim tensor of representer points; drawn
            with ``draw_representer_points`` if None.
        num_representer_points: How many representer points to draw.
        tau: The temperature; ``0.01`` times the standard deviation of the
            training outcomes if None.
        num_fantasies: Number of fantasy observations.
        num_inner_samples: Number of draws per ``p_max`` estimate.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        seed: Seed for the representer points and the base samples.

    Returns:
        A dict mapping kwarg names of the constructor to values.

    Raises:
        ValueError: If neither ``representer_points`` nor ``bounds`` is given.
    """
    if representer_points is None:
        if bounds is None:
            raise ValueError(
                "qES needs `representer_points` or `bounds` to draw them from; "
                "got neither."
            )
        X = _get_dataset_field(training_data, "X", first_only=True, assert_shared=True)
        if isinstance(bounds, Tensor):
            bounds = bounds.to(X)  # ``2 x d``, as ``optimize_acqf`` takes them
        else:
            # ``d`` (lower, upper) pairs, as BoTorch's constructors (e.g. qKG's)
            # and Ax pass them.
            bounds = torch.tensor(bounds, dtype=X.dtype, device=X.device).T
        representer_points = draw_representer_points(
            model=model,
            bounds=bounds,
            num_points=num_representer_points,
            posterior_transform=posterior_transform,
            seed=seed,
        )
    if tau is None:
        tau = DEFAULT_TAU * training_objective_scale(
            training_data, posterior_transform=posterior_transform
        )
    return {
        "model": model,
        "representer_points": representer_points,
        "tau": tau,
        "num_fantasies": num_fantasies,
        "num_inner_samples": num_inner_samples,
        "posterior_transform": posterior_transform,
        "X_pending": X_pending,
        "seed": 0 if seed is None else seed,
    }


@acqf_input_constructor(qLogSoftKG)
def construct_inputs_qLogSoftKG(
    model: Model,
    training_data: MaybeDict[SupervisedDataset],
    best_f: float | Tensor | None = None,
    tau: float | None = None,
    num_fantasies: int = DEFAULT_NUM_FANTASIES,
    posterior_transform: PosteriorTransform | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    r"""Construct kwargs for ``botorch_ext.acquisition.qLogSoftKG``.

    Args:
        model: The model to be used in the acquisition function.
        training_data: Dataset(s) used to train the model.
        best_f: The constant ``c+``; the best training outcome if None (the
            paper's ``y+``).
        tau: The softplus temperature; the standard deviation of the training
            outcomes if None (temperature 1 on standardized outcomes, as in
            [Maus2024eulbo]).
        num_fantasies: ``S``, the number of fantasies and free points.
        posterior_transform: The posterior transform (optional).
        seed: Seed of the base samples.

    Returns:
        A dict mapping kwarg names of the constructor to values.
    """
    if best_f is None:
        best_f = get_best_f_analytic(
            training_data=training_data, posterior_transform=posterior_transform
        )
    if tau is None:
        tau = training_objective_scale(
            training_data, posterior_transform=posterior_transform
        )
    return {
        "model": model,
        "best_f": best_f,
        "tau": tau,
        "num_fantasies": num_fantasies,
        "posterior_transform": posterior_transform,
        "seed": 0 if seed is None else seed,
    }


def training_objective_scale(
    training_data: MaybeDict[SupervisedDataset],
    objective: MCAcquisitionObjective | None = None,
    posterior_transform: PosteriorTransform | None = None,
) -> float:
    r"""Standard deviation of the training objective values, used to scale ``tau``.

    Applies ``posterior_transform`` and ``objective`` to the training outcomes the
    same way BoTorch's ``get_best_f_mc`` does. Falls back to ``1.0`` when the
    standard deviation is undefined (fewer than two points) or zero.

    Example:
        >>> tau = 0.01 * training_objective_scale(SupervisedDataset(X, Y, ...))

    Args:
        training_data: Dataset(s) used to train the model.
        objective: The MC objective (identity if None).
        posterior_transform: The posterior transform (optional).

    Returns:
        A positive float.
    """
    X = _get_dataset_field(training_data, "X", first_only=True, assert_shared=True)
    Y = _get_dataset_field(
        training_data, "Y", join_rule=lambda ts: torch.cat(ts, dim=-1)
    )
    if posterior_transform is not None:
        Y_dim = Y.dim()
        Y = posterior_transform.evaluate(Y=Y, X=X)
        if Y.dim() < Y_dim:
            Y = Y.unsqueeze(-1)
    if objective is not None:
        obj = objective(Y.unsqueeze(0), X=X).mean(dim=0)
    else:
        obj = Y.squeeze(-1) if Y.shape[-1] == 1 else Y
    if obj.shape[-1] < 2:
        return 1.0
    scale = float(obj.std(dim=-1).mean())
    return scale if math.isfinite(scale) and scale > 0 else 1.0
