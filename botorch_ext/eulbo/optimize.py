r"""Joint EULBO optimization: choose the next query jointly with the SVGP fit.

[Maus2024eulbo]_ replace "fit the SVGP by its ELBO, then maximize an acquisition
function under it" by one problem over the candidates ``x`` and the SVGP
parameters ``w``,

    max_{x, w}  L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)

(``botorch_ext.eulbo.objective.EULBO``). ``optimize_eulbo`` solves it for an
``EULBOModel``, as BoTorch's ``fit_gpytorch_mll`` fits a model it is given: it
takes the model, the objective and the optimizer settings (``EULBOOptions``).

Data path of one EULBO step: the model (its state ``w`` carried from the
previous BO step, ``EULBOModel.carry_over``) -> ELBO fit (``fit_elbo``) -> warm
start (``warm_start``: ``optimize_acqf`` on the matching acquisition,
``qLogExpectedImprovement`` for ``"ei"``, the one-shot soft KG for ``"kg"``) ->
the joint phase over the candidates and the selected blocks of ``w`` (by
default L-BFGS-B on the full-data EULBO; or Algorithm 1's alternating
minibatch Adam w- and x-steps) -> the candidates and the model's state
(``model.last_optimization``).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from botorch.acquisition.logei import qLogExpectedImprovement
from botorch.acquisition.monte_carlo import qExpectedImprovement
from botorch.exceptions.warnings import (
    BadInitialCandidatesWarning,
    NumericsWarning,
    OptimizationWarning,
)
from botorch.models.model import Model
from botorch.optim.optimize import optimize_acqf
from botorch.posteriors.posterior import Posterior
from torch import Tensor

from botorch_ext.eulbo.fit import check_model_and_seed, check_settings, fit_elbo
from botorch_ext.eulbo.joint import JointProblem, lbfgs_joint_phase
from botorch_ext.eulbo.joint_adam import adam_joint_phase
from botorch_ext.eulbo.joint_epochs import epoch_joint_phase
from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.objective import EULBO
from botorch_ext.eulbo.options import EULBOOptions
from botorch_ext.eulbo.utilities import qLogSoftKGModelScale
from botorch_ext.optim.utils import (
    ignore_optimize_acqf_retry_warnings,
    preserved_global_rng,
)
from botorch_ext.validation import check_bounds, check_positive_int

#: Utilities of the EULBO, soft improvement and one-shot soft KG.
UTILITIES = ("ei", "kg")


def optimize_eulbo(
    model: EULBOModel,
    bounds: Tensor,
    q: int = 1,
    utility: str = "ei",
    seed: int = 0,
    refit: bool = True,
    *,
    options: EULBOOptions | None = None,
    objective: EULBO | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Choose ``q`` candidates jointly with the SVGP fit ([Maus2024eulbo]_, Alg. 1).

    Maximizes the EULBO ``L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)``
    over the candidates ``x`` and the blocks of ``w`` that
    ``options.joint.parameters`` selects (all of ``w`` by default, as in
    Algorithm 1), with the scale, weight and incumbent of ``objective``
    (``EULBO``) and the optimizer settings ``options`` (``EULBOOptions``):

    1. ``fit_elbo`` (skipped with ``refit=False``).
    2. Warm start (``warm_start``): ``optimize_acqf`` on the matching
       acquisition under the fitted SVGP (``qLogExpectedImprovement`` for
       ``"ei"``; the one-shot soft KG with the SVGP held fixed for ``"kg"``,
       over the candidates and the free points ``x'_i``).
    3. The joint phase (``joint``). The default (``joint.optimizer="lbfgs"``)
       is L-BFGS-B on the deterministic full-data EULBO over the candidates
       (on the box) and the selected blocks of ``w`` (unconstrained), started
       at the warm start, so the returned EULBO is never below the warm
       start's and is strictly higher whenever its gradient there is non-zero.
       Its iteration budget is ``joint.max_iter`` while ``n <= lbfgs_max_n``
       and proportionally fewer above (``joint_iterations``), so the cost per
       step stays bounded in ``n``. Reason: from a converged ELBO fit the
       minibatch-Adam phase of Algorithm 1 first lowers the EULBO and its
       stopping rule returns the warm start unchanged (measured; see the EULBO
       page of the docs). That phase is ``joint.optimizer="adam"``: w-steps
       (Adam, ``adam.lr_w``, minibatch ELBO plus the expected log utility)
       alternating (``joint.alternation``) with x-steps (Adam, ``adam.lr_x``,
       the expected log utility), clipped at ``adam.grad_clip``, ``x``
       projected onto ``bounds``, stopped by ``fit_elbo``'s rule
       (``stopping``) applied to the EULBO, the model left at the best state
       seen at the end of a round.

    A non-finite EULBO restores a finite state, returns the warm-start
    candidates and warns. ``model.last_optimization`` records the trace. The
    global random stream is left as it was (``preserved_global_rng``).

    Example:
        >>> model = EULBOModel(train_X, train_Y, num_inducing_points=100)
        >>> candidates, value = optimize_eulbo(model, bounds, q=1, utility="ei")
        >>> # the authors' loop (on the last 100 points, y* over all of them):
        >>> optimize_eulbo(
        ...     model,
        ...     bounds,
        ...     options=EULBOOptions.authors(),
        ...     objective=EULBO(elbo_scale="mean", incumbent=float(all_Y.max())),
        ... )

    Args:
        model: An ``EULBOModel``; fitted in place.
        bounds: ``2 x d`` box (e.g. a TuRBO trust region).
        q: Number of candidates.
        utility: ``"ei"`` (soft improvement) or ``"kg"`` (one-shot soft
            knowledge gradient, ``options.utility.num_fantasies`` free points).
        seed: Seed of the minibatches and base samples.
        refit: Run ``fit_elbo`` first; False starts from the model's current
            state (e.g. a fit done by the caller).
        options: Optimizer settings; ``EULBOOptions()`` if None.
        objective: The objective; ``EULBO()`` (the paper's eq. 8) if None.

    Returns:
        ``(candidates, value)``: a ``q x d`` tensor inside ``bounds`` and the
        final EULBO (its ELBO part on all data for the L-BFGS-B phase and for
        ``"epochs"``, else on the check set, which is all data when ``n <=
        options.stopping.check_size``).

    Raises:
        TypeError: If ``model``, ``options``, ``objective`` or ``refit`` is of
            the wrong class.
        ValueError: For bad ``bounds``, ``q``, ``utility``, ``seed`` or settings,
            before anything is fitted (also with ``refit=False``).
    """
    options = EULBOOptions() if options is None else options
    objective = EULBO() if objective is None else objective
    check_model_and_seed(model, seed)
    if not isinstance(refit, bool):
        # Settings given by position land here (the sixth argument).
        raise TypeError(f"`refit` must be a bool, got {type(refit).__name__}.")
    with preserved_global_rng(model.train_X_full):
        return _optimize_eulbo(
            model, bounds, q, utility, seed, refit, options, objective
        )


