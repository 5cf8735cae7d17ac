r"""Registry of benchmark problems, each exposed to BoTorch on the unit cube.

Every problem is a minimization problem in its natural sign (the sign the papers
report); the runner negates values for BoTorch, which maximizes. A problem maps
``u`` in ``[0, 1]^d`` to its native domain and evaluates there.

The high-dimensional problems follow Section 4.1 (and the supplement) of the
BOCK paper [Oh2018bock], defined on ``x`` in ``[-1, 1]^d``:

- repeated Branin: ``z = 7.5 x + (2.5, 7.5)`` per coordinate pair, the mean of the
  ``floor(d / 2)`` Branin terms (an odd last coordinate is ignored), min 0.397887;
- repeated Hartmann6: ``z = (x + 1) / 2``, the mean over ``floor(d / 6)`` blocks
  (leftover coordinates ignored), min -3.32237;
- Rosenbrock: ``z = 7.5 x + 2.5``, the usual sum times
  ``50000 / ((90^2 + 9^2)(d - 1))``, min 0 at ``x = -0.2`` and 8608.36 at the
  centre for every ``d``;
- Levy: ``z = 10 x``, the standard Levy function, min 0 at ``x = 0.1``.

References

.. [Oh2018bock]
    C. Oh, E. Gavves and M. Welling. BOCK: Bayesian Optimization with Cylindrical
    Kernels. ICML 2018.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.test_functions import Branin, Hartmann, Levy, Rosenbrock
from torch import Tensor


@dataclass(frozen=True)
class Problem:
    r"""A minimization benchmark on the unit cube ``[0, 1]^dim``.

    Example:
        >>> problem = get_problem("rosenbrock", dim=20)
        >>> problem(torch.full((1, 20), 0.5))  # the centre
        tensor([8608.3608])

    Args:
        name: The registry name.
        dim: The input dimension.
        optimal_value: The global minimum, in the natural sign.
        optimizer: A ``dim``-dim point of ``[0, 1]^dim`` attaining it.
        function: Maps an ``n x dim`` tensor in ``[0, 1]^dim`` to ``n`` values.
        domain: The native domain the unit cube is mapped onto, for display.
        sense: The sign convention; every registered problem is minimized.
    """

    name: str
    dim: int
    optimal_value: float
    optimizer: Tensor
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
    lower, upper = fn.bounds
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
        return fn(z).mean(dim=-1)

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
        return fn(z).mean(dim=-1)

    optimizer = torch.full((dim,), 0.5)
    optimizer[: 6 * n_blocks] = torch.tensor(fn._optimizers[0]).repeat(n_blocks)
    return Problem("repeated-hartmann6", dim, fn.optimal_value, optimizer, function)


def _rosenbrock(dim: int) -> Problem:
    fn = Rosenbrock(dim=dim)
    scale = 50000.0 / ((90.0**2 + 9.0**2) * (dim - 1))

    def function(U: Tensor) -> Tensor:
        return scale * fn(7.5 * (2.0 * U - 1.0) + 2.5)

    optimizer = torch.full((dim,), (-0.2 + 1.0) / 2.0)
    return Problem("rosenbrock", dim, 0.0, optimizer, function)


def _levy(dim: int) -> Problem:
    fn = Levy(dim=dim)
    optimizer = torch.full((dim,), (0.1 + 1.0) / 2.0)
    return Problem("levy", dim, 0.0, optimizer, lambda U: fn(10.0 * (2.0 * U - 1.0)))


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
}


def get_problem(name: str, dim: int | None = None) -> Problem:
    r"""Build a registered problem.

    Example:
        >>> problem = get_problem("repeated-hartmann6", dim=20)

    Args:
        name: One of ``PROBLEMS``.
        dim: The dimension (scalable problems only); the problem's default if None.

    Returns:
        The ``Problem``.

    Raises:
        ValueError: For an unknown name, or a dimension the problem cannot take.
    """
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; choose from {', '.join(PROBLEMS)}")
    entry = PROBLEMS[name]
    if dim is None:
        dim = entry.default_dim
    if entry.fixed_dim and dim != entry.default_dim:
        raise ValueError(f"problem {name!r} has fixed dimension {entry.default_dim}")
    if dim < entry.min_dim:
        raise ValueError(f"problem {name!r} needs dim >= {entry.min_dim}, got {dim}")
    return entry.factory(dim)
