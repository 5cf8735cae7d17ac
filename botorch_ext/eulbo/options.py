r"""Settings of the EULBO model's fits: ``EULBOOptions``, grouped by phase.

A BO step of ``EULBOModel`` has two phases, and ``EULBOOptions`` holds one small
settings object per concern of each:

* the ELBO fit (``fit_elbo``): ``elbo`` (``ELBOFitOptions``: which optimizer),
  and, where that optimizer is minibatch Adam, ``adam`` (``AdamOptions``: step
  sizes, minibatch, clipping) and ``stopping`` (``StoppingOptions``: when an
  Adam fit stops);
* the joint step (``optimize_eulbo``): ``warm_start`` (``WarmStartOptions``:
  the ``optimize_acqf`` call that finds the starting candidates), ``utility``
  (``UtilityOptions``: how the utility term is estimated) and ``joint``
  (``JointOptions``: optimizer, budget and refined blocks of the joint phase;
  the Adam joint phase also uses ``adam`` and ``stopping``).

``lbfgs_max_n`` is shared by both phases: the largest ``n`` at which L-BFGS uses
all the data at its full budget (above, the ELBO fit uses ``lbfgs_max_n`` points
drawn at random and the joint phase a budget scaled down by ``lbfgs_max_n / n``).

The flat field names of botorch_ext 0.1.0 (``FLAT_FIELDS``,
``EULBOOptions.from_flat``, ``flat`` and ``replace`` with flat names) are a
deprecated shim: they warn with a ``DeprecationWarning`` and go in the next
release. ``options_from_flat`` reads them without a warning for Ax experiments
stored by that version.

The EULBO's own constants, its ELBO scale and utility weight, are not
optimizer settings: they are held by the objective
(``botorch_ext.eulbo.objective.EULBO``), as GPyTorch's ``VariationalELBO``
holds ``num_data`` and ``beta``.

This module is over 500 lines because each settings group carries its
choices and their reasons in its docstring; its code is about 250 lines.

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
    .. [Titsias2009]
        M. Titsias. Variational Learning of Inducing Variables in Sparse Gaussian
        Processes. AISTATS 2009.
    .. [Moss2023ipa]
        H. B. Moss, S. W. Ober and V. Picheny. Inducing Point Allocation for Sparse
        Gaussian Processes in High-Throughput Bayesian Optimisation. AISTATS 2023.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

from botorch_ext.eulbo.model import JOINT_PARAMETER_BLOCKS
from botorch_ext.eulbo.utilities import DEFAULT_NUM_QUADRATURE_POINTS
from botorch_ext.validation import check_positive, check_positive_int

#: Named scalings of the ELBO term of the EULBO. The paper's eq. (8) sums the
#: ELBO over the data (``"sum"``, name ``"paper"``, the default: it is the
#: paper's objective); ``"mean"`` (name ``"per-datum"``) is GPyTorch's per-datum
#: ELBO, which weighs the utility term ``n`` times more. The authors' released
#: code uses the per-datum ELBO of a window of 100 points inside a different loop;
#: that loop is ``EULBOOptions.authors()`` (the runner's ``eulbo-ei-authors``), not
#: this scaling alone.
ELBO_SCALES = {"paper": "sum", "per-datum": "mean"}
#: Former names of ``ELBO_SCALES`` (accepted with a ``DeprecationWarning``).
DEPRECATED_ELBO_SCALES = {"authors": "mean"}
#: Stopping rules of ``StoppingOptions.convergence``.
CONVERGENCE_RULES = ("steps", "epochs", "failures")
#: Optimizers of the ELBO fit (``ELBOFitOptions.optimizer``).
ELBO_OPTIMIZERS = ("auto", "adam", "lbfgs")
#: Optimizers of the joint EULBO phase (``JointOptions.optimizer``).
JOINT_OPTIMIZERS = ("lbfgs", "adam", "adam-epochs")
#: Acquisition functions of the warm start (``WarmStartOptions.acquisition``).
WARM_START_ACQUISITIONS = ("qlogei", "qei-noisy")
#: Alternation schemes of the w- and x-steps of the Adam joint phase.
ALTERNATIONS = ("step", "epoch")
#: The training window of the authors' released code (``update_on_n_pts``). The
#: ELBO is that of the last 100 points (see ``EULBOOptions.authors``).
AUTHORS_WINDOW = 100
#: The smallest iteration budget of the L-BFGS-B joint phase at large ``n``.
MIN_JOINT_ITERATIONS = 5


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, got {value!r}.")


def _check_positive_ints(group: str, settings: Any, names: tuple[str, ...]) -> None:
    for name in names:
        check_positive_int(f"{group}.{name}", getattr(settings, name))


@dataclass(frozen=True)
class ELBOFitOptions:
    r"""Which optimizer fits the ELBO (the first phase of a BO step).

    ``"auto"`` (the default) is full-batch L-BFGS on the collapsed bound
    [Titsias2009]_ followed by the closed-form ``q(u)``, on all the data while
    ``n <= EULBOOptions.lbfgs_max_n`` and above on ``lbfgs_max_n`` points drawn
    at random (``q(u)`` then at its closed form on all the data); ``"lbfgs"``
    uses all the data at any ``n``; ``"adam"`` is minibatch Adam
    (``AdamOptions``, ``StoppingOptions``), the paper's optimizer. Reason:
    L-BFGS reaches the ELBO's optimum where Adam's stopping rules stop early,
    far below it from a fresh start at thousands of points, and the subset
    keeps the cost of a fit bounded in ``n`` (an L-BFGS iteration costs
    ``O(n m^2)``).

    Example:
        >>> ELBOFitOptions(optimizer="adam")

    Args:
        optimizer: ``"auto"``, ``"adam"`` or ``"lbfgs"``, see above. Kept:
            ``"lbfgs"`` (all the data above ``lbfgs_max_n`` too) reproduces the
            published ``large_n_fit.py`` rows and the ``*-lbfgs`` ablations.
        lbfgs_max_iter: Iteration budget of the L-BFGS ELBO fit.
        epochs: With ``"adam"``: exactly this many epochs, no stopping rule (the
            authors' code's 10-epoch warm start of the EULBO arm); None (the
            default) stops by ``StoppingOptions``.
        subset_max_iter: Iteration budget of the L-BFGS fit when it runs on
            the random subset (``"auto"`` above ``lbfgs_max_n`` points); None
            (the default) uses ``lbfgs_max_iter``. Reason for a smaller one on
            a carried state: the subset's optimum is not all the data's, and
            iterating towards it lowers the bound of all the data
            (``EULBOOptions.turbo``). Last, so that the earlier fields keep
            their positions.
    """

    optimizer: str = "auto"
    lbfgs_max_iter: int = 500
    epochs: int | None = None
    subset_max_iter: int | None = None

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        _check_choice("elbo.optimizer", self.optimizer, ELBO_OPTIMIZERS)
        _check_positive_ints("elbo", self, ("lbfgs_max_iter",))
        if self.epochs is not None:
            check_positive_int("elbo.epochs", self.epochs)
        if self.subset_max_iter is not None:
            check_positive_int("elbo.subset_max_iter", self.subset_max_iter)


@dataclass(frozen=True)
class AdamOptions:
    r"""Minibatch Adam of the ELBO fit and of the Adam joint phase (Algorithm 1).

    Example:
        >>> AdamOptions(lr_w=0.005, batch_size=64)

    Args:
        lr_w: Step size of ``w`` (variational parameters, inducing points,
            hyperparameters); the paper's 0.01.
        lr_x: Step size of the candidates (joint phase); the paper's 0.001.
        batch_size: Minibatch size of the ELBO term (reshuffled every epoch).
        grad_clip: Gradient-norm clipping threshold (per block).
    """

    lr_w: float = 0.01
    lr_x: float = 0.001
    batch_size: int = 32
    grad_clip: float = 2.0

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        for name in ("lr_w", "lr_x", "grad_clip"):
            check_positive(f"adam.{name}", getattr(self, name))
        _check_positive_ints("adam", self, ("batch_size",))


@dataclass(frozen=True)
class StoppingOptions:
    r"""When a minibatch-Adam fit (ELBO or joint phase) stops.

    ``"steps"`` (the default) runs rounds of ``check_every`` minibatch steps and
    stops once ``patience`` rounds in a row improved the per-datum objective on
    a fixed check set of at most ``check_size`` points by less than ``tol``, or
    after ``max_steps`` steps. Reason: its cost per fit is bounded independently
    of ``n``, and the fixed check set makes the criterion a deterministic
    function of the parameters. ``"epochs"`` is the paper's rule (Appendix A:
    ``patience`` epochs without improvement, at most ``max_epochs``);
    ``EULBOOptions.table1()`` is it with Table 1's values. ``"failures"`` is the
    rule of the authors' released code: one epoch's summed minibatch loss is
    compared with the lowest so far, and the fit stops at the ``patience``-th
    epoch that fails to improve on it (counted in total, not in a row) or after
    ``max_epochs + 1`` epochs.

    Example:
        >>> StoppingOptions(max_steps=500)

    Args:
        convergence: ``"steps"``, ``"epochs"`` or ``"failures"``, see above.
        max_steps: Step budget of one fit (``"steps"``).
        check_every: Minibatch steps per round (``"steps"``).
        check_size: Size of the fixed check set (``"steps"``; also the size of
            the set on which the joint step reports its EULBO).
        tol: Smallest per-datum improvement (nats) that counts as progress.
        patience: Rounds or epochs without progress before stopping.
        max_epochs: Epoch budget of one fit (``"epochs"``).
    """

    convergence: str = "steps"
    max_steps: int = 1000
    check_every: int = 25
    check_size: int = 1024
    tol: float = 1e-3
    patience: int = 4
    max_epochs: int = 30

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        _check_choice("stopping.convergence", self.convergence, CONVERGENCE_RULES)
        check_positive("stopping.tol", self.tol, allow_zero=True)
        names = ("max_steps", "check_every", "check_size", "patience", "max_epochs")
        _check_positive_ints("stopping", self, names)


@dataclass(frozen=True)
class WarmStartOptions:
    r"""The ``optimize_acqf`` call that finds the joint step's starting candidates.

    ``acquisition`` (utility ``"ei"`` only): ``"qlogei"`` (the default) is
    BoTorch's ``qLogExpectedImprovement`` on the latent posterior, the
    acquisition whose soft version the EULBO's utility is; ``"qei-noisy"`` is
    ``qExpectedImprovement`` on the predictive distribution with observation
    noise, as the authors' released code proposes.

    Example:
        >>> WarmStartOptions(num_restarts=5, raw_samples=128)

    Args:
        num_restarts: ``optimize_acqf`` restarts.
        raw_samples: ``optimize_acqf`` raw samples.
        acquisition: ``"qlogei"`` or ``"qei-noisy"``, see above.
        max_iter: L-BFGS-B iterations per restart of ``optimize_acqf``; None
            (the default) keeps BoTorch's own limit (2,000). A lower limit
            bounds the cost of a search in many dimensions (the rover's 60 x
            ``q``), where qLogEI's search stops by this limit, not by its
            tolerance.
        resample_zero: When every raw sample's acquisition value is zero, draw
            more raw samples (BoTorch's ``gen_batch_initial_conditions`` retry,
            which it triggers by a ``BadInitialCandidatesWarning``). True is
            BoTorch's behaviour, False keeps the first draw (the authors'
            scripts ignore every warning, which turns the retry off). Either way
            the step does not depend on the caller's warning filters.
    """

    num_restarts: int = 10
    raw_samples: int = 256
    acquisition: str = "qlogei"
    resample_zero: bool = True
    max_iter: int | None = None

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        _check_positive_ints("warm_start", self, ("num_restarts", "raw_samples"))
        if self.max_iter is not None:
            check_positive_int("warm_start.max_iter", self.max_iter)
        _check_choice(
            "warm_start.acquisition", self.acquisition, WARM_START_ACQUISITIONS
        )
        if not isinstance(self.resample_zero, bool):
            raise ValueError(
                "`warm_start.resample_zero` must be True or False, got "
                f"{self.resample_zero!r}."
            )


@dataclass(frozen=True)
class UtilityOptions:
    r"""How the joint step estimates the expected utility.

    Example:
        >>> UtilityOptions(num_fantasies=16)

    Args:
        num_mc_samples: Fixed base samples of the q-batch utility (``q > 1``).
        num_fantasies: ``S``, fantasy samples and free points of the one-shot
            soft KG; the paper does not state it, 32 keeps the joint problem
            over ``q + S`` points cheap.
        num_quadrature_points: Gauss-Hermite points of the ``q = 1`` utility
            (the paper's 20).
    """

    num_mc_samples: int = 64
    num_fantasies: int = 32
    num_quadrature_points: int = DEFAULT_NUM_QUADRATURE_POINTS

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        names = ("num_mc_samples", "num_fantasies", "num_quadrature_points")
        _check_positive_ints("utility", self, names)


@dataclass(frozen=True)
class JointOptions:
    r"""The joint EULBO phase: optimizer, budget and the blocks of ``w`` it refines.

    ``"lbfgs"`` (the default) is L-BFGS-B on the deterministic full-data EULBO
    over the candidates and the selected blocks of ``w``, started at the warm
    start, so the returned EULBO is never below the warm start's and is
    strictly higher whenever its gradient there is non-zero. Its iteration
    budget is ``max_iter`` while ``n <= EULBOOptions.lbfgs_max_n`` and
    proportionally fewer above (``joint_iterations``), so the cost per step
    stays bounded in ``n``. Reason: from a converged ELBO fit the
    minibatch-Adam phase of Algorithm 1 (``"adam"``, which uses ``AdamOptions``
    and ``StoppingOptions``) first lowers the EULBO and its stopping rule
    returns the warm start unchanged (measured; see the EULBO page of the docs).
    ``"adam-epochs"`` is the joint phase of the authors' released code
    (``botorch_ext.eulbo.joint_epochs``): whole epochs of minibatch Adam
    w-steps alternate with whole epochs of x-steps, stopped by the
    ``"failures"`` rule of ``StoppingOptions``, with no rollback; a non-finite
    gradient restarts it from the warm start with both step sizes divided by 10,
    at most ``retries`` times.

    ``alternation`` (``"adam"`` only): ``"step"`` alternates one w-step and
    one x-step per minibatch (Algorithm 1); ``"epoch"`` takes a full epoch (or
    round) of w-steps, then one x-step.

    Example:
        >>> JointOptions(parameters=("variational", "inducing_points"))

    Args:
        optimizer: ``"lbfgs"``, ``"adam"`` (Algorithm 1: alternating
            minibatch w- and x-steps) or ``"adam-epochs"``, see above.
        parameters: Blocks of ``w`` the joint phase refines: ``"all"``
            (Algorithm 1) or one or several of ``JOINT_PARAMETER_BLOCKS`` (the
            refinement ablation of Figure 3); the others keep the ELBO fit's
            values. Kept: the published m-sweep's ``@vi`` rows
            (``benchmarks/eulbo/msweep.py``) and ``joint_phase.py`` need it.
        max_iter: L-BFGS-B iteration budget while ``n <= lbfgs_max_n``.
        retries: ``"adam-epochs"``: restarts with step sizes divided by 10 after
            a non-finite gradient (the authors' code makes 8 attempts in all).
        alternation: ``"adam"``: ``"step"`` or ``"epoch"``, see above (an
            ``EULBOModel`` argument before 0.2.0).
    """

    optimizer: str = "lbfgs"
    parameters: str | tuple[str, ...] = "all"
    max_iter: int = 100
    retries: int = 7
    alternation: str = "step"

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""
        _check_choice("joint.optimizer", self.optimizer, JOINT_OPTIMIZERS)
        joint_parameter_blocks(self.parameters)
        _check_positive_ints("joint", self, ("max_iter",))
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise ValueError(
                f"`joint.retries` must be an integer, got {self.retries!r}."
            )
        check_positive("joint.retries", self.retries, allow_zero=True)
        _check_choice("joint.alternation", self.alternation, ALTERNATIONS)


class OptionsGroup(Protocol):
    r"""What every group of ``EULBOOptions`` has: a ``validate`` method."""

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting."""


#: The groups of ``EULBOOptions`` and their classes.
GROUPS: dict[str, type[OptionsGroup]] = {
    "elbo": ELBOFitOptions,
    "adam": AdamOptions,
    "stopping": StoppingOptions,
    "warm_start": WarmStartOptions,
    "utility": UtilityOptions,
    "joint": JointOptions,
}

#: The flat field names of botorch_ext 0.1.0 and where each lives now:
#: ``(group, field)``, with group ``None`` for a field of ``EULBOOptions``.
FLAT_FIELDS: dict[str, tuple[str | None, str]] = {
    "elbo_optimizer": ("elbo", "optimizer"),
    "lbfgs_max_iter": ("elbo", "lbfgs_max_iter"),
    "subset_max_iter": ("elbo", "subset_max_iter"),
    "elbo_epochs": ("elbo", "epochs"),
    "lbfgs_max_n": (None, "lbfgs_max_n"),
    **{
        name: (group, name)
        for group, group_class in (
            ("adam", AdamOptions),
            ("stopping", StoppingOptions),
            ("warm_start", WarmStartOptions),
            ("utility", UtilityOptions),
        )
        for name in (f.name for f in dataclasses.fields(group_class))
    },
    "joint_optimizer": ("joint", "optimizer"),
    "joint_parameters": ("joint", "parameters"),
    "joint_max_iter": ("joint", "max_iter"),
    "joint_retries": ("joint", "retries"),
    "alternation": ("joint", "alternation"),
}


def _warn_flat(what: str) -> None:
    warnings.warn(
        f"{what} uses the flat setting names of botorch_ext 0.1.0, which are "
        "deprecated and go in the next release; build EULBOOptions from its "
        "groups, e.g. EULBOOptions(stopping=StoppingOptions(max_steps=500)), or "
        "use EULBOOptions().replace(stopping=...).",
        DeprecationWarning,
        stacklevel=3,
    )


def options_from_flat(fields: dict[str, Any]) -> EULBOOptions:
    r"""``EULBOOptions`` from the flat names of botorch_ext 0.1.0, without a warning.

    For stored data written by that version (Ax experiments); code should
    build the groups.

    Example:
        >>> options_from_flat({"max_steps": 500})

    Args:
        fields: Flat settings (``FLAT_FIELDS``).

    Returns:
        The options.

    Raises:
        TypeError: For a name that is not in ``FLAT_FIELDS``, naming it.
    """
    unknown = sorted(set(fields) - set(FLAT_FIELDS))
    if unknown:
        raise TypeError(
            f"EULBOOptions has no setting {unknown}; the settings are "
            f"{sorted(FLAT_FIELDS)}."
        )
    changes: dict[str | None, dict[str, Any]] = {}
    for name, value in fields.items():
        group, key = FLAT_FIELDS[name]
        changes.setdefault(group, {})[key] = value
    top = changes.pop(None, {})
    options = EULBOOptions()
    groups = {
        str(group): dataclasses.replace(getattr(options, str(group)), **values)
        for group, values in changes.items()
    }
    return dataclasses.replace(options, **groups, **top)


@dataclass(frozen=True)
class EULBOOptions:
    r"""Optimizer settings of ``fit_elbo`` and ``optimize_eulbo`` [Maus2024eulbo]_.

    One settings object per concern (see the module docstring): ``elbo``,
    ``adam`` and ``stopping`` for the ELBO fit, ``warm_start``, ``utility`` and
    ``joint`` for the joint step, and ``lbfgs_max_n``, the largest ``n`` at
    which the ELBO fit's L-BFGS uses all the data (``elbo.optimizer="auto"``;
    above, that many points drawn at random) and the joint phase gets its full
    L-BFGS-B budget. The defaults are the package's: L-BFGS in both phases;
    ``table1()`` is the paper's minibatch-Adam setting, ``authors()`` the
    authors' released code's, and ``turbo()`` bounds every search of a step for
    long high-dimensional TuRBO runs.

    Example:
        >>> opts = EULBOOptions(stopping=StoppingOptions(max_steps=500))
        >>> opts = opts.replace(joint=JointOptions(optimizer="adam"))
        >>> paper = EULBOOptions.table1()

    Args:
        elbo: The ELBO fit's optimizer (``ELBOFitOptions``).
        adam: Minibatch Adam, both phases (``AdamOptions``).
        stopping: When an Adam fit stops, both phases (``StoppingOptions``).
        warm_start: The joint step's ``optimize_acqf`` (``WarmStartOptions``).
        utility: The utility's estimate (``UtilityOptions``).
        joint: The joint phase (``JointOptions``).
        lbfgs_max_n: Largest ``n`` at which L-BFGS uses all the data at its
            full budget.
    """

    elbo: ELBOFitOptions = field(default_factory=ELBOFitOptions)
    adam: AdamOptions = field(default_factory=AdamOptions)
    stopping: StoppingOptions = field(default_factory=StoppingOptions)
    warm_start: WarmStartOptions = field(default_factory=WarmStartOptions)
    utility: UtilityOptions = field(default_factory=UtilityOptions)
    joint: JointOptions = field(default_factory=JointOptions)
    lbfgs_max_n: int = 2000

    @classmethod
    def from_flat(cls, **fields: Any) -> EULBOOptions:
        r"""Deprecated: the options from the flat names of 0.1.0 (``FLAT_FIELDS``).

        Warns with a ``DeprecationWarning``; build the groups instead.

        Example:
            >>> EULBOOptions(stopping=StoppingOptions(max_steps=500))  # not from_flat

        Args:
            fields: Flat settings.

        Returns:
            The options.

        Raises:
            TypeError: For a name that is not in ``FLAT_FIELDS``, naming it.
        """
        _warn_flat("EULBOOptions.from_flat")
        return options_from_flat(fields)

    def replace(self, **fields: Any) -> EULBOOptions:
        r"""A copy with the given groups (or ``lbfgs_max_n``) replaced.

        Flat names of 0.1.0 (``FLAT_FIELDS``) are still accepted, with a
        ``DeprecationWarning``.

        Example:
            >>> EULBOOptions().replace(adam=AdamOptions(lr_x=0.01))

        Args:
            fields: Groups by name (``adam=AdamOptions(...)``), or flat settings.

        Returns:
            The new options.

        Raises:
            TypeError: For a name that is neither a group nor in ``FLAT_FIELDS``.
        """
        names = {f.name for f in dataclasses.fields(self)}
        grouped = {k: v for k, v in fields.items() if k in names}
        flat = {k: v for k, v in fields.items() if k not in names}
        if flat:
            unknown = sorted(set(flat) - set(FLAT_FIELDS))
            if unknown:
                raise TypeError(
                    f"EULBOOptions has no setting {unknown}; its groups are "
                    f"{sorted(names)}."
                )
            _warn_flat("EULBOOptions.replace")
        result = dataclasses.replace(self, **grouped)
        if not flat:
            return result
        changes: dict[str | None, dict[str, Any]] = {}
        for name, value in flat.items():
            group, key = FLAT_FIELDS[name]
            changes.setdefault(group, {})[key] = value
        top = changes.pop(None, {})
        groups = {
            str(group): dataclasses.replace(getattr(result, str(group)), **values)
            for group, values in changes.items()
        }
        return dataclasses.replace(result, **groups, **top)

    def flat(self) -> dict[str, Any]:
        r"""Deprecated: the settings under their flat names (``FLAT_FIELDS``).

        Warns with a ``DeprecationWarning``.

        Example:
            >>> EULBOOptions().stopping.max_steps  # not flat()["max_steps"]
            1000

        Returns:
            A dict from flat name to value.
        """
        _warn_flat("EULBOOptions.flat")
        return {
            name: getattr(self if group is None else getattr(self, group), key)
            for name, (group, key) in FLAT_FIELDS.items()
        }

    @classmethod
    def table1(cls, **overrides: Any) -> EULBOOptions:
        r"""The paper's Table 1: Adam fits with the epoch rule (30 epochs, patience 3).

        Both the ELBO fit and the joint phase run minibatch Adam, as in
        Algorithm 1 of [Maus2024eulbo]_.

        Example:
            >>> opts = EULBOOptions.table1(warm_start=WarmStartOptions(num_restarts=5))

        Args:
            overrides: Groups to replace, as ``replace`` takes them.

        Returns:
            The options.
        """
        options = cls(
            elbo=ELBOFitOptions(optimizer="adam"),
            stopping=StoppingOptions(
                convergence="epochs", max_epochs=30, patience=3, tol=0.0
            ),
            joint=JointOptions(optimizer="adam"),
        )
        return options.replace(**overrides) if overrides else options

    @classmethod
    def turbo(cls, **overrides: Any) -> EULBOOptions:
        r"""Bounded searches for the TuRBO steps of a long high-dimensional run.

        Made for the runner's TuRBO SVGP methods on the 60-D rover with
        ``q = 20`` and thousands of evaluations, where every search of a step
        otherwise stops by its iteration limit rather than its tolerance:

        * ``warm_start.max_iter = 50``: L-BFGS-B iterations per restart of the
          ``optimize_acqf`` call that proposes the batch (the ELBO baseline's
          qLogEI, and EULBO's warm start), instead of BoTorch's 2,000. Reason:
          in ``60 q`` dimensions the search runs for hundreds of iterations
          and is most of a step.
        * ``elbo.lbfgs_max_iter = 100`` instead of 500. Reason: the state is
          carried from the previous step, so each fit starts next to its
          optimum; in 60-D the fit would otherwise run to its limit at every
          step.
        * ``joint.max_iter = 50`` instead of 100 (EULBO's joint phase).
        * ``elbo.subset_max_iter = 10``: above ``lbfgs_max_n`` points the
          carried fit runs 10 iterations on its random subset. Reason: the
          subset's optimum is not all the data's, and from a carried state
          more iterations on the subset lower the bound of all the data while
          costing most of the ELBO arm's step.

        ``lbfgs_max_n`` keeps its default (2,000). Reason: a smaller random
        subset costs the bound of all the data far more than the iteration cap
        does.

        These change the proposals; the BO results they give are recorded
        beside the cost on the EULBO page of the documentation.

        Example:
            >>> opts = EULBOOptions.turbo()
            >>> opts.warm_start.max_iter
            50

        Args:
            overrides: Groups to replace, as ``replace`` takes them.

        Returns:
            The options.
        """
        options = cls(
            elbo=ELBOFitOptions(lbfgs_max_iter=100, subset_max_iter=10),
            warm_start=WarmStartOptions(max_iter=50),
            joint=JointOptions(max_iter=50),
        )
        return options.replace(**overrides) if overrides else options

    @classmethod
    def authors(cls, arm: str = "eulbo") -> EULBOOptions:
        r"""The optimizer settings of the authors' released code ([Maus2024eulbo]_).

        The settings of ``Optimize`` in github.com/nataliemaus/aabo (commit
        b107273) for one arm; with the model choices below, the loop is theirs:

        * ELBO fit: minibatch Adam (step 0.01, minibatches of 32, gradient norm
          clipped at 2). The EULBO arm's warm start is exactly 10 epochs
          (``elbo.epochs``); the ELBO baseline (``arm="elbo"``) stops by their
          ``"failures"`` rule (the 3rd epoch, in total, whose loss is not the
          lowest so far, or after 31 epochs), well before the ELBO's optimum.
        * Warm start / the baseline's proposal: ``qExpectedImprovement`` on the
          predictive distribution with observation noise (``"qei-noisy"``),
          10 restarts, 256 raw samples, and no second draw of raw samples when
          all of them have zero acquisition value (``resample_zero=False``:
          their scripts ignore every warning, and BoTorch triggers that retry by
          a warning).
        * Joint phase: ``"adam-epochs"``: epochs of w-steps (step 0.01)
          alternate with epochs of x-steps (step 0.001, in the problem's units),
          stopped by the ``"failures"`` rule, with **no rollback**: the state it
          ends in is returned even if its EULBO is below the warm start's. This
          departs from the package's default joint phase, which never returns a
          state below its warm start (``botorch_ext.eulbo.joint.exceeds``);
          the preset reproduces the authors' loop, which has no such rule. A
          non-finite gradient restarts the phase with both steps divided by 10,
          8 attempts in all (their code raises under anomaly detection and
          retries; here the gradients are checked, see
          ``botorch_ext.eulbo.joint_epochs``).
        * Utility: 20-point Gauss-Hermite quadrature at ``q = 1``, 64 fixed
          base samples for ``q > 1``.

        The model choices are not optimizer settings; the runner's
        ``eulbo-ei-authors`` and ``elbo-svgp-authors`` methods make them: the
        per-datum ELBO (``EULBO(elbo_scale="mean")``) of a model on the last
        ``AUTHORS_WINDOW`` points, with the incumbent over all points
        (``EULBO(incumbent=...)``); the isotropic ``ScaleKernel(RBFKernel())`` and
        GPyTorch's ``GaussianLikelihood()``, without priors; outcomes
        standardized once, with the initial design's mean and standard deviation
        (``botorch_ext.runner.transforms.StandardizeOnce``); the state carried
        from step to step, the joint phase's perturbed ``w`` included.

        Where the paper's text and the code differ, this follows the code: eq.
        (8) sums the ELBO over all the data (the code: per datum on the last 100
        points, so the utility weighs as much as the window); Algorithm 1
        alternates w- and x-steps per minibatch (the code: per epoch); the
        paper's text runs the rover with ``q = 1`` (the code's default: ``q =
        20``). Their inducing points start from [Moss2023ipa]_'s allocator on an
        unfitted model; with ``m = n`` (100 and 100 at the first step) both it
        and the package's allocator take the initial points. Their soft KG is
        not eq. (10) (fixed Thompson-sampled free points); this preset is for
        the EI utility.

        Example:
            >>> eulbo_arm = EULBOOptions.authors()
            >>> baseline = EULBOOptions.authors(arm="elbo")

        Args:
            arm: ``"eulbo"`` (the EULBO arm) or ``"elbo"`` (the ELBO baseline,
                which uses only the fit and the warm-start settings).

        Returns:
            The options.
        """
        if arm not in ("eulbo", "elbo"):
            raise ValueError(f"`arm` must be 'eulbo' or 'elbo', got {arm!r}.")
        return cls(
            elbo=ELBOFitOptions(
                optimizer="adam", epochs=10 if arm == "eulbo" else None
            ),
            adam=AdamOptions(lr_w=0.01, lr_x=0.001, batch_size=32, grad_clip=2.0),
            stopping=StoppingOptions(
                convergence="failures", patience=3, max_epochs=30, tol=0.0
            ),
            warm_start=WarmStartOptions(
                num_restarts=10,
                raw_samples=256,
                acquisition="qei-noisy",
                resample_zero=False,
            ),
            utility=UtilityOptions(num_mc_samples=64, num_quadrature_points=20),
            joint=JointOptions(optimizer="adam-epochs", retries=7),
        )

    def validate(self) -> None:
        r"""Raise ``ValueError`` naming the first bad setting.

        Example:
            >>> EULBOOptions(adam=AdamOptions(batch_size=0)).validate()  # ValueError
        """
        for group, group_class in GROUPS.items():
            settings = getattr(self, group)
            if not isinstance(settings, group_class):
                raise ValueError(
                    f"`{group}` must be a {group_class.__name__}, got {settings!r}."
                )
            settings.validate()
        check_positive_int("lbfgs_max_n", self.lbfgs_max_n)


def joint_parameter_blocks(joint_parameters: str | tuple[str, ...]) -> tuple[str, ...]:
    r"""Resolve ``JointOptions.parameters`` to a tuple of block names.

    ``"all"`` is every block of ``JOINT_PARAMETER_BLOCKS``; a single block name
    or a non-empty tuple (or list) of them is that subset.

    Example:
        >>> joint_parameter_blocks("all")
        ('variational', 'inducing_points', 'hyperparameters')
        >>> joint_parameter_blocks(("variational", "inducing_points"))
        ('variational', 'inducing_points')

    Args:
        joint_parameters: ``"all"``, a block name, or a sequence of block names.

    Returns:
        The selected blocks, in ``JOINT_PARAMETER_BLOCKS`` order.

    Raises:
        ValueError: For an unknown or empty selection, naming the value.
    """
    names: tuple[str, ...]
    if isinstance(joint_parameters, str):
        names = (
            JOINT_PARAMETER_BLOCKS if joint_parameters == "all" else (joint_parameters,)
        )
    else:
        names = tuple(joint_parameters)
    bad = [b for b in names if b not in JOINT_PARAMETER_BLOCKS]
    if not names or bad:
        raise ValueError(
            "`joint.parameters` must be 'all' or a non-empty selection of "
            f"{JOINT_PARAMETER_BLOCKS}, got {joint_parameters!r}."
        )
    return tuple(b for b in JOINT_PARAMETER_BLOCKS if b in names)


def joint_iterations(options: EULBOOptions, n: int) -> int:
    r"""The L-BFGS-B iteration budget of the joint EULBO phase at ``n`` points.

    ``options.joint.max_iter`` while ``n <= options.lbfgs_max_n``; above,
    ``max_iter * lbfgs_max_n / n`` (at least ``MIN_JOINT_ITERATIONS``), which
    keeps the phase's cost, ``O(iterations * n * m^2)``, bounded in ``n``.

    Example:
        >>> joint_iterations(EULBOOptions(), 10_000)
        20

    Args:
        options: An ``EULBOOptions``.
        n: Number of training points.

    Returns:
        The iteration budget.
    """
    max_iter = options.joint.max_iter
    if n <= options.lbfgs_max_n:
        return max_iter
    return max(MIN_JOINT_ITERATIONS, max_iter * options.lbfgs_max_n // n)
