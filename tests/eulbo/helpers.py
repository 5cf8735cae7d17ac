r"""Shared fixtures of the EULBO tests (model, fitting, joint optimization)."""

from __future__ import annotations

import dataclasses

import torch

from botorch_ext.eulbo import (
    ELBOFitOptions,
    EULBOOptions,
    StoppingOptions,
    UtilityOptions,
    WarmStartOptions,
)
from botorch_ext.eulbo.options import FLAT_FIELDS

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


def settings(base: EULBOOptions, **flat) -> EULBOOptions:
    r"""``base`` with some settings changed, named as ``FLAT_FIELDS`` names them.

    A test shorthand for ``base.replace(group=dataclasses.replace(...))``.
    """
    changes: dict = {}
    for name, value in flat.items():
        group, key = FLAT_FIELDS[name]
        changes.setdefault(group, {})[key] = value
    top = changes.pop(None, {})
    groups = {
        group: dataclasses.replace(getattr(base, group), **values)
        for group, values in changes.items()
    }
    return dataclasses.replace(base, **groups, **top)


def options_with(**flat):
    r"""A stand-in for the runner's ``EULBOOptions`` with some settings changed.

    For patching ``botorch_ext.runner.svgp.EULBOOptions`` (short fits in tests):
    ``EULBOOptions()`` there gives the defaults with ``flat`` applied
    (``settings``); ``EULBOOptions.authors`` is the real preset.
    """

    class Options:
        authors = staticmethod(EULBOOptions.authors)

        def __new__(cls):
            return settings(EULBOOptions(), **flat)

    return Options
