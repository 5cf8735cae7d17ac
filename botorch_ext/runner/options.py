r"""What every runner method shares: its settings and the seed of each iteration.

``MethodOptions`` holds the settings of the model-based methods, and
``iteration_seed`` the rule that seeds each iteration of a run from the run's
seed and the number of points so far, so that a run is reproducible from its
seed and a resumed run proposes what an uncut one would. The method protocol
itself is in ``botorch_ext.runner.protocol``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from botorch_ext.optim.utils import preserved_global_rng
from botorch_ext.runner.aliases import deprecated_aliases

#: ``Method`` (then a ``Callable`` alias, now the protocol) was here in 0.2.0.
__getattr__ = deprecated_aliases(__name__, {"Method": "botorch_ext.runner.protocol"})


@dataclass(frozen=True)
class MethodOptions:
    r"""Settings shared by the model-based methods.

    Args:
        outcome_transform: ``"standardize"``, ``"bilog"`` (BoTorch's ``Bilog``
            chained with ``Standardize``) or ``"log"`` (BoTorch's ``Log`` of the
            minimization-sign objective ``f``, chained with ``Standardize``; needs
            ``f > 0``), applied to the training outcomes.
        num_restarts: ``optimize_acqf`` restarts.
        raw_samples: ``optimize_acqf`` raw samples for the initial conditions.
        initial_conditions: How ``optimize_acqf``'s starting points are chosen:
            ``"botorch"`` (its default heuristic on ``raw_samples`` Sobol points)
            or ``"bock"``, the candidate scheme of [Oh2018bock]_: the acquisition
            is evaluated on ``raw_samples`` fresh Sobol points plus
            ``raw_samples / 10`` sprays around the incumbent, and the best
            ``num_restarts`` are refined by gradient ascent (L-BFGS-B here, Adam
            in the paper). The paper used 20,000 points and 20 restarts.
        num_inducing_points: Inducing points of the SVGP methods (``eulbo-*``,
            ``elbo-svgp``, ``turbo-*``); 100 in [Maus2024eulbo]_.
    """

    outcome_transform: str = "standardize"
    num_restarts: int = 10
    raw_samples: int = 512
    initial_conditions: str = "botorch"
    num_inducing_points: int = 100


def iteration_seed(seed: int, train_X: Tensor) -> int:
    r"""The seed of one iteration of a run.

    It comes from the run's seed and the number of points so far, so that a resumed run
    repeats the iterations of an uncut one.

    Example:
        >>> with seeded_iteration(seed, train_X) as seed_i:
        ...     model = fit_model(train_X, train_Y, options, seed=seed_i)

    Args:
        seed: The run's seed.
        train_X: The ``n x d`` points evaluated so far.

    Returns:
        ``seed * 100003 + n``.
    """
    return seed * 100_003 + train_X.shape[0]


@contextlib.contextmanager
def seeded_iteration(seed: int, train_X: Tensor) -> Iterator[int]:
    r"""One iteration of a run: torch's global stream seeded by ``iteration_seed``.

    Inside, the global stream starts from ``iteration_seed(seed, train_X)`` (what
    BoTorch draws from it, e.g. ``optimize_acqf``'s initial conditions, is then
    the same in a resumed run); on exit the caller's stream is restored, so a
    proposal made from a user's own code leaves their random state alone.

    Example:
        >>> with seeded_iteration(seed, train_X) as seed_i:
        ...     candidates = propose(train_X, train_Y, seed_i)

    Args:
        seed: The run's seed.
        train_X: The ``n x d`` points evaluated so far (its device's stream is
            restored too).

    Yields:
        The iteration's seed.
    """
    seed_i = iteration_seed(seed, train_X)
    with preserved_global_rng(train_X):
        torch.manual_seed(seed_i)
        yield seed_i
