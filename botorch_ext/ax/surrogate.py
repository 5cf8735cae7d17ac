r"""How Ax's ``Surrogate`` builds and fits variational GPs.

Ax's modular BoTorch path builds a model in two calls, both dispatchers that a
plugin may extend: ``submodel_input_constructor`` turns the ``training_data``
(a ``SupervisedDataset``) and the ``ModelConfig`` into constructor arguments,
and ``fit_botorch_model`` fits the constructed model with the configured
``mll_class``. Ax's own entries fail for variational GPs: the base input
constructor forwards ``model_options`` to ``Model.construct_inputs``, which takes
none, and the GPyTorch entry builds ``mll_class(likelihood=..., model=...)``
with Ax's default ``ExactMarginalLogLikelihood`` on the BoTorch wrapper, where a
variational bound needs the wrapped ``ApproximateGP`` and the number of data
points, which changes at every trial. This module registers entries for
BoTorch's ``SingleTaskVariationalGP`` and for ``EULBOModel``:

* **Construction.** Ax's base constructor builds the arguments (training data,
  Ax's input transform, outcome transform and ``covar_module_class``), then
  ``model_options`` are checked against the model's signature and added. Known
  observation noise (``Yvar``) cannot be used by these models (they learn one
  homoscedastic noise variance): it is dropped with a warning.
* **State across trials** (``EULBOModel``). Ax keeps one ``Surrogate`` per
  generation node while the process lives and rebuilds the model whenever the
  data change; Algorithm 1 of [Maus2024eulbo]_ instead starts each BO step from
  the previous step's variational state ``w``. While Ax refits, the surrogate
  still holds the previous model (``last_eulbo_model``); when the new training
  inputs extend that model's inputs (its rows first, as Ax orders trials), the
  new model is ``EULBOModel(..., previous_model=previous)``, which carries the
  inducing points, ``q(u)`` and hyperparameters
  (``model_options={"warm_start": False}`` turns this off). A smaller data set
  (a cross-validation fold) starts afresh. The state lives in memory only: a
  loaded experiment starts its first model afresh.
* **Fitting.** The variational bound is built on the wrapped GP with
  ``num_data`` set to the current number of observations. Ax fills in
  ``ExactMarginalLogLikelihood`` when no ``mll_class`` is given; for these
  models it means GPyTorch's ``VariationalELBO``. ``EULBOModel`` is fitted by
  ``botorch_ext.eulbo.fit_elbo`` (by default L-BFGS on the collapsed bound,
  on ``lbfgs_max_n`` points drawn at random above that ``n``), with the
  settings in ``ModelConfig.mll_options``, Ax's home for a fit's settings:
  ``{"options": EULBOOptions(...), "objective": EULBO(...)}`` (both
  optional; ``EULBOAcquisition``'s joint step reads the same).
  ``SingleTaskVariationalGP`` is fitted by BoTorch's ``fit_gpytorch_mll``
  with any of the approximate bounds in ``APPROXIMATE_MLLS``.
* **The form of 0.1.0.** ``model_options={"options": ..., "elbo_scale": ...,
  "utility_weight": ..., "alternation": ...}`` (``options`` also as a dict of
  flat names) still works, with a ``DeprecationWarning``: the settings are read
  into the grouped form (``eulbo_settings``), so stored experiments of that
  version load and run as before.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import warnings
from typing import Any

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.exceptions.core import UnsupportedError, UserInputError
from ax.exceptions.model import ModelError
from ax.generators.torch.botorch_modular.surrogate import (
    Surrogate,
    submodel_input_constructor,
)
from ax.generators.torch.botorch_modular.utils import ModelConfig, fit_botorch_model
from botorch.exceptions.warnings import InputDataWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models.approximate_gp import (
    ApproximateGPyTorchModel,
    SingleTaskVariationalGP,
)
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from gpytorch.mlls import (
    ExactMarginalLogLikelihood,
    GammaRobustVariationalELBO,
    MarginalLogLikelihood,
    PredictiveLogLikelihood,
    VariationalELBO,
)
from torch import Tensor

from botorch_ext.eulbo import EULBO, EULBOModel, EULBOOptions, fit_elbo
from botorch_ext.eulbo.model import MOVED_SETTINGS
from botorch_ext.eulbo.options import options_from_flat

#: The variational bounds that fit a ``SingleTaskVariationalGP`` in Ax.
APPROXIMATE_MLLS = (
    VariationalELBO,
    PredictiveLogLikelihood,
    GammaRobustVariationalELBO,
)

#: The ``model_options`` key that this module, not the model, consumes.
WARM_START = "warm_start"

#: The ``mll_options`` keys of an ``EULBOModel``'s fit and joint step.
EULBO_SETTINGS = ("options", "objective")


def eulbo_settings(model_config: ModelConfig) -> tuple[EULBOOptions, EULBO]:
    r"""The ``EULBOOptions`` and ``EULBO`` of an ``EULBOModel``'s ``ModelConfig``.

    From ``mll_options`` (``"options"``, ``"objective"``), or, for the form of
    botorch_ext 0.1.0, from the settings in ``model_options`` (``options`` as
    an ``EULBOOptions`` or a dict of flat names, ``elbo_scale``,
    ``utility_weight``, ``alternation``); defaults for what neither names.

    Example:
        >>> options, objective = eulbo_settings(model_config)

    Args:
        model_config: Ax's ``ModelConfig`` of an ``EULBOModel``.

    Returns:
        ``(options, objective)``.

    Raises:
        UserInputError: For settings of the wrong type.
    """
    mll_options = model_config.mll_options or {}
    legacy = {
        k: v
        for k, v in (model_config.model_options or {}).items()
        if k in MOVED_SETTINGS
    }
    options = mll_options.get("options", legacy.get("options", EULBOOptions()))
    if isinstance(options, dict):
        options = options_from_flat(options)
    if "alternation" in legacy and "options" not in mll_options:
        joint = dataclasses.replace(options.joint, alternation=legacy["alternation"])
        options = dataclasses.replace(options, joint=joint)
    objective = mll_options.get("objective")
    if objective is None:
        fields = ("elbo_scale", "utility_weight", "incumbent")
        objective = EULBO(**{k: legacy[k] for k in fields if k in legacy})
    if not isinstance(options, EULBOOptions) or not isinstance(objective, EULBO):
        raise UserInputError(
            "`mll_options` of an EULBOModel take `options` (an EULBOOptions) and "
            f"`objective` (an EULBO); got {options!r} and {objective!r}."
        )
    return options, objective


def last_eulbo_model(
    surrogate: Surrogate, outcome_names: list[str]
) -> EULBOModel | None:
    r"""The ``EULBOModel`` that ``surrogate`` holds for these outcomes, if any.

    While Ax fits a surrogate on new data, ``surrogate.model`` is still the
    model of the previous fit; this is the model Algorithm 1 continues from.

    Example:
        >>> last_eulbo_model(surrogate, ["hartmann6"]).diagnostics()

    Args:
        surrogate: An Ax ``Surrogate``.
        outcome_names: The dataset's outcome names.

    Returns:
        The model, or ``None`` when the surrogate has none for these outcomes
        (not fitted yet in this process, or another model class).
    """
    try:
        model, outcomes = surrogate.model, list(surrogate.outcomes)
    except ModelError:
        return None
    models = getattr(model, "models", None)
    if models is not None:  # a ModelList: one model per outcome
        if len(outcome_names) != 1 or outcome_names[0] not in outcomes:
            return None
        model = models[outcomes.index(outcome_names[0])]
    elif outcomes != list(outcome_names):
        return None
    return model if isinstance(model, EULBOModel) else None


def _extends(previous: EULBOModel, X: Tensor) -> bool:
    r"""Whether ``X``'s first rows are ``previous``'s training inputs."""
    Z = previous.train_X_full
    n = Z.shape[-2]
    if X.shape[-1] != Z.shape[-1] or X.shape[-2] < n or X.dtype != Z.dtype:
        return False
    transform = getattr(previous, "input_transform", None)
    with torch.no_grad():
        if transform is not None:
            transform = copy.deepcopy(transform).eval()
            X = transform(X)
        return bool(torch.equal(X[..., :n, :], Z))


def _model_kwargs(
    model_class: type[Model], model_options: dict[str, Any]
) -> dict[str, Any]:
    r"""Check ``model_options`` against the model's constructor, by name."""
    parameters = inspect.signature(model_class.__init__).parameters
    reserved = {"self", "train_X", "train_Y", "previous_model"}
    named = {
        name
        for name, p in parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    allowed = sorted(named - reserved)
    for name in model_options:
        if name not in allowed:
            raise UserInputError(
                f"`model_options` key {name!r} is not an argument of "
                f"{model_class.__name__}; allowed: {allowed}."
            )
    return dict(model_options)


def _without_noise(
    dataset: SupervisedDataset, model_class: type[Model]
) -> SupervisedDataset:
    if dataset.Yvar is None:
        return dataset
    warnings.warn(
        f"{model_class.__name__} learns a homoscedastic noise variance and cannot "
        "use the observed noise (SEM) that Ax passes as `Yvar`; it is ignored.",
        InputDataWarning,
        stacklevel=2,
    )
    return SupervisedDataset(
        X=dataset.X,
        Y=dataset.Y,
        feature_names=dataset.feature_names,
        outcome_names=dataset.outcome_names,
    )


def _check_search_space(
    search_space_digest: SearchSpaceDigest, model_class: type[Model]
) -> None:
    for kind in ("task_features", "fidelity_features"):
        if getattr(search_space_digest, kind):
            raise UnsupportedError(
                f"{model_class.__name__} in Ax supports single-task, "
                f"single-fidelity search spaces; got {kind}="
                f"{getattr(search_space_digest, kind)}."
            )


def _base_inputs(
    botorch_model_class: type[Model],
    model_config: ModelConfig,
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    surrogate: Surrogate,
) -> dict[str, Any]:
    r"""Ax's own arguments (data, transforms, ``covar_module_class``).

    The ``model_options`` are held back (``Model.construct_inputs`` takes none).
    """
    _check_search_space(search_space_digest, botorch_model_class)
    base = submodel_input_constructor.dispatch(Model)
    inputs: dict[str, Any] = base(
        botorch_model_class,
        model_config=dataclasses.replace(model_config, model_options={}),
        dataset=_without_noise(dataset, botorch_model_class),
        search_space_digest=search_space_digest,
        surrogate=surrogate,
    )
    return inputs


def construct_variational_gp_inputs(
    botorch_model_class: type[Model],
    model_config: ModelConfig,
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    surrogate: Surrogate,
) -> dict[str, Any]:
    r"""Constructor arguments of a ``SingleTaskVariationalGP`` in Ax.

    Registered with Ax's ``submodel_input_constructor`` by
    ``botorch_ext.ax.register()``. ``model_options`` are the model's keyword
    arguments, e.g. ``{"inducing_points": 50}`` (BoTorch's default is a quarter
    of the data).

    Example:
        >>> ModelConfig(
        ...     botorch_model_class=SingleTaskVariationalGP,
        ...     model_options={"inducing_points": 50},
        ... )

    Returns:
        The keyword arguments of ``botorch_model_class``.
    """
    inputs = _base_inputs(
        botorch_model_class, model_config, dataset, search_space_digest, surrogate
    )
    inputs.update(_model_kwargs(botorch_model_class, model_config.model_options))
    return inputs


def construct_eulbo_inputs(
    botorch_model_class: type[Model],
    model_config: ModelConfig,
    dataset: SupervisedDataset,
    search_space_digest: SearchSpaceDigest,
    surrogate: Surrogate,
) -> dict[str, Any]:
    r"""Constructor arguments of an ``EULBOModel`` in Ax, the last state included.

    Registered with Ax's ``submodel_input_constructor`` by
    ``botorch_ext.ax.register()``. ``model_options`` are ``EULBOModel``'s
    keyword arguments (``num_inducing_points``, ``carry_state``), plus
    ``warm_start`` (default True): pass the model this surrogate built last as
    ``previous_model`` when the new training inputs extend its inputs
    (Algorithm 1 of [Maus2024eulbo]_; see the module docstring). The fit's
    settings belong in ``mll_options``; those of 0.1.0 in ``model_options``
    are moved there (into this call's copy of the config) with a
    ``DeprecationWarning``.

    Example:
        >>> ModelConfig(
        ...     botorch_model_class=EULBOModel,
        ...     model_options={"num_inducing_points": 50},
        ...     mll_options={"options": EULBOOptions.authors()},
        ... )

    Returns:
        The keyword arguments of ``EULBOModel``.
    """
    options = dict(model_config.model_options)
    warm_start = options.pop(WARM_START, True)
    if not isinstance(warm_start, bool):
        raise UserInputError(
            f"`model_options['{WARM_START}']` must be a bool, got {warm_start!r}."
        )
    legacy = sorted(set(options) & set(MOVED_SETTINGS))
    if legacy:
        warnings.warn(
            f"`model_options` {legacy} of EULBOModel are deprecated: the fit's "
            "settings go in `mll_options={'options': EULBOOptions(...), "
            "'objective': EULBO(...)}` since botorch_ext 0.2.0.",
            DeprecationWarning,
            stacklevel=2,
        )
        settings = eulbo_settings(model_config)
        # Ax fits (and stores nothing of) this call's copy of the config.
        model_config.mll_options = dict(zip(EULBO_SETTINGS, settings, strict=True))
        for name in legacy:
            options.pop(name)
    kwargs = _model_kwargs(botorch_model_class, options)
    inputs = _base_inputs(
        botorch_model_class, model_config, dataset, search_space_digest, surrogate
    )
    inputs.update(kwargs)
    previous = last_eulbo_model(surrogate, list(dataset.outcome_names))
    if warm_start and previous is not None and _extends(previous, inputs["train_X"]):
        inputs["previous_model"] = previous
    return inputs


def fit_variational_gp(
    model: ApproximateGPyTorchModel,
    mll_class: type[MarginalLogLikelihood],
    mll_options: dict[str, Any] | None = None,
) -> None:
    r"""Fit a variational GP the way Ax fits a model (``fit_botorch_model``).

    The bound is ``mll_class(model.likelihood, model.model, num_data=n, **
    mll_options)`` with ``n`` the current number of observations (Ax's default
    ``ExactMarginalLogLikelihood`` stands for ``VariationalELBO``).
    ``EULBOModel`` is fitted by ``fit_elbo(model, options, objective)`` with
    the ``options`` and ``objective`` of ``mll_options`` (see
    ``eulbo_settings``), which needs the ``VariationalELBO``; other models by
    BoTorch's ``fit_gpytorch_mll``.

    Example:
        >>> fit_botorch_model(model, mll_class=ExactMarginalLogLikelihood)

    Args:
        model: A ``SingleTaskVariationalGP`` (or ``EULBOModel``).
        mll_class: Ax's ``ModelConfig.mll_class``.
        mll_options: Ax's ``ModelConfig.mll_options``.

    Raises:
        UnsupportedError: For a bound that is not a variational one, or
            ``mll_options`` other than ``options`` and ``objective`` with
            ``EULBOModel``.
    """
    mll_options = dict(mll_options or {})
    if mll_class is None or mll_class is ExactMarginalLogLikelihood:
        mll_class = VariationalELBO
    if not (isinstance(mll_class, type) and issubclass(mll_class, APPROXIMATE_MLLS)):
        raise UnsupportedError(
            f"`mll_class` {getattr(mll_class, '__name__', mll_class)} cannot fit "
            f"{type(model).__name__}; use one of "
            f"{[c.__name__ for c in APPROXIMATE_MLLS]}."
        )
    if isinstance(model, EULBOModel):
        unknown = sorted(set(mll_options) - set(EULBO_SETTINGS))
        if mll_class is not VariationalELBO or unknown:
            raise UnsupportedError(
                "EULBOModel is fitted by its own ELBO fit, configured by "
                "`mll_options={'options': EULBOOptions(...), 'objective': "
                f"EULBO(...)}}`; got `mll_class` {mll_class.__name__} and "
                f"`mll_options` {mll_options}."
            )
        options, objective = eulbo_settings(ModelConfig(mll_options=mll_options))
        fit_elbo(model, options, objective)
        model.eval()
        return
    mll_options.setdefault("num_data", model.model.train_targets.shape[-1])
    mll = mll_class(model.likelihood, model.model, **mll_options)
    fit_gpytorch_mll(mll)


def register_surrogate_hooks() -> None:
    r"""Register the constructors and the fit with Ax's dispatchers (idempotent)."""
    submodel_input_constructor.register(SingleTaskVariationalGP)(
        construct_variational_gp_inputs
    )
    submodel_input_constructor.register(EULBOModel)(construct_eulbo_inputs)
    fit_botorch_model.register(ApproximateGPyTorchModel)(fit_variational_gp)
