r"""Shared fixtures of the EULBO tests (model, fitting, joint optimization)."""

from __future__ import annotations

import torch

from botorch_ext.eulbo import (
    ELBOFitOptions,
    EULBOOptions,
    StoppingOptions,
    UtilityOptions,
    WarmStartOptions,
)

#: Short fits and a small warm start, for tests that only need the mechanics.
FAST = EULBOOptions(
    elbo=ELBOFitOptions(optimizer="adam"),
    stopping=StoppingOptions(max_steps=60, check_every=10),
    warm_start=WarmStartOptions(num_restarts=2, raw_samples=32),
    utility=UtilityOptions(num_mc_samples=16),
)


def make_data(n=40, d=2, dtype=torch.double, seed=0):
    r"""``n`` uniform points of a smooth function (maximization)."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=torch.double)
    Y = torch.sin(5 * X).sum(-1, keepdim=True) - ((X - 0.7) ** 2).sum(-1, keepdim=True)
    return X.to(dtype), Y.to(dtype)