def _optimize_eulbo(
    model: EULBOModel,
    bounds: Tensor,
    q: int,
    utility: str,
    seed: int,
    refit: bool,
    options: EULBOOptions,
    objective: EULBO,
) -> tuple[Tensor, Tensor]:
    check_bounds("bounds", bounds, model.train_X_full.shape[-1])
    check_positive_int("q", q)
    if utility not in UTILITIES:
        raise ValueError(f"unknown utility {utility!r}; choose from {UTILITIES}")
    bounds = bounds.to(model.train_X_full)
    gen = torch.Generator().manual_seed(seed)
    base_samples = None
    if q > 1 or utility == "kg":
        n_samples = (
            options.utility.num_fantasies
            if utility == "kg"
            else options.utility.num_mc_samples
        )
        base_samples = torch.randn(n_samples, q, generator=gen, dtype=bounds.dtype).to(
            bounds.device
        )
    if refit:
        fit_elbo(model, options, objective, seed=seed)
    # For "kg", x holds the q candidates followed by the S free points x'_i.
    x0 = warm_start(
        model,
        bounds,
        q,
        seed,
        utility,
        base_samples,
        options=options,
        objective=objective,
    )
    problem = JointProblem(model, objective, options, bounds, q, utility, base_samples)
    if options.joint.optimizer == "lbfgs":
        return lbfgs_joint_phase(problem, x0)
    if options.joint.optimizer == "adam-epochs":
        return epoch_joint_phase(problem, x0, gen)
    return adam_joint_phase(problem, x0, gen)


class ObservationNoisePredictive(Model):
    r"""A model's predictive distribution of observations: its posterior with noise.

    ``posterior(X)`` is ``model.posterior(X, observation_noise=True)``, so an
    acquisition function built on it (``qExpectedImprovement``) scores noisy
    observations rather than the latent function, as the authors' released code
    of [Maus2024eulbo]_ does.

    Example:
        >>> acqf = qExpectedImprovement(ObservationNoisePredictive(model), best_f)

    Args:
        model: A BoTorch model whose ``posterior`` takes ``observation_noise``.
    """

    def __init__(self, model: Model) -> None:
        r"""Wrap ``model``."""
        super().__init__()
        self.model = model

    @property
    def num_outputs(self) -> int:
        r"""The wrapped model's number of outputs."""
        return self.model.num_outputs

    def posterior(self, X: Tensor, *args: Any, **kwargs: Any) -> Posterior:
        r"""The wrapped model's posterior at ``X`` with observation noise."""
        kwargs["observation_noise"] = True
        return self.model.posterior(X, *args, **kwargs)


