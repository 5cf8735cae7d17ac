r"""The runner's method protocol: a method makes runs, a run proposes batches.

A **method** (``Method``) is an object registered under a name
(``botorch_ext.runner.methods.register_method``). It carries its flags as
attributes and makes one **run** per BO loop (``new_run()``). A run's
``propose(train_X, train_Y, bounds, q, seed, options)`` returns a ``Proposal``:
the ``q x d`` batch in ``bounds`` together with the seconds the call spent
fitting its model and the fitted model's diagnostics. Nothing is written onto the
method: two runs of one method share no state, and a run that carries state
from one iteration to the next (a trust region, the previous model) holds it
itself.

``train_Y`` is in BoTorch's maximization sign and ``seed`` is the run's seed;
runs derive each iteration's seed from it and ``len(train_X)``
(``botorch_ext.runner.options.iteration_seed``), so a run is reproducible from
its seed and a resumed run proposes what an uncut one would.

``FunctionMethod`` makes a method of a plain function (the former form of a
runner method, ``(train_X, train_Y, bounds, q, seed, options) -> candidates``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from torch import Tensor

from botorch_ext.runner.options import MethodOptions

#: The flags every method carries as attributes, with what they mean:
#: ``model_based`` (it fits a model, so honours ``MethodOptions``; False: it
#: ignores the values and sees every point, failed ones included),
#: ``sequential`` (it builds its batch point by point, ``optimize_acqf``'s
#: ``sequential=True``, which takes no ``initial_conditions="bock"``),
#: ``gaussian_posterior`` (its acquisition needs a Gaussian posterior, so
#: ``outcome_transform="standardize"``), ``standardizes_outcomes`` (it
#: standardizes its outcomes itself, so ``outcome_transform="standardize"``) and
#: ``carries_state`` (its runs carry state between iterations, which
#: ``run_bo`` saves after each batch and restores on resume).
METHOD_FLAGS = (
    "model_based",
    "sequential",
    "gaussian_posterior",
    "standardizes_outcomes",
    "carries_state",
)


@dataclass(frozen=True)
class Proposal:
    r"""What one call of a run returns: the batch, its timing and diagnostics.

    Args:
        candidates: The ``q x d`` batch, in the problem's bounds.
        fit_seconds: The part of the call spent fitting the model (the runner
            counts the rest as acquisition time; for the EULBO methods, which
            fit the SVGP jointly with the proposal, only setting up the model).
        diagnostics: The fitted model's state (keys as in
            ``botorch_ext.runner.schema.DIAGNOSTIC_COLUMNS``' values), written to
            the ``model_*`` columns of the batch's rows; empty for none.
    """

    candidates: Tensor
    fit_seconds: float = 0.0
    diagnostics: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Run(Protocol):
    r"""One BO loop's use of a method: proposes a batch per iteration."""

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        r"""Propose ``q`` points given the run's data so far (see the module)."""
        ...  # pragma: no cover


@runtime_checkable
class Method(Protocol):
    r"""A runner method: its flags (``METHOD_FLAGS``) and ``new_run()``."""

    model_based: bool
    sequential: bool
    gaussian_posterior: bool
    standardizes_outcomes: bool
    carries_state: bool

    def new_run(self) -> Run:
        r"""A fresh run, sharing no state with any other run."""
        ...  # pragma: no cover


#: The signature of a runner method in function form, ``(train_X, train_Y, bounds,
#: q, seed, options)`` -> a ``q x d`` tensor of candidates in ``bounds``.
MethodFunction = Callable[[Tensor, Tensor, Tensor, int, int, MethodOptions], Tensor]


class FunctionMethod:
    r"""A stateless method made of a function that returns the candidates.

    Its runs are the method itself (it holds no state), and its proposals report
    no fit time and no diagnostics.

    Example:
        >>> def corner(train_X, train_Y, bounds, q, seed, options):
        ...     return bounds[0].expand(q, -1)
        >>> method = FunctionMethod(corner, model_based=False)
        >>> method.new_run().propose(X, Y, bounds, 1, 0, MethodOptions()).candidates

    Args:
        function: ``(train_X, train_Y, bounds, q, seed, options) -> q x d``.
        model_based: The method's flag (see ``METHOD_FLAGS``).
        sequential: The method's flag.
        gaussian_posterior: The method's flag.
    """

    standardizes_outcomes = False
    carries_state = False

    def __init__(
        self,
        function: MethodFunction,
        model_based: bool = True,
        sequential: bool = False,
        gaussian_posterior: bool = False,
    ) -> None:
        r"""Wrap ``function``; see the class docstring for the args."""
        self.function = function
        self.model_based = model_based
        self.sequential = sequential
        self.gaussian_posterior = gaussian_posterior
        self.__doc__ = function.__doc__

    def new_run(self) -> FunctionMethod:
        r"""The method itself: it carries no state."""
        return self

    def propose(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        bounds: Tensor,
        q: int,
        seed: int,
        options: MethodOptions,
    ) -> Proposal:
        r"""Call the function; no fit time, no diagnostics."""
        return Proposal(self.function(train_X, train_Y, bounds, q, seed, options))
