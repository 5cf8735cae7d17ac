# Over 500 lines: the problem registry holds the papers' benchmarks, the 60-D rover
# trajectory simulator among them, and the resolution of botorch: and module: names.
r"""Registry of benchmark problems, each exposed to BoTorch on the unit cube.

Every problem is a minimization problem in its natural sign (the sign the papers
report); the runner negates values for BoTorch, which maximizes. A problem maps
``u`` in ``[0, 1]^d`` to its native domain and evaluates there.

The high-dimensional problems follow Section 4.1 (and the supplement) of the
BOCK paper [Oh2018bock]_, defined on ``x`` in ``[-1, 1]^d``:

- repeated Branin: ``z = 7.5 x + (2.5, 7.5)`` per coordinate pair, the mean of the
  ``floor(d / 2)`` Branin terms (an odd last coordinate is ignored), min 0.397887;
- repeated Hartmann6: ``z = (x + 1) / 2``, the mean over ``floor(d / 6)`` blocks
  (leftover coordinates ignored), min -3.32237;
- Rosenbrock: ``z = 7.5 x + 2.5``, the usual sum times
  ``50000 / ((90^2 + 9^2)(d - 1))``, min 0 at ``x = -0.2`` and 8608.36 at the
  centre for every ``d``;
- Levy: ``z = 10 x``, the standard Levy function, min 0 at ``x = 0.1``.

Beyond the registry, ``get_problem`` resolves two kinds of names (``resolve``):

- ``botorch:NAME``: the class ``NAME`` of ``botorch.test_functions.synthetic``
  (e.g. ``botorch:Ackley``), built with ``dim`` where its constructor takes one;
- ``module:callable``: a user's ``SyntheticTestFunction`` subclass, or a factory
  returning an instance, importable as ``module`` (called with ``dim=`` when a
  dimension is given).

Both keep BoTorch's ``bounds`` (mapped affinely onto the unit cube), its
``optimal_value`` and its first ``optimizers`` entry; a function that BoTorch
defines as a maximization problem (``is_minimization_problem`` false, e.g.
``Cosine8``) is negated, so that every problem is minimized.

The EULBO paper [Maus2024eulbo]_ also runs the 60-D rover trajectory problem of
[Wang2018ebo]_ "with the same obstacle set up as in Maus et al. (2023)"
[Maus2023robot]_. That set-up is not the original one, and ``rover`` follows it:

- rover: minimize ``-reward``; ``optimal_value`` is the lower bound ``-5 + 0.05
  |goal - start|_2 = -4.936360``, not attained (the straight path is blocked); the
  shortest collision-free path would give -4.935619 and the reference ``optimizer``
  gives -4.935567 (best known); uniformly random points score about 30 to 130 (1st
  to 99th percentile, median 78). The 60 inputs are 30 planar *steps* ``(dx_k,
  dy_k)`` (interleaved ``x = (dx_1, dy_1, ..., dx_30, dy_30)``), each coordinate in
  ``[-0.5 * 4 / 60, 4 / 60] = [-1/30, 1/15]``. The control points are the start
  ``(0.05, 0.05)`` and its 30 running sums with the steps (31 points); the
  trajectory is the cubic interpolating spline through them ("not-a-knot",
  parametrized by normalized chord length, i.e. FITPACK's ``splprep(k=3, s=0)``),
  sampled at 1000 equally spaced parameters in ``[0, 1]``. Along the sampled
  polyline a trapezoidal rule integrates the cost density ``0.05 + 20 * [point in an
  obstacle]``, and ``100 |end - goal|_1`` is added for missing the goal ``(0.95,
  0.95)`` (the start is always met); ``reward = 5 - cost``. The obstacles are the
  half-open squares ``[c - w/2, c + w/2)^2`` of side ``w = 0.08`` centred on the 6 x
  6 grid ``{0, 0.2, ..., 1}^2`` minus ``(0, 0)`` and ``(1, 1)`` (34 squares), plus
  everything outside ``[0, 1)^2``. The side 0.08 is that of the EULBO authors'
  released code (github.com/nataliemaus/aabo); the ROBOT release of [Maus2023robot]_
  (github.com/nataliemaus/robot) has the same layout with side 0.1
  (``_ROVER_OBSTACLE_SIDE``). Wang et al.'s original instead takes 30 control points
  in ``[-0.1, 1.1]^2``, 113 random squares of side 0.05, smoothing splines and ``10
  |.|_1`` start and goal penalties. Consecutive identical control points are merged
  (as the reference code does); with fewer than four left the spline degree drops
  (the reference code raises there).

.. [Oh2018bock]
    C. Oh, E. Gavves and M. Welling. BOCK: Bayesian Optimization with Cylindrical
    Kernels. ICML 2018.

.. [Wang2018ebo]
    Z. Wang, C. Gehring, P. Kohli and S. Jegelka. Batched Large-scale Bayesian
    Optimization in High-dimensional Spaces. AISTATS 2018.

.. [Maus2023robot]
    N. Maus, K. Wu, D. Eriksson and J. Gardner. Discovering Many Diverse Solutions
    with Bayesian Optimization. AISTATS 2023.

.. [Maus2024eulbo]
    N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
    Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
from botorch.test_functions import synthetic
from botorch.test_functions.base import ConstrainedBaseTestProblem
from botorch.test_functions.synthetic import (
    Branin,
    Hartmann,
    Levy,
    Rosenbrock,
    SyntheticTestFunction,
)
from torch import Tensor

from botorch_ext.runner.errors import ArgumentError


@dataclass(frozen=True)
class Problem:
    r"""A minimization benchmark on the unit cube ``[0, 1]^dim``.

    Example:
        >>> problem = get_problem("rosenbrock", dim=20)
        >>> problem(torch.full((1, 20), 0.5, dtype=torch.double))  # the centre
        tensor([8608.3608], dtype=torch.float64)

    Args:
        name: The registry name.
        dim: The input dimension.
        optimal_value: The global minimum, in the natural sign.
        optimizer: A ``dim``-dim point of ``[0, 1]^dim`` attaining it (None where
            the problem's source does not give one).
        function: Maps an ``n x dim`` tensor in ``[0, 1]^dim`` to ``n`` values.
        domain: The native domain the unit cube is mapped onto, for display.
        sense: The sign convention; every registered problem is minimized.
    """

    name: str
    dim: int
    optimal_value: float
    optimizer: Tensor | None
    function: Callable[[Tensor], Tensor]
    domain: str = "[-1, 1]^d"
    sense: str = "minimize"

    @property
    def bounds(self) -> Tensor:
        r"""The ``2 x dim`` unit-cube bounds BoTorch optimizes over."""
        return torch.stack([torch.zeros(self.dim), torch.ones(self.dim)]).double()

    def __call__(self, U: Tensor) -> Tensor:
        r"""Evaluate at ``n x dim`` points of the unit cube (minimization sign).

        Raises:
            ValueError: If ``U`` has the wrong trailing dimension, leaves the
                unit cube or contains NaN.
        """
        if U.shape[-1] != self.dim:
            raise ValueError(
                f"`U` must have {self.dim} columns for {self.name}, got shape "
                f"{tuple(U.shape)}."
            )
        # Written as a negated "inside" test so that NaN entries fail it too.
        if not bool(((U >= 0) & (U <= 1)).all()):
            raise ValueError(f"`U` must lie in [0, 1]^{self.dim} (no NaN).")
        return self.function(U)


def _to_native(U: Tensor, lower: Tensor, upper: Tensor) -> Tensor:
    return lower.to(U) + U * (upper - lower).to(U)


def _to_unit(x: Tensor, lower: Tensor, upper: Tensor) -> Tensor:
    return (x - lower) / (upper - lower)


def _branin(dim: int) -> Problem:
    fn = Branin()
    lower, upper = cast(Tensor, fn.bounds)  # a buffer, typed Tensor | Module
    assert fn._optimizers is not None  # Branin's three minimisers
    return Problem(
        name="branin",
        dim=2,
        optimal_value=fn.optimal_value,
        optimizer=_to_unit(torch.tensor(fn._optimizers[0]), lower, upper),
        function=lambda U: fn(_to_native(U, lower, upper)),
        domain="[-5, 10] x [0, 15]",
    )


def _hartmann6(dim: int) -> Problem:
    fn = Hartmann(dim=6)
    assert fn._optimizers is not None  # the 6-D Hartmann minimiser
    return Problem(
        name="hartmann6",
        dim=6,
        optimal_value=fn.optimal_value,
        optimizer=torch.tensor(fn._optimizers[0]),
        function=lambda U: fn(U),
        domain="[0, 1]^6",
    )


def _repeated_branin(dim: int) -> Problem:
    fn = Branin()
    shift = torch.tensor([2.5, 7.5])
    n_terms = dim // 2

    def function(U: Tensor) -> Tensor:
        x = 2.0 * U[..., : 2 * n_terms] - 1.0
        z = 7.5 * x.reshape(*x.shape[:-1], n_terms, 2) + shift.to(x)
        values: Tensor = fn(z)
        return values.mean(dim=-1)

    # The Branin minimiser (pi, 2.275) in every pair; an odd last coordinate is free.
    x_opt = (torch.tensor([math.pi, 2.275]) - shift) / 7.5
    optimizer = torch.full((dim,), 0.5)
    optimizer[: 2 * n_terms] = ((x_opt + 1.0) / 2.0).repeat(n_terms)
    return Problem("repeated-branin", dim, fn.optimal_value, optimizer, function)


def _repeated_hartmann6(dim: int) -> Problem:
    fn = Hartmann(dim=6)
    n_blocks = dim // 6

    def function(U: Tensor) -> Tensor:
        # z = (x + 1) / 2 with x = 2 u - 1 is u itself.
        z = U[..., : 6 * n_blocks].reshape(*U.shape[:-1], n_blocks, 6)
        values: Tensor = fn(z)
        return values.mean(dim=-1)

    optimizer = torch.full((dim,), 0.5)
    assert fn._optimizers is not None  # the 6-D Hartmann minimiser
    optimizer[: 6 * n_blocks] = torch.tensor(fn._optimizers[0]).repeat(n_blocks)
    return Problem("repeated-hartmann6", dim, fn.optimal_value, optimizer, function)


def _rosenbrock(dim: int) -> Problem:
    fn = Rosenbrock(dim=dim)
    scale = 50000.0 / ((90.0**2 + 9.0**2) * (dim - 1))

    def function(U: Tensor) -> Tensor:
        values: Tensor = fn(7.5 * (2.0 * U - 1.0) + 2.5)
        return scale * values

    optimizer = torch.full((dim,), (-0.2 + 1.0) / 2.0)
    return Problem("rosenbrock", dim, 0.0, optimizer, function)


def _levy(dim: int) -> Problem:
    fn = Levy(dim=dim)
    optimizer = torch.full((dim,), (0.1 + 1.0) / 2.0)
    return Problem("levy", dim, 0.0, optimizer, lambda U: fn(10.0 * (2.0 * U - 1.0)))


# The rover set-up of Maus et al. (2023) as released with EULBO; see the module
# docstring. Every number below is part of the benchmark's definition.
_ROVER_DIM = 60
_ROVER_LOWER = -0.5 * 4.0 / _ROVER_DIM  # each step coordinate in [-1/30, 1/15]
_ROVER_UPPER = 4.0 / _ROVER_DIM
_ROVER_START = (0.05, 0.05)
_ROVER_GOAL = (0.95, 0.95)
_ROVER_OBSTACLE_SIDE = 0.08  # 0.1 in the ROBOT release of the same layout
_ROVER_COLLISION_COST = 20.0  # cost density inside an obstacle, on top of ...
_ROVER_LENGTH_COST = 0.05  # ... this density everywhere
_ROVER_GOAL_WEIGHT = 100.0  # times the L1 distance from the end to the goal
_ROVER_OFFSET = 5.0  # reward = offset - cost
_ROVER_SAMPLES = 1000  # spline parameters sampled for the trapezoidal rule
_ROVER_REF_MARGIN = 0.001  # clearance of the reference path (see below)


def _rover_obstacles() -> tuple[Tensor, Tensor]:
    r"""The ``34 x 2`` lower and upper corners of the square obstacles."""
    grid = torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], dtype=torch.double)
    centres = torch.cartesian_prod(grid, grid)[1:-1]  # drop (0, 0) and (1, 1)
    half = _ROVER_OBSTACLE_SIDE / 2.0
    return centres - half, centres + half


def _rover_control_points(X: Tensor) -> Tensor:
    r"""Map ``n x 60`` steps to the ``n x 31 x 2`` control points (start first)."""
    steps = X.reshape(*X.shape[:-1], _ROVER_DIM // 2, 2)
    start = (
        torch.tensor(_ROVER_START, dtype=torch.double).to(X).expand(*X.shape[:-1], 1, 2)
    )
    return torch.cat([start, steps], dim=-2).cumsum(dim=-2)


def _interpolating_spline(P: Tensor, t: Tensor) -> Tensor:
    r"""Evaluate the cubic interpolating spline through control points.

    The spline interpolates the ``n x m x 2`` points ``P`` at their normalized
    cumulative chord lengths, with "not-a-knot" end conditions (third derivative
    continuous at the second and the second-to-last point), which is the curve
    FITPACK's ``splprep(k=3, s=0)`` fits. Consecutive points must differ. With
    ``m = 3`` it is the parabola, with ``m = 2`` the segment, with ``m = 1``
    the point.

    Args:
        P: ``n x m x 2`` control points.
        t: ``s`` parameters in ``[0, 1]``.

    Returns:
        The ``n x s x 2`` points of the curve.
    """
    n, m, _ = P.shape
    if m == 1:
        return P.expand(n, t.shape[0], 2)
    h = (P[:, 1:] - P[:, :-1]).norm(dim=-1)  # n x (m - 1) chord lengths
    u = torch.cat([torch.zeros_like(h[:, :1]), h.cumsum(dim=-1)], dim=-1)
    u = u / u[:, -1:]
    h = u[:, 1:] - u[:, :-1]
    # Second derivatives M at the points: continuity of the first derivative at
    # the m - 2 interior points, plus two end conditions.
    A = P.new_zeros(n, m, m)
    rhs = P.new_zeros(n, m, 2)
    if m == 2:
        A[:] = torch.eye(m).to(P)  # M = 0: the segment
    else:
        slope = (P[:, 1:] - P[:, :-1]) / h.unsqueeze(-1)
        i = torch.arange(1, m - 1)
        A[:, i, i - 1] = h[:, :-1]
        A[:, i, i] = 2.0 * (h[:, :-1] + h[:, 1:])
        A[:, i, i + 1] = h[:, 1:]
        rhs[:, 1:-1] = 6.0 * (slope[:, 1:] - slope[:, :-1])
        if m == 3:  # no room for not-a-knot: a constant M, the parabola
            A[:, 0, :2] = torch.tensor([1.0, -1.0]).to(P)
            A[:, 2, 1:] = torch.tensor([-1.0, 1.0]).to(P)
        else:  # not-a-knot: M jumps by proportional amounts across u_1, u_{m-2}
            A[:, 0, 0] = h[:, 1]
            A[:, 0, 1] = -(h[:, 0] + h[:, 1])
            A[:, 0, 2] = h[:, 0]
            A[:, -1, -3] = h[:, -1]
            A[:, -1, -2] = -(h[:, -2] + h[:, -1])
            A[:, -1, -1] = h[:, -2]
    M = torch.linalg.solve(A, rhs)
    tt = t.to(P).expand(n, -1).contiguous()
    k = torch.searchsorted(u.contiguous(), tt, right=True) - 1
    k = k.clamp(0, m - 2)  # t = 1 belongs to the last piece

    def at(V: Tensor, idx: Tensor) -> Tensor:
        return V.gather(1, idx.unsqueeze(-1).expand(-1, -1, 2))

    hk = h.gather(1, k).unsqueeze(-1)
    a = (u.gather(1, k + 1) - tt).unsqueeze(-1)  # distance to the right point
    b = (tt - u.gather(1, k)).unsqueeze(-1)  # distance to the left point
    M0, M1 = at(M, k), at(M, k + 1)
    P0, P1 = at(P, k), at(P, k + 1)
    return (
        (M0 * a**3 + M1 * b**3) / (6.0 * hk)
        + (P0 / hk - M0 * hk / 6.0) * a
        + (P1 / hk - M1 * hk / 6.0) * b
    )


def _rover_trajectory(X: Tensor) -> Tensor:
    r"""The ``n x 1000 x 2`` sampled trajectory for ``n x 60`` native steps."""
    P = _rover_control_points(X)
    t = torch.linspace(0.0, 1.0, _ROVER_SAMPLES, dtype=X.dtype, device=X.device)
    moves = (P[:, 1:] != P[:, :-1]).any(dim=-1)  # n x 30
    if bool(moves.all()):
        return _interpolating_spline(P, t)
    # A zero step repeats a control point; merge repeats row by row.
    out = torch.empty(X.shape[0], _ROVER_SAMPLES, 2).to(X)
    full = moves.all(dim=-1)
    if bool(full.any()):
        out[full] = _interpolating_spline(P[full], t)
    for row in torch.nonzero(~full).flatten().tolist():
        keep = torch.cat([moves[row].new_ones(1), moves[row]])
        out[row] = _interpolating_spline(P[row, keep].unsqueeze(0), t)[0]
    return out


def _rover_cost(X: Tensor) -> Tensor:
    r"""The rover's cost (``5 - reward``) at ``n x 60`` native steps."""
    Q = _rover_trajectory(X)
    in_square = ((Q >= 0.0) & (Q < 1.0)).all(dim=-1)
    hit = ~in_square
    lower, upper = _rover_obstacles()
    for lo, hi in zip(lower.to(Q), upper.to(Q), strict=True):
        hit |= ((Q >= lo) & (Q < hi)).all(dim=-1)
    density = _ROVER_LENGTH_COST + _ROVER_COLLISION_COST * hit.to(Q)
    seg: Tensor = (Q[:, 1:] - Q[:, :-1]).norm(dim=-1)
    path = (seg * 0.5 * (density[:, 1:] + density[:, :-1])).sum(dim=-1)
    goal = torch.tensor(_ROVER_GOAL, dtype=torch.double).to(Q)
    miss = (Q[:, -1] - goal).abs().sum(dim=-1)  # L1; the sign matters
    return path + _ROVER_GOAL_WEIGHT * miss


def _rover_reference_path(margin: float = _ROVER_REF_MARGIN) -> Tensor:
    r"""60 native steps whose trajectory hugs the shortest collision-free path.

    The shortest path from the start to the goal around the obstacles passes the
    lower-right corners of the diagonal squares: start, ``(0.2 + w/2, 0.2 -
    w/2)``, then straight along ``x - y = w`` to ``(0.8 + w/2, 0.8 - w/2)``, then
    the goal. The control points walk that polyline shifted by ``margin`` to the
    lower right (the spline is not allowed to clip a corner), in 4 + 22 + 4
    equal steps, and end exactly on the goal.
    """
    half = _ROVER_OBSTACLE_SIDE / 2.0
    shift = torch.tensor([margin, -margin], dtype=torch.double)
    a = torch.tensor([0.2 + half, 0.2 - half], dtype=torch.double) + shift
    b = torch.tensor([0.8 + half, 0.8 - half], dtype=torch.double) + shift
    start = torch.tensor(_ROVER_START, dtype=torch.double)
    goal = torch.tensor(_ROVER_GOAL, dtype=torch.double)
    legs = [(start, a, 4), (a, b, 22), (b, goal, 4)]
    steps = [((q - p) / k).expand(k, 2) for p, q, k in legs]
    return torch.cat(steps).reshape(-1)


def _rover(dim: int) -> Problem:
    lower = torch.full((_ROVER_DIM,), _ROVER_LOWER, dtype=torch.double)
    upper = torch.full((_ROVER_DIM,), _ROVER_UPPER, dtype=torch.double)

    def function(U: Tensor) -> Tensor:
        batch = U.shape[:-1]
        X = _to_native(U.reshape(-1, _ROVER_DIM).double(), lower, upper)
        value = _rover_cost(X) - _ROVER_OFFSET  # = -reward
        return value.reshape(batch).to(U)

    # Every path meets the start, so by the triangle inequality its length plus
    # the goal miss is at least |goal - start|_2 (the goal weight is >= 0.05).
    gap = math.dist(_ROVER_START, _ROVER_GOAL)
    bound = -_ROVER_OFFSET + _ROVER_LENGTH_COST * gap
    optimizer = _to_unit(_rover_reference_path(), lower, upper)
    return Problem(
        name="rover",
        dim=_ROVER_DIM,
        optimal_value=bound,
        optimizer=optimizer,
        function=function,
        domain="[-1/30, 1/15]^60",
    )


@dataclass(frozen=True)
class _Entry:
    factory: Callable[[int], Problem]
    default_dim: int
    min_dim: int
    fixed_dim: bool


PROBLEMS: dict[str, _Entry] = {
    "branin": _Entry(_branin, 2, 2, True),
    "hartmann6": _Entry(_hartmann6, 6, 6, True),
    "repeated-branin": _Entry(_repeated_branin, 20, 2, False),
    "repeated-hartmann6": _Entry(_repeated_hartmann6, 20, 6, False),
    "rosenbrock": _Entry(_rosenbrock, 20, 2, False),
    "levy": _Entry(_levy, 20, 1, False),
    "rover": _Entry(_rover, 60, 60, True),
}


def get_problem(name: str, dim: int | None = None) -> Problem:
    r"""Build a registered problem, a BoTorch test function or a user's function.

    Example:
        >>> problem = get_problem("repeated-hartmann6", dim=20)
        >>> ackley = get_problem("botorch:Ackley", dim=10)

    Args:
        name: One of ``PROBLEMS``, ``botorch:NAME`` or ``module:callable`` (see
            ``resolve``).
        dim: The dimension (scalable problems only); the problem's default if None.

    Returns:
        The ``Problem``.

    Raises:
        ValueError: For an unknown name; ``ArgumentError`` (a ``ValueError``
            naming ``dim``) for a dimension a registered problem cannot take.
    """
    if ":" in name:
        return resolve(name, dim)
    if name not in PROBLEMS:
        raise ValueError(
            f"unknown problem {name!r}; choose from {', '.join(PROBLEMS)}, "
            "botorch:NAME or module:callable"
        )
    entry = PROBLEMS[name]
    if dim is None:
        dim = entry.default_dim
    if entry.fixed_dim and dim != entry.default_dim:
        raise ArgumentError(
            "dim",
            f"problem {name!r} has fixed dimension {entry.default_dim}, got dim {dim}",
        )
    if dim < entry.min_dim:
        raise ArgumentError(
            "dim", f"problem {name!r} needs dim >= {entry.min_dim}, got {dim}"
        )
    return entry.factory(dim)


@functools.cache
def botorch_function_names() -> tuple[str, ...]:
    r"""The ``botorch.test_functions.synthetic`` classes ``botorch:NAME`` accepts.

    Concrete ``SyntheticTestFunction``s without constraints, whose default instance
    has continuous inputs only (``AckleyMixed`` and ``Labs`` do not).
    """
    names = []
    for name, obj in vars(synthetic).items():
        if (
            isinstance(obj, type)
            and issubclass(obj, SyntheticTestFunction)
            and not issubclass(obj, ConstrainedBaseTestProblem)
            and not inspect.isabstract(obj)
            and obj.__module__ == synthetic.__name__
        ):
            default = obj()
            if not (default.discrete_inds or default.categorical_inds):
                names.append(name)
    return tuple(sorted(names))


def from_test_function(function: SyntheticTestFunction, name: str) -> Problem:
    r"""Expose a BoTorch ``SyntheticTestFunction`` as a runner ``Problem``.

    The unit cube is mapped affinely onto ``function.bounds``; values, the
    optimum and the optimizer are BoTorch's, negated where the function is a
    maximization problem (``is_minimization_problem`` false), so that the
    problem is minimized like every other.

    Example:
        >>> from botorch.test_functions import Ackley
        >>> problem = from_test_function(Ackley(dim=4), "ackley4")

    Args:
        function: The test function (single objective, continuous inputs, no
            constraints, with a known ``optimal_value``).
        name: The problem's name (written to ``results.csv``).

    Returns:
        The ``Problem``.

    Raises:
        ValueError: If the function has constraints, discrete or categorical
            inputs, several objectives or no known optimal value.
    """
    kind = type(function).__name__
    if isinstance(function, ConstrainedBaseTestProblem):
        raise ValueError(f"problem {name!r}: {kind} has constraints, not supported")
    if function.discrete_inds or function.categorical_inds:
        raise ValueError(
            f"problem {name!r}: {kind} has discrete or categorical inputs, not "
            "supported (the runner proposes continuous points)"
        )
    if function.num_objectives != 1:
        raise ValueError(f"problem {name!r}: {kind} has several objectives")
    try:
        optimum = function.optimal_value
    except NotImplementedError as e:
        raise ValueError(
            f"problem {name!r}: {kind} has no known optimal value (set "
            "`_optimal_value`); the runner reports regret against it"
        ) from e
    sign = 1.0 if function.is_minimization_problem else -1.0
    # Buffers, typed Tensor | Module by nn.Module.__getattr__.
    lower, upper = cast(Tensor, function.bounds).double()
    optimizer = None
    if getattr(function, "optimizers", None) is not None:
        optimizers = cast(Tensor, function.optimizers)
        optimizer = _to_unit(optimizers[0].double(), lower, upper)

    def evaluate(U: Tensor) -> Tensor:
        # Rounding in the affine map may step past a bound by an ulp.
        X = torch.minimum(torch.maximum(_to_native(U, lower, upper), lower), upper)
        with torch.no_grad():
            values: Tensor = function(X.to(cast(Tensor, function.bounds)))
            return sign * values.to(U)

    if bool((lower == lower[0]).all() and (upper == upper[0]).all()):
        domain = f"[{lower[0]:g}, {upper[0]:g}]^{function.dim}"
    else:
        domain = " x ".join(
            f"[{lo:g}, {hi:g}]" for lo, hi in zip(lower, upper, strict=True)
        )
    return Problem(
        name=name,
        dim=function.dim,
        optimal_value=sign * float(optimum),
        optimizer=optimizer,
        function=evaluate,
        domain=domain,
    )


def resolve(spec: str, dim: int | None = None) -> Problem:
    r"""Build a problem from ``botorch:NAME`` or ``module:callable``.

    Example:
        >>> get_problem("botorch:StyblinskiTang", dim=8).optimal_value
        -313.329328

    Args:
        spec: ``botorch:NAME`` for a class of ``botorch.test_functions.synthetic``
            (see ``botorch_function_names``), or ``module:callable`` for a
            ``SyntheticTestFunction`` subclass or a factory returning an instance
            (``module`` must be importable; ``callable`` may be dotted).
        dim: The dimension, passed as ``dim=`` to the class or factory; None
            uses its default. A function without a ``dim`` argument only
            accepts its own dimension.

    Returns:
        The ``Problem`` (see ``from_test_function``), named ``spec``.

    Raises:
        ValueError: For an unknown class, module or callable, a callable that
            does not give a ``SyntheticTestFunction``, a dimension the function
            cannot take, or a function ``from_test_function`` refuses.
    """
    source, _, attribute = spec.partition(":")
    if not source or not attribute:
        raise ValueError(f"problem {spec!r} must be botorch:NAME or module:callable")
    if source == "botorch":
        names = botorch_function_names()
        if attribute not in names:
            raise ValueError(
                f"unknown BoTorch test function {attribute!r} in problem {spec!r}; "
                f"choose from {', '.join(names)}"
            )
        target = getattr(synthetic, attribute)
    else:
        try:
            target = importlib.import_module(source)
        except ImportError as e:
            raise ValueError(
                f"problem {spec!r}: cannot import module {source!r} ({e}); is it on "
                "PYTHONPATH (on every worker, too)?"
            ) from e
        except Exception as e:  # the module's own code may raise anything
            raise ValueError(
                f"problem {spec!r}: importing module {source!r} raised "
                f"{type(e).__name__}: {' '.join(str(e).split())}"
            ) from e
        for part in attribute.split("."):
            if not hasattr(target, part):
                raise ValueError(f"problem {spec!r}: {source!r} has no {attribute!r}")
            target = getattr(target, part)
        if not callable(target):
            raise ValueError(f"problem {spec!r}: {attribute!r} is not callable")
    takes_dim = _takes_dim(target)
    if dim is not None and not takes_dim:
        kwargs = {}
    else:
        kwargs = {} if dim is None else {"dim": dim}
    try:
        function = target(**kwargs)
    except Exception as e:  # user code may raise anything; name the problem
        raise ValueError(f"problem {spec!r} with dim={dim}: {e}") from e
    if not isinstance(function, SyntheticTestFunction):
        raise ValueError(
            f"problem {spec!r}: {attribute!r} gave a {type(function).__name__}, "
            "expected a botorch SyntheticTestFunction"
        )
    if dim is not None and function.dim != dim:
        raise ValueError(f"problem {spec!r} has fixed dimension {function.dim}")
    return from_test_function(function, spec)


def _takes_dim(target: Callable[..., object]) -> bool:
    try:
        return "dim" in inspect.signature(target).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
