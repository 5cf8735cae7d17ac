r"""The EULBO joint step as an Ax ``Acquisition``.

Ax proposes candidates with ``Acquisition.optimize``: BoTorch's
``optimize_acqf`` family on a fixed acquisition function of a fitted model. It
handles linear constraints, fixed features, discrete and mixed search spaces,
rounding and pending trials, but it holds the model fixed while it moves the
candidates, so it cannot run the joint step of [Maus2024eulbo]_, which moves
the candidates ``x`` and the variational state ``w`` together on

    L_ELBO(w) + E_{q_w(f)} log u(x, f).

``EULBOAcquisition`` replaces Ax's optimizer by ``botorch_ext.eulbo.optimize_eulbo``
(a warm start by ``optimize_acqf`` on the matching acquisition, then the joint
steps), with the utility chosen in Ax's ``acquisition_options``: ``"ei"`` (soft
improvement) or ``"kg"`` (one-shot soft knowledge gradient). The Ax
acquisition function (``botorch_acqf_class``, Ax's default if not given) is
still built and is what ``Acquisition.evaluate`` reports.

What the joint step cannot do, and Ax's optimizer can: ``optimize_eulbo``
searches a box, so linear parameter constraints, fixed features and discrete
or categorical parameters raise ``UnsupportedError``; it models one outcome,
so outcome constraints or further metrics (a ``ModelList``) raise too; and it
does not know pending trials (it warns, since it may propose a point that is
already pending). For a minimized objective the model is rebuilt on the
negated outcomes (same data, the fitted kernel, ``q(u)`` restarted at its
closed form; ``optimize_eulbo`` refits it), because the EULBO's utility is that
of a maximization; the surrogate's own model is then left as Ax fitted it.
For a maximized objective the joint step updates the surrogate's model in
place, so the next trial continues from the jointly optimized ``w``
(Algorithm 1).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any, cast

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.exceptions.core import UnsupportedError, UserInputError
from ax.generators.torch.botorch_modular.acquisition import Acquisition
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from ax.generators.torch_base import TorchOptConfig
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.utils.datasets import SupervisedDataset
from torch import Tensor

from botorch_ext.ax.surrogate import eulbo_settings
from botorch_ext.eulbo import EULBO, EULBOModel, EULBOOptions, optimize_eulbo

#: The utilities of the joint step (``acquisition_options={"utility": ...}``).
UTILITIES = ("ei", "kg")


class EULBOAcquisition(Acquisition):
    r"""Ax ``Acquisition`` whose ``optimize`` is the EULBO joint step.

    Use it with ``ModelConfig(botorch_model_class=EULBOModel)`` on a search
    space of float parameters (see the module docstring for what it does not
    support). ``acquisition_options``: ``utility`` (``"ei"``, the default, or
    ``"kg"``) and ``seed`` (of the minibatches and base samples, default 0).

    Example:
        >>> GenerationStep(
        ...     generator=Generators.BOTORCH_MODULAR,
        ...     num_trials=-1,
        ...     generator_kwargs={
        ...         "surrogate_spec": SurrogateSpec(
        ...             model_configs=[ModelConfig(botorch_model_class=EULBOModel)]
        ...         ),
        ...         "acquisition_class": EULBOAcquisition,
        ...         "acquisition_options": {"utility": "kg"},
        ...     },
        ... )
    """

    def __init__(
        self,
        surrogate: Surrogate,
        search_space_digest: SearchSpaceDigest,
        torch_opt_config: TorchOptConfig,
        botorch_acqf_class: type[AcquisitionFunction] | None,
        botorch_acqf_options: dict[str, Any] | None = None,
        botorch_acqf_classes_with_options: list[
            tuple[type[AcquisitionFunction], dict[str, Any]]
        ]
        | None = None,
        n: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        options = options or {}
        utility = options.get("utility", "ei")
        if utility not in UTILITIES:
            raise UserInputError(
                f"`acquisition_options['utility']` must be one of {UTILITIES}, "
                f"got {utility!r}."
            )
        seed = options.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise UserInputError(
                f"`acquisition_options['seed']` must be an int, got {seed!r}."
            )
        model = surrogate.model
        if not isinstance(model, EULBOModel):
            raise UnsupportedError(
                "EULBOAcquisition needs one EULBOModel for the one objective "
                "(no outcome constraints or further metrics); the surrogate's model "
                f"is a {type(model).__name__}."
            )
        if torch_opt_config.outcome_constraints is not None:
            raise UnsupportedError(
                "EULBOAcquisition does not support outcome constraints."
            )
        super().__init__(
            surrogate=surrogate,
            search_space_digest=search_space_digest,
            torch_opt_config=torch_opt_config,
            botorch_acqf_class=botorch_acqf_class,
            botorch_acqf_options=botorch_acqf_options,
            botorch_acqf_classes_with_options=botorch_acqf_classes_with_options,
            n=n,
            options=options,
        )
        self.utility: str = utility
        self.seed: int = seed
        #: The model that made the last proposal (after its joint step).
        self.eulbo_model: EULBOModel | None = None

    def optimize(
        self,
        n: int,
        search_space_digest: SearchSpaceDigest,
        inequality_constraints: list[tuple[Tensor, Tensor, float]] | None = None,
        equality_constraints: list[tuple[Tensor, Tensor, float]] | None = None,
        fixed_features: dict[int, float] | None = None,
        rounding_func: Callable[[Tensor], Tensor] | None = None,
        optimizer_options: dict[str, Any] | None = None,
        candidate_set: Tensor | None = None,
        sampling_strategy: Any | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        r"""Propose ``n`` candidates by ``optimize_eulbo`` on Ax's box.

        Selection from a ``candidate_set`` is Ax's (``Acquisition.optimize``).
        ``optimizer_options`` (Ax's ``optimize_acqf`` settings) do not apply:
        the joint step's budget is the ``EULBOOptions`` of the model's
        ``ModelConfig.mll_options`` (``botorch_ext.ax.surrogate.eulbo_settings``).

        Args:
            n: Number of candidates ``q``.
            search_space_digest: Ax's search space digest; its ``bounds`` are
                the box.
            inequality_constraints: Must be empty.
            equality_constraints: Must be empty.
            fixed_features: Must be empty.
            rounding_func: Applied to the candidates, as Ax's optimizer does.
            optimizer_options: Ignored (see above).
            candidate_set: Delegated to Ax.
            sampling_strategy: Delegated to Ax.

        Returns:
            ``(candidates, value, weights)``: ``n x d`` candidates, the final
            EULBO, and unit arm weights.
        """
        if candidate_set is not None or sampling_strategy is not None:
            return super().optimize(
                n=n,
                search_space_digest=search_space_digest,
                candidate_set=candidate_set,
                sampling_strategy=sampling_strategy,
            )
        for name, setting in (
            ("inequality_constraints", inequality_constraints),
            ("equality_constraints", equality_constraints),
            ("fixed_features", fixed_features),
            ("discrete_choices", search_space_digest.discrete_choices),
        ):
            if setting:
                raise UnsupportedError(
                    f"EULBOAcquisition optimizes over a box and does not support "
                    f"{name} (got {setting}); use Ax's default Acquisition."
                )
        if self.X_pending is not None and len(self.X_pending):
            warnings.warn(
                f"EULBOAcquisition ignores {len(self.X_pending)} pending point(s); "
                "it may propose a point that is already pending.",
                UserWarning,
                stacklevel=2,
            )
        assert self.objective_weights is not None  # Ax sets them from the config
        weights = self.objective_weights.reshape(-1)
        if weights.numel() != 1 or weights.item() == 0:
            raise UnsupportedError(
                "EULBOAcquisition needs a single objective; got objective weights "
                f"{weights.tolist()}."
            )
        model = cast(EULBOModel, self.surrogate.model)  # checked in __init__
        if weights.item() < 0:
            model = negated_model(model, self.surrogate.training_data[0])
        bounds = torch.tensor(
            search_space_digest.bounds, dtype=model.train_Y_std.dtype
        ).t()
        options, objective = self._settings()
        candidates, value = optimize_eulbo(
            model,
            bounds,
            q=n,
            utility=self.utility,
            seed=self.seed,
            options=options,
            objective=objective,
        )
        candidates = candidates.detach()
        if rounding_func is not None:
            candidates = rounding_func(candidates)
        self.eulbo_model = model
        weights = torch.ones(n, dtype=candidates.dtype)
        return candidates, value.detach().reshape(()), weights

    def _settings(self) -> tuple[EULBOOptions, EULBO]:
        r"""The ``(EULBOOptions, EULBO)`` of the surrogate's ``EULBOModel`` config."""
        configs = self.surrogate.metric_to_best_model_config
        config = next(iter(configs.values()), None) if configs else None
        if config is None:
            config = self.surrogate.surrogate_spec.model_configs[0]
        with warnings.catch_warnings():
            # The surrogate warned about a config of 0.1.0 when it built the model.
            warnings.simplefilter("ignore", DeprecationWarning)
            return eulbo_settings(config)


def negated_model(model: EULBOModel, dataset: SupervisedDataset) -> EULBOModel:
    r"""An ``EULBOModel`` of ``-Y`` on the same data, for a minimized objective.

    The input transform and the fitted kernel are copied;
    ``q(u)`` starts at its closed-form optimum and the inducing points are
    allocated afresh, as for a first model.

    Example:
        >>> negated_model(surrogate.model, surrogate.training_data[0])

    Args:
        model: The surrogate's fitted ``EULBOModel``.
        dataset: Its training data (Ax's ``SupervisedDataset``).

    Returns:
        The new (unfitted) model.
    """
    input_transform = getattr(model, "input_transform", None)
    return EULBOModel(
        dataset.X,
        -dataset.Y,
        num_inducing_points=getattr(
            model, "requested_inducing_points", model.num_inducing_points
        ),
        input_transform=copy.deepcopy(input_transform),
        covar_module=copy.deepcopy(model.model.covar_module),
    )
