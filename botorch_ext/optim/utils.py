r"""Helpers around BoTorch's ``optimize_acqf``."""

from __future__ import annotations

import warnings

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
        ...     candidates, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4)
    """
    warnings.filterwarnings(
        "ignore", message=OPTIMIZE_ACQF_RETRY_MESSAGE, category=RuntimeWarning
    )
