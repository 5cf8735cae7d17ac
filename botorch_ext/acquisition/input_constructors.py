# Over 500 lines: one input constructor per acquisition function of this package, each
# short, registered with BoTorch in one place as BoTorch's own input_constructors.py.
r"""Input constructors registered with BoTorch for this package's acquisition functions.

They let Ax-style code build the acquisition functions of this package from a
model and its training data.

Importing ``botorch_ext.acquisition`` registers them; afterwards
``get_acqf_input_constructor(qUCB)(model=model, training_data=dataset)`` returns
the keyword arguments of ``qUCB``. Registration is by exact class (a subclass
inherits nothing), so every class is registered explicitly; ``qSoftPI`` and
``qLogSoftPI`` share one constructor.

The constructors take every keyword argument that BoTorch's own constructors for
``qUpperConfidenceBound`` and ``qProbabilityOfImprovement`` take, and apply it the
same way (e.g. ``constraints`` with an ``X_baseline`` become a
``ConstrainedMCObjective`` for ``qUCB``). No argument is dropped silently:
BoTorch's ``acqf_input_constructor`` wrapper discards the names in
``BOTORCH_PASS_THROUGH_KWARGS`` that a constructor does not declare, so every
constructor here declares all of them and raises a ``ValueError`` for any it
cannot apply (``ref_point``, ``objective_thresholds``, ``constraints_tuple``
without ``constraints``, and for ``qES`` and ``qLogSoftKG`` an ``objective`` or
``constraints``).
``training_data``, ``bounds`` and ``X_baseline`` describe the problem, and Ax
passes them to every constructor; they are used where they apply (``X_baseline``:
the infeasible cost of constrained ``qUCB``) and otherwise not needed.

Defaults follow the experiments of [Wilson2017reparam]_: ``beta = sqrt(3)`` for
q-UCB and ``tau = 0.01`` on *standardized* outcomes for q-PI and q-ES, and those
of [Maus2024eulbo]_ for ``qLogSoftKG``: ``c+`` the best observed value and
``tau = 1`` on standardized outcomes. Because a
BoTorch posterior is reported on the original outcome scale (outcome transforms
are untransformed), the constructors multiply the default ``tau`` by the standard
deviation of the training objective values, so that it means the same thing
whatever the scale of ``Y``; an explicit ``tau`` is used as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any, TypeAlias, TypeVar

import torch
from botorch.acquisition.input_constructors import (
    _get_dataset_field,
    acqf_input_constructor,
    get_best_f_analytic,
    get_best_f_mc,
)
from botorch.acquisition.objective import (
    ConstrainedMCObjective,
    IdentityMCObjective,
    MCAcquisitionObjective,
    PosteriorTransform,
)
from botorch.acquisition.utils import get_infeasible_cost
from botorch.models.model import Model
from botorch.sampling.base import MCSampler
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from botorch_ext.acquisition.entropy_search import qES
from botorch_ext.acquisition.probability_of_improvement import (
    DEFAULT_TAU,
    qLogSoftPI,
    qSoftPI,
)
from botorch_ext.acquisition.representer_points import draw_representer_points
from botorch_ext.acquisition.soft_kg import DEFAULT_NUM_FANTASIES, qLogSoftKG
from botorch_ext.acquisition.ucb import qUCB

#: The type of one dataset in ``MaybeDict``.
T = TypeVar("T")
#: One dataset or a dict of them keyed by outcome (BoTorch's ``MaybeDict``, which
#: it defines without ``TypeAlias``, so type checkers cannot use it).
MaybeDict: TypeAlias = T | dict[Hashable, T]

#: ``beta`` used in the q-UCB experiments of [Wilson2017reparam]_.
DEFAULT_BETA = math.sqrt(3.0)

#: The keyword arguments that BoTorch's ``acqf_input_constructor`` wrapper
#: (``allow_only_specific_variable_kwargs``) accepts for every constructor and
#: silently discards where the constructor's signature does not name them. Every
#: constructor in this module names all of them.
BOTORCH_PASS_THROUGH_KWARGS = frozenset(
    {
        "training_data",
        "X_baseline",
        "objective_thresholds",
        "ref_point",
        "bounds",
        "constraints_tuple",
        "posterior_transform",
        "objective",
        "constraints",
    }
)

_SINGLE_OBJECTIVE = "it is a multi-objective setting and {acqf} is single-objective"
_CONSTRAINTS_AS_CALLABLES = (
    "pass the outcome constraints as `constraints` callables, e.g. "
    "`botorch.utils.constraints.get_outcome_constraint_transforms(constraints_tuple)`"
)


@acqf_input_constructor(qUCB)
def construct_inputs_qUCB(
    model: Model,
    objective: MCAcquisitionObjective | None = None,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    sampler: MCSampler | None = None,
    X_baseline: Tensor | None = None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    beta: float = DEFAULT_BETA,
    eta: Tensor | float | None = None,
    training_data: MaybeDict[SupervisedDataset] | None = None,
    bounds: list[tuple[float, float]] | Tensor | None = None,
    constraints_tuple: tuple[Tensor, Tensor] | None = None,
    objective_thresholds: Tensor | None = None,
    ref_point: Tensor | list[float] | None = None,
) -> dict[str, Any]:
    r"""Construct kwargs for ``botorch_ext.acquisition.qUCB``.

    BoTorch's ``construct_inputs_qUCB`` with the default ``beta`` of
    [Wilson2017reparam]_ and an ``eta`` for the constraint indicators. As there,
    ``constraints`` are applied by wrapping the objective (``IdentityMCObjective``
    if None) in a ``ConstrainedMCObjective`` whose infeasible cost comes from the
    model at ``X_baseline``: q-UCB values can be negative, so they cannot be
    weighted by feasibility the way ``qProbabilityOfImprovement`` weights its
    values. Under such an objective ``qUCB`` centres the samples at their mean,
    i.e. its value is BoTorch's.

    Example:
        >>> kwargs = construct_inputs_qUCB(
        ...     model, X_baseline=train_X, constraints=[lambda Y: Y[..., 1]]
        ... )
        >>> acqf = qUCB(**kwargs)

    Args:
        model: The model to be used in the acquisition function.
        objective: The objective to be used in the acquisition function.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        sampler: The sampler used to draw base samples (optional).
        X_baseline: A ``batch_shape x r x d``-dim tensor of observed points, used
            to compute the infeasible cost when there are constraints (and not
            needed otherwise).
        constraints: Callables mapping ``sample_shape x batch_shape x q x m``
            samples to ``sample_shape x batch_shape x q`` values, feasible where
            negative. Require ``X_baseline``.
        beta: The exploration weight; ``sqrt(3)`` as in [Wilson2017reparam]_
            (BoTorch's constructor defaults to ``0.2``).
        eta: Temperature(s) of the sigmoid constraint indicators of the
            ``ConstrainedMCObjective`` (its default ``1e-3`` if None). Only with
            ``constraints``.
        training_data: Dataset(s) used to train the model; not needed by q-UCB.
        bounds: The search-space bounds; not needed by q-UCB.
        constraints_tuple: Outcome constraints ``(A, b)`` as Ax passes them next
            to ``constraints``; on their own they are rejected (pass callables).
        objective_thresholds: Rejected: a multi-objective setting.
        ref_point: Rejected: a multi-objective setting.

    Returns:
        A dict mapping kwarg names of the constructor to values.

    Raises:
        ValueError: "Constraints require an X_baseline." if ``constraints`` come
            without ``X_baseline`` (as in BoTorch), and for any argument that
            q-UCB cannot apply (see above).
    """
    _reject_inapplicable(
        "qUCB",
        constraints=constraints,
        constraints_tuple=constraints_tuple,
        objective_thresholds=objective_thresholds,
        ref_point=ref_point,
    )
    if constraints is None and eta is not None:
        raise ValueError(
            "qUCB's input constructor got `eta` but cannot apply it: it is the "
            "temperature of the constraint indicators and no `constraints` were "
            "passed."
        )
    if constraints is not None:
        if X_baseline is None:
            raise ValueError("Constraints require an X_baseline.")
        if objective is None:
            objective = IdentityMCObjective()
        objective = ConstrainedMCObjective(
            objective=objective,
            constraints=constraints,
            infeasible_cost=get_infeasible_cost(
                X=X_baseline, model=model, objective=objective
            ),
            **({} if eta is None else {"eta": eta}),
        )
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
    tau: float | None = None,
    best_f: float | Tensor | None = None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    eta: Tensor | float = 1e-3,
    X_baseline: Tensor | None = None,
    bounds: list[tuple[float, float]] | Tensor | None = None,
    constraints_tuple: tuple[Tensor, Tensor] | None = None,
    objective_thresholds: Tensor | None = None,
    ref_point: Tensor | list[float] | None = None,
) -> dict[str, Any]:
    r"""Construct kwargs for ``qSoftPI`` and ``qLogSoftPI`` (same arguments).

    BoTorch's ``construct_inputs_qPI`` (same arguments, same ``best_f``) with the
    temperature of [Wilson2017reparam]_: ``0.01`` on standardized outcomes, i.e.
    ``0.01`` times the standard deviation of the training objective values.

    Example:
        >>> kwargs = construct_inputs_soft_pi(model, training_data=dataset)
        >>> acqf = qLogSoftPI(**kwargs)

    Args:
        model: The model to be used in the acquisition function.
        training_data: Dataset(s) used to train the model.
        objective: The objective to be used in the acquisition function.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        sampler: The sampler used to draw base samples (optional).
        tau: The temperature; ``0.01`` times the standard deviation of the
            training objective values if None (BoTorch's constructor: ``1e-3``).
        best_f: The incumbent; the best (feasible) training objective if None.
        constraints: Outcome-constraint callables (feasible where < 0).
        eta: Temperature(s) of the constraint indicators.
        X_baseline: Observed points; not needed (``best_f`` comes from
            ``training_data``, as in BoTorch).
        bounds: The search-space bounds; not needed.
        constraints_tuple: Outcome constraints ``(A, b)`` as Ax passes them next
            to ``constraints``; on their own they are rejected (pass callables).
        objective_thresholds: Rejected: a multi-objective setting.
        ref_point: Rejected: a multi-objective setting.

    Returns:
        A dict mapping kwarg names of the constructor to values.

    Raises:
        ValueError: For any argument that soft q-PI cannot apply (see above).
    """
    _reject_inapplicable(
        "qSoftPI/qLogSoftPI",
        constraints=constraints,
        constraints_tuple=constraints_tuple,
        objective_thresholds=objective_thresholds,
        ref_point=ref_point,
    )
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
        "sampler": sampler,
        "objective": objective,
        "posterior_transform": posterior_transform,
        "X_pending": X_pending,
        "tau": tau,
        "constraints": constraints,
        "eta": eta,
    }


@acqf_input_constructor(qES)
def construct_inputs_qES(
    model: Model,
    training_data: MaybeDict[SupervisedDataset],
    bounds: list[tuple[float, float]] | Tensor | None = None,
    representer_points: Tensor | None = None,
    num_representer_points: int = 48,
    representer_scheme: str = "thompson",
    num_around_best: int = 256,
    num_candidates: int | None = None,
    tau: float | None = None,
    num_fantasies: int = 32,
    num_inner_samples: int = 128,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    seed: int | None = None,
    objective: MCAcquisitionObjective | None = None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    X_baseline: Tensor | None = None,
    constraints_tuple: tuple[Tensor, Tensor] | None = None,
    objective_thresholds: Tensor | None = None,
    ref_point: Tensor | list[float] | None = None,
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
        num_representer_points: How many representer points to draw (48; see
            ``draw_representer_points`` for the defaults' measurement).
        representer_scheme: ``draw_representer_points``'s ``scheme``
            (its default, ``"thompson"``: sampled maximizers).
        num_around_best: ``draw_representer_points``'s ``num_around_best``
            (its default, 256: the pool gains points near the best inputs).
        num_candidates: ``draw_representer_points``'s ``num_candidates`` (its
            default if None: ``max(512, 8 m)`` Sobol points in the pool).
        tau: The temperature; ``0.01`` times the standard deviation of the
            training outcomes if None.
        num_fantasies: Number of fantasy observations.
        num_inner_samples: Number of draws per ``p_max`` estimate.
        posterior_transform: The posterior transform (optional).
        X_pending: A ``m x d``-dim tensor of pending points.
        seed: Seed for the representer points and the base samples.
        objective: Rejected: ``qES`` takes no ``MCAcquisitionObjective``
            (scalarize a multi-output model with ``posterior_transform``).
        constraints: Rejected: ``qES`` does not support outcome constraints.
        X_baseline: Observed points; not needed.
        constraints_tuple: Rejected, as ``constraints``.
        objective_thresholds: Rejected: a multi-objective setting.
        ref_point: Rejected: a multi-objective setting.

    Returns:
        A dict mapping kwarg names of the constructor to values.

    Raises:
        ValueError: If neither ``representer_points`` nor ``bounds`` is given, and
            for any argument that qES cannot apply (see above).
    """
    if objective is not None:
        raise ValueError(
            "qES's input constructor got `objective` but cannot apply it: qES "
            "takes no MC objective; scalarize with `posterior_transform`."
        )
    _reject_inapplicable(
        "qES",
        constraints=constraints,
        constraints_tuple=constraints_tuple,
        objective_thresholds=objective_thresholds,
        ref_point=ref_point,
        supports_constraints=False,
    )
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
            scheme=representer_scheme,
            num_around_best=num_around_best,
            num_candidates=num_candidates,
            X_baseline=X,
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
    objective: MCAcquisitionObjective | None = None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    X_baseline: Tensor | None = None,
    bounds: list[tuple[float, float]] | Tensor | None = None,
    constraints_tuple: tuple[Tensor, Tensor] | None = None,
    objective_thresholds: Tensor | None = None,
    ref_point: Tensor | list[float] | None = None,
) -> dict[str, Any]:
    r"""Construct kwargs for ``botorch_ext.acquisition.qLogSoftKG``.

    Args:
        model: The model to be used in the acquisition function.
        training_data: Dataset(s) used to train the model.
        best_f: The constant ``c+``; the best training outcome if None (the
            paper's ``y+``).
        tau: The softplus temperature; the standard deviation of the training
            outcomes if None (temperature 1 on standardized outcomes, as in
            [Maus2024eulbo]_).
        num_fantasies: ``S``, the number of fantasies and free points.
        posterior_transform: The posterior transform (optional).
        seed: Seed of the base samples.
        objective: Rejected: ``qLogSoftKG`` takes no ``MCAcquisitionObjective``
            (scalarize a multi-output model with ``posterior_transform``).
        constraints: Rejected: ``qLogSoftKG`` does not support outcome
            constraints.
        X_baseline: Observed points; not needed.
        bounds: The search-space bounds; not needed.
        constraints_tuple: Rejected, as ``constraints``.
        objective_thresholds: Rejected: a multi-objective setting.
        ref_point: Rejected: a multi-objective setting.

    Returns:
        A dict mapping kwarg names of the constructor to values.

    Raises:
        ValueError: For any argument that ``qLogSoftKG`` cannot apply (see
            above).
    """
    if objective is not None:
        raise ValueError(
            "qLogSoftKG's input constructor got `objective` but cannot apply it: "
            "qLogSoftKG takes no MC objective; scalarize with `posterior_transform`."
        )
    _reject_inapplicable(
        "qLogSoftKG",
        constraints=constraints,
        constraints_tuple=constraints_tuple,
        objective_thresholds=objective_thresholds,
        ref_point=ref_point,
        supports_constraints=False,
    )
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
    same way BoTorch's ``get_best_f_mc`` does; without either, a multi-output
    ``Y`` gives the mean over outcomes of each outcome's standard deviation. Falls
    back to ``1.0`` when the standard deviation is undefined (fewer than two
    points) or zero.

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
        training_data, "Y", join_rule=lambda ts: torch.cat(list(ts), dim=-1)
    )
    if posterior_transform is not None:
        Y_dim = Y.dim()
        Y = posterior_transform.evaluate(Y=Y, X=X)
        if Y.dim() < Y_dim:
            Y = Y.unsqueeze(-1)
    if objective is not None:
        obj = objective(Y.unsqueeze(0), X=X).mean(dim=0)  # batch_shape x n
    elif Y.shape[-1] == 1:
        obj = Y.squeeze(-1)
    else:
        # Unscalarized outcomes (the acquisition function will need an objective):
        # each outcome's spread along the data, averaged over outcomes.
        obj = Y.transpose(-1, -2)  # batch_shape x m x n
    if obj.shape[-1] < 2:
        return 1.0
    scale = float(obj.std(dim=-1).mean())
    return scale if math.isfinite(scale) and scale > 0 else 1.0


