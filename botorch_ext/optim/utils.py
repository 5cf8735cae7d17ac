r"""Helpers around BoTorch's ``optimize_acqf``, and the global random stream's guard."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch
from torch import Tensor

#: The start of the two ``RuntimeWarning`` messages of ``optimize_acqf`` about
#: restarts whose L-BFGS-B run ended with an ``OptimizationWarning`` (e.g. an
#: "ABNORMAL" line-search exit): the notice that it retries with new initial
#: conditions, and the notice that the retry failed too (it then keeps the best
#: candidates it has). A regular expression for ``warnings.filterwarnings``,
#: which matches it against the start of the message.
OPTIMIZE_ACQF_RETRY_MESSAGE = (
    r"Optimization failed (in `gen_candidates_scipy`|on the second try)"
)


def ignore_optimize_acqf_retry_warnings() -> None:
    r"""Ignore ``optimize_acqf``'s retry notices, and no other ``RuntimeWarning``.

    Adds one filter, by category (``RuntimeWarning``) and message
    (``OPTIMIZE_ACQF_RETRY_MESSAGE``), so that e.g. linear_operator's
    ``NumericalWarning`` (a ``RuntimeWarning``) and NumPy's overflow warnings stay
    visible. Call it inside ``warnings.catch_warnings()``, which removes the filter
    on exit.

    Example:
        >>> with warnings.catch_warnings():
        ...     ignore_optimize_acqf_retry_warnings()
        ...     candidates, _ = optimize_acqf(
        ...         acqf, bounds, q=1, num_restarts=4, raw_samples=64
        ...     )
    """
    warnings.filterwarnings(
        "ignore", message=OPTIMIZE_ACQF_RETRY_MESSAGE, category=RuntimeWarning
    )


@contextlib.contextmanager
def preserved_global_rng(like: Tensor) -> Iterator[None]:
    r"""Restore torch's global random state (and ``like``'s CUDA device's) on exit.

    The fits and the joint step draw from their own ``torch.Generator``; what
    still draws from the global stream inside them (``optimize_acqf``'s initial
    conditions, seeded by the caller's ``seed``; GPyTorch's initialization of a
    fresh ``q(u)``) does so on a fork of it, so a call leaves the user's stream
    where it was.

    Example:
        >>> with preserved_global_rng(train_X):
        ...     torch.manual_seed(0)  # only inside
    """
    devices = [like.device] if like.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        yield
