r"""The runner's outcome transforms.

The factory behind ``--outcome-transform`` (``outcome_transform``), ``Negate``, the
one it needs beyond BoTorch's own, and ``StandardizeOnce``, the standardization of
the authors' EULBO code.
"""

from __future__ import annotations

import torch
from botorch.models.transforms.outcome import (
    Bilog,
    ChainedOutcomeTransform,
    Log,
    OutcomeTransform,
    Standardize,
)
from botorch.posteriors.posterior import Posterior
from botorch.posteriors.transformed import TransformedPosterior
from torch import Tensor


class Negate(OutcomeTransform):
    r"""Flip the sign of the outcomes: ``Y -> -Y``.

    The runner hands models outcomes in BoTorch's maximization sign, ``-f`` for a
    minimization problem; chaining ``Negate`` before BoTorch's ``Log`` models
    ``log f`` (which needs ``f > 0``) while the model still reports ``-f``.

    Example:
        >>> tf = ChainedOutcomeTransform(neg=Negate(), log=Log(), std=Standardize(1))
        >>> model = SingleTaskGP(train_X, -f_values, outcome_transform=tf)
    """

    def forward(
        self, Y: Tensor, Yvar: Tensor | None = None, X: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        r"""Negate the outcomes; the noise variances are unchanged.

        Args:
            Y: A ``batch_shape x n x m``-dim tensor of outcomes.
            Yvar: Matching observation-noise variances (optional).
            X: Unused.

        Returns:
            ``(-Y, Yvar)``.
        """
        return -Y, Yvar

    def untransform(
        self, Y: Tensor, Yvar: Tensor | None = None, X: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        r"""Negate back (``Negate`` is its own inverse).

        Args:
            Y: A ``batch_shape x n x m``-dim tensor of transformed outcomes.
            Yvar: Matching variances (optional).
            X: Unused.

        Returns:
            ``(-Y, Yvar)``.
        """
        return -Y, Yvar

    def untransform_posterior(
        self, posterior: Posterior, X: Tensor | None = None
    ) -> TransformedPosterior:
        r"""The posterior of ``-Y``: samples and mean negated, variance kept.

        Args:
            posterior: A posterior in the transformed space.
            X: Unused.

        Returns:
            A ``TransformedPosterior``.
        """
        return TransformedPosterior(
            posterior=posterior,
            sample_transform=torch.neg,
            mean_transform=lambda mean, var: -mean,
            variance_transform=lambda mean, var: var,
        )


class StandardizeOnce(Standardize):
    r"""``Standardize`` with the mean and standard deviation of the first data it sees.

    BoTorch's ``Standardize`` re-learns its statistics whenever it is applied in
    train mode, so a model built at every BO step standardizes by all the data
    of that step. The authors' EULBO code standardizes once, by the initial
    design's mean and standard deviation, and keeps them for the whole run; this
    transform learns them at its first application in train mode and keeps
    them afterwards (``EULBOModel.carry_over`` hands it on as it is).

    Example:
        >>> tf = StandardizeOnce(m=1)
        >>> model = EULBOModel(X_init, Y_init, outcome_transform=tf)
        >>> later = model.carry_over(X_all, Y_all)  # still the initial statistics
    """

    def forward(
        self, Y: Tensor, Yvar: Tensor | None = None, X: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        r"""Standardize ``Y``; learn the statistics only if none are learned yet.

        Args:
            Y: A ``batch_shape x n x m``-dim tensor of outcomes.
            Yvar: Matching observation-noise variances (optional).
            X: Passed on to ``Standardize``.

        Returns:
            The standardized outcomes and variances.
        """
        if self.training and bool(self._is_trained):
            self.eval()
            try:
                return super().forward(Y, Yvar, X)
            finally:
                self.train()
        return super().forward(Y, Yvar, X)


#: The names ``outcome_transform`` takes (``--outcome-transform``).
OUTCOME_TRANSFORMS = ("standardize", "bilog", "log")


def outcome_transform(name: str) -> OutcomeTransform:
    r"""A fresh outcome transform for the models of a run, by its runner name.

    Example:
        >>> model = SingleTaskGP(X, Y, outcome_transform=outcome_transform("bilog"))

    Args:
        name: One of ``OUTCOME_TRANSFORMS``: ``"standardize"``, ``"bilog"``
            (``Bilog`` then ``Standardize``) or ``"log"`` (``log f`` of the
            minimization-sign objective ``f > 0``, then ``Standardize``).

    Returns:
        The transform, for outcomes in BoTorch's maximization sign ``-f``.

    Raises:
        ValueError: For an unknown ``name``, listing the valid ones.
    """
    if name == "standardize":
        return Standardize(m=1)
    if name == "bilog":
        return ChainedOutcomeTransform(bilog=Bilog(), standardize=Standardize(m=1))
    if name == "log":
        # The runner's outcomes are -f; model log f (minimization sign, f > 0).
        return ChainedOutcomeTransform(
            negate=Negate(), log=Log(), standardize=Standardize(m=1)
        )
    choices = ", ".join(OUTCOME_TRANSFORMS)
    raise ValueError(f"unknown outcome transform {name!r}; choose from {choices}")