def warm_start(
    model: EULBOModel,
    bounds: Tensor,
    q: int,
    seed: int,
    utility: str = "ei",
    base_samples: Tensor | None = None,
    *,
    options: EULBOOptions | None = None,
    objective: EULBO | None = None,
) -> Tensor:
    r"""Algorithm 1, line 3: the conventional acquisition under the ELBO fit.

    ``"ei"``: BoTorch's ``qLogExpectedImprovement`` (or, with
    ``warm_start.acquisition="qei-noisy"``, ``qExpectedImprovement`` on the
    predictive distribution with observation noise). ``"kg"``: the one-shot
    soft-KG itself with the SVGP fixed (``qLogSoftKGModelScale``), optimized
    over the ``q`` candidates and the ``S`` free points jointly by
    ``optimize_acqf``, like BoTorch's one-shot ``qKnowledgeGradient``; all
    ``q + S`` points are returned. The incumbent is ``objective.best_f(model)``.

    Example:
        >>> x0 = warm_start(model, bounds, q=1, seed=0)

    Args:
        model: A fitted ``EULBOModel`` (held fixed).
        bounds: ``2 x d`` box.
        q: Number of candidates.
        seed: Seed of ``optimize_acqf``'s initial conditions.
        utility: ``"ei"`` or ``"kg"``.
        base_samples: ``S x q`` standard normal draws, required for ``"kg"``.
        options: ``warm_start`` gives the acquisition and ``optimize_acqf``'s
            budget; ``EULBOOptions()`` if None.
        objective: Its incumbent is the acquisition's; ``EULBO()`` if None.

    Returns:
        A ``q x d`` tensor (``(q + S) x d`` for ``"kg"``). The global random
        stream is left as it was.

    Raises:
        TypeError: If ``model``, ``options`` or ``objective`` is of the wrong
            class.
        ValueError: For bad ``bounds``, ``q``, ``utility`` or ``seed``, missing
            ``base_samples`` for ``"kg"``, or a setting out of range.
    """
    options = EULBOOptions() if options is None else options
    objective = EULBO() if objective is None else objective
    check_model_and_seed(model, seed)
    check_settings(options, objective)
    check_bounds("bounds", bounds, model.train_X_full.shape[-1])
    check_positive_int("q", q)
    if utility not in UTILITIES:
        raise ValueError(f"unknown utility {utility!r}; choose from {UTILITIES}")
    if utility == "kg" and base_samples is None:
        raise ValueError("`base_samples` (S x q) are required for utility='kg'.")
    settings = options.warm_start
    acqf: qLogSoftKGModelScale | qLogExpectedImprovement | qExpectedImprovement
    if utility == "kg":
        assert base_samples is not None  # checked above
        acqf = qLogSoftKGModelScale(model, base_samples, objective.best_f(model))
        n_points = acqf.get_augmented_q_batch_size(q)
    else:
        y_best = objective.best_f(model).reshape(1, 1)
        best_f = model.outcome_transform.untransform(y_best)
        if settings.acquisition == "qei-noisy":
            with warnings.catch_warnings():
                # Chosen on purpose (the authors' acquisition), not by oversight.
                warnings.simplefilter("ignore", NumericsWarning)
                acqf = qExpectedImprovement(
                    ObservationNoisePredictive(model), best_f=best_f[0].squeeze()
                )
        else:
            acqf = qLogExpectedImprovement(model, best_f=best_f[0].squeeze())
        n_points = q
    with warnings.catch_warnings(), preserved_global_rng(bounds):
        warnings.simplefilter("ignore", OptimizationWarning)
        ignore_optimize_acqf_retry_warnings()
        # BoTorch draws more raw samples only if it records this warning, so the
        # filter set here (not the caller's) decides whether it does.
        warnings.simplefilter(
            "default" if settings.resample_zero else "ignore",
            BadInitialCandidatesWarning,
        )
        torch.manual_seed(seed)
        candidates, _ = optimize_acqf(
            acqf,
            bounds=bounds,
            q=n_points,
            num_restarts=settings.num_restarts,
            raw_samples=settings.raw_samples,
            options=None
            if settings.max_iter is None
            else {"maxiter": settings.max_iter},
            return_full_tree=True,
        )
    return candidates.detach()
