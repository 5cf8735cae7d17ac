r"""``Snapshot``: the one way the EULBO's fits save a state and go back to it.

Every step that may fail or end lower saves a state first and restores it
after: the L-BFGS joint phase's rollback to its warm start
(``botorch_ext.eulbo.joint``), the Adam joint phase's best round and, after a
non-finite EULBO, its warm start (``joint_adam``), the authors' joint phase's
restart after a non-finite gradient (``joint_epochs``), the Adam ELBO fit's best
check and, after a non-finite ELBO, its start (``fit``), and the collapsed fit's
start after a failed search (``collapsed``).

What a snapshot holds is the caller's choice, and it is part of the fit:

* ``Snapshot(model)``, a module: a copy of its whole ``state_dict``, buffers
  included, restored by the module's own ``load_state_dict`` (an
  ``EULBOModel``'s resizes the inducing points first). The joint phases take
  this one: they return the model as it was, every part of it.
* ``Snapshot(params)``, a list of tensors: a copy of their values, restored in
  place. The ELBO fits take this one: they save the tensors they search, and
  what they do not search stays as it is.

Reason for the two kinds in one class: each site keeps exactly what it saved
before the mechanisms were one, so no fit and no proposal changed.

A snapshot that is given a value (``Snapshot(params, value)``) keeps the best
state offered: ``offer(value)`` saves the current state again only if ``value``
beats the saved one.
"""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor


class Snapshot:
    r"""A saved copy of a module's state or of some tensors, to restore later.

    Example:
        >>> start = Snapshot(model)  # the whole state_dict, buffers too
        >>> ...  # steps that may fail
        >>> start.restore()
        >>> best = Snapshot(params, check_value)  # these tensors, with a score
        >>> best.offer(new_check_value)  # saves again if the score is higher
        >>> best.restore()

    Args:
        of: A ``torch.nn.Module`` (its ``state_dict`` is saved) or a sequence of
            tensors (their values are saved).
        value: The score of the state saved now, for ``offer``; ``-inf`` if
            None.
    """

    def __init__(
        self, of: torch.nn.Module | Sequence[Tensor], value: float | None = None
    ) -> None:
        r"""Save the current state of ``of``."""
        self.of = of
        self.value = -math.inf if value is None else value
        self.saved: Any = None
        self.save()

    def save(self) -> None:
        r"""Save the current state, replacing the saved one (the value stays)."""
        if isinstance(self.of, torch.nn.Module):
            self.saved = copy.deepcopy(self.of.state_dict())
        else:
            self.saved = [t.detach().clone() for t in self.of]

    def offer(
        self,
        value: float,
        better: Callable[[float, float], bool] = operator.gt,
    ) -> bool:
        r"""Save the current state if ``better(value, self.value)``.

        Args:
            value: The current state's score.
            better: Whether a score beats the saved one (default ``>``).

        Returns:
            True if the state was saved.
        """
        if not better(value, self.value):
            return False
        self.value = value
        self.save()
        return True

    def restore(self) -> None:
        r"""Put the saved state back (the saved copy stays, to restore again)."""
        if isinstance(self.of, torch.nn.Module):
            self.of.load_state_dict(self.saved)
            return
        with torch.no_grad():
            for t, saved in zip(self.of, self.saved, strict=True):
                t.copy_(saved)

    def distance(self) -> float:
        r"""The Euclidean distance of the tensors from their saved values.

        Raises:
            TypeError: For a snapshot of a module.
        """
        if isinstance(self.of, torch.nn.Module):
            raise TypeError("distance() needs a snapshot of tensors, not a module.")
        return math.sqrt(
            sum(
                float((t.detach() - saved).pow(2).sum())
                for t, saved in zip(self.of, self.saved, strict=True)
            )
        )