def _reject_inapplicable(
    acqf: str,
    constraints: list[Callable[[Tensor], Tensor]] | None,
    constraints_tuple: tuple[Tensor, Tensor] | None,
    objective_thresholds: Tensor | None,
    ref_point: Tensor | list[float] | None,
    supports_constraints: bool = True,
) -> None:
    r"""Raise a ``ValueError`` for a passed argument the acquisition cannot apply.

    BoTorch's registry wrapper would otherwise drop these names without a word.

    Args:
        acqf: The acquisition function's name, for the message.
        constraints: The ``constraints`` argument.
        constraints_tuple: The ``constraints_tuple`` argument; accepted next to
            ``constraints`` (Ax passes both forms of the same constraints).
        objective_thresholds: The ``objective_thresholds`` argument.
        ref_point: The ``ref_point`` argument.
        supports_constraints: Whether the acquisition applies ``constraints``.

    Raises:
        ValueError: Naming the first inapplicable argument and why.
    """
    reasons = {
        "objective_thresholds": _SINGLE_OBJECTIVE.format(acqf=acqf),
        "ref_point": _SINGLE_OBJECTIVE.format(acqf=acqf),
    }
    if not supports_constraints:
        reasons["constraints"] = f"{acqf} does not support outcome constraints"
        reasons["constraints_tuple"] = reasons["constraints"]
    elif constraints is None:
        reasons["constraints_tuple"] = _CONSTRAINTS_AS_CALLABLES
    values = {
        "constraints": constraints,
        "constraints_tuple": constraints_tuple,
        "objective_thresholds": objective_thresholds,
        "ref_point": ref_point,
    }
    for name, why in reasons.items():
        if values[name] is not None:
            raise ValueError(
                f"{acqf}'s input constructor got `{name}` but cannot apply it: {why}."
            )
