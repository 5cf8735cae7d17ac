r"""Shared fixtures of the EULBO tests (model, fitting, joint optimization)."""

from __future__ import annotations

import torch

from botorch_ext.models import EULBOOptions

#: Short fits and a small warm start, for tests that only need the mechanics.
FAST = EULBOOptions.from_flat(
    max_steps=60,
    check_every=10,
    num_restarts=2,
    raw_samples=32,
    num_mc_samples=16,
    elbo_optimizer="adam",
)


def make_data(n=40, d=2, dtype=torch.double, seed=0):
    r"""``n`` uniform points of a smooth function (maximization)."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=torch.double)
    Y = torch.sin(5 * X).sum(-1, keepdim=True) - ((X - 0.7) ** 2).sum(-1, keepdim=True)
    return X.to(dtype), Y.to(dtype)


def options_with(**defaults):
    r"""A stand-in for ``EULBOOptions`` whose ``from_flat`` applies ``defaults`` first.

    For patching the runner's ``svgp.EULBOOptions`` (short fits in tests); the
    settings the runner passes override the defaults, as with ``partial``.
    """

    class Options(EULBOOptions):
        @classmethod
        def from_flat(cls, **fields):
            return EULBOOptions().replace(**(defaults | fields))

    return Options
