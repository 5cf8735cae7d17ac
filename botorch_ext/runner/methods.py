r"""Registry of optimization methods for the benchmark runner.

A method is one function from ``(train_X, train_Y, bounds, q, seed, options)`` to a
``q x d`` tensor of candidates in ``bounds``; ``train_Y`` is in BoTorch's
maximization sign and ``seed`` is the run's seed (methods derive per-iteration
seeds from it and ``len(train_X)``, so a run is reproducible from its seed).
Methods that carry state from one iteration to the next (``TurboMethod``,
``SVGPMethod``) are objects whose ``new_run()`` returns a fresh callable per run.
A method may report, after each call, a ``diagnostics`` dict (the fitted model's
state, written to the ``model_*`` columns) and a ``timings`` dict whose
``"fit_seconds"`` is the part of the call spent fitting the model (the runner
counts the rest as acquisition time; for the EULBO methods, which fit the SVGP
jointly with the proposal, only setting up the model counts as fitting).

``METHODS`` holds the user-facing methods (``botorch-ext methods`` lists them):
each paper's method with its recommended settings, and BoTorch's baselines.
Other methods (research ablations, your own) plug in two ways:

- ``module:attribute`` as the method name (``--method`` / ``--methods``), as for
  problems: ``attribute`` (may be dotted) is a method of ``module``, which must be
  importable (on ``PYTHONPATH``, on every worker too). ``get_method`` imports and
  registers it under that name in each process, so it also works in worker
  processes and on Dask workers.
- ``register_method(name, method)`` in Python, before ``run_bo`` or
  ``run_grid`` (in-process runs only: worker processes do not see it).

A method's flags come from its attributes: ``sequential=True`` (it builds its
batch point by point, as ``acquisition_method(..., sequential=True)`` sets),
``gaussian_posterior=True`` (its acquisition needs a Gaussian posterior),
``model_based=False`` (it fits no model); an ``SVGPMethod`` standardizes its
outcomes itself.

Example:
    >>> from botorch_ext.runner.methods import SVGPMethod, register_method
    >>> register_method("my-elbo-svgp", SVGPMethod(None, kernel=my_kernel))

The methods' parts live in modules of their own: ``options`` (``MethodOptions``,
the signature, the per-iteration seed), ``transforms`` (outcome transforms),
``kernels`` (covariance modules), ``fitting`` (MAP and SGMCMC fits),
``initial_conditions`` (BOCK's starting points), ``acquisition`` (the
acquisition-function methods), ``turbo`` and ``svgp`` (the methods that carry
state between iterations). This module registers them and re-exports their
public names.
"""

from __future__ import annotations

import importlib
from typing import cast

import torch
from botorch.acquisition import (
    qLogNoisyExpectedImprovement,
    qLowerBoundMaxValueEntropy,
    qMaxValueEntropy,
    qProbabilityOfImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.joint_entropy_search import qJointEntropySearch
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from botorch_ext.acquisition import qES, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.runner.acquisition import acquisition_method
from botorch_ext.runner.fitting import (
    SGMCMC_BUDGET_STEPS,
    SGMCMC_DRAWS,
    fit_model,
    gp_diagnostics,
)
from botorch_ext.runner.initial_conditions import (
    INITIAL_CONDITIONS,
    SPRAY_SCALES,
    bock_initial_conditions,
)
from botorch_ext.runner.kernels import (
    BOCK_LINEAR_WEIGHT_FLOOR,
    KERNELS,
    svgp_ard_kernel,
)
from botorch_ext.runner.options import Method, MethodOptions, iteration_seed
from botorch_ext.runner.svgp import SVGPMethod
from botorch_ext.runner.transforms import OUTCOME_TRANSFORMS
from botorch_ext.runner.turbo import TurboMethod

__all__ = [
    "BOCK_LINEAR_WEIGHT_FLOOR",
    "BOTORCH_UCB_BETA",
    "GAUSSIAN_POSTERIOR_METHODS",
    "INITIAL_CONDITIONS",
    "JES_NUM_OPTIMA",
    "KERNELS",
    "METHODS",
    "METHOD_SUMMARIES",
    "MODEL_BASED",
    "OUTCOME_TRANSFORMS",
    "SEQUENTIAL_METHODS",
    "SGMCMC_BUDGET_STEPS",
    "SGMCMC_DRAWS",
    "SPRAY_SCALES",
    "SVGP_METHODS",
    "Method",
    "MethodOptions",
    "SVGPMethod",
    "TurboMethod",
    "bock_initial_conditions",
    "fit_model",
    "get_method",
    "gp_diagnostics",
    "register_method",
    "svgp_ard_kernel",
]

#: ``beta`` of the ``botorch-qucb`` baseline: the value of BoTorch's "Getting
#: started" example (``UpperConfidenceBound(gp, beta=0.1)``); BoTorch's input
#: constructor (Ax's default) would use 0.2, the runner's ``qucb`` sqrt(3).
BOTORCH_UCB_BETA = 0.1
#: Optimal samples (``get_optimal_samples``) per iteration of ``qjes``: the
#: default of BoTorch's input constructor (Ax's setting).
JES_NUM_OPTIMA = 64


def _random(train_X, train_Y, bounds, q, seed, options) -> Tensor:
    gen = torch.Generator().manual_seed(iteration_seed(seed, train_X))
    U = torch.rand(q, bounds.shape[-1], generator=gen, dtype=bounds.dtype)
    return bounds[0] + U * (bounds[1] - bounds[0])


def _sobol(train_X, train_Y, bounds, q, seed, options) -> Tensor:
    # Continue one scrambled Sobol sequence across iterations: the points already
    # used are the first len(train_X) of the sequence with this seed.
    n = train_X.shape[0] + q
    X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=seed).squeeze(-2)
    return X[-q:]


def _flagged(method: Method, **flags) -> Method:
    for name, value in flags.items():
        setattr(method, name, value)
    return method


_flagged(_random, model_based=False)
_flagged(_sobol, model_based=False)

_QLOGNEI = qLogNoisyExpectedImprovement

#: The user-facing methods: name -> (method, one-line summary). The SVGP methods
#: pin their kernel (``svgp_ard_kernel``), so a name keeps its model.
_REGISTRY: dict[str, tuple[Method, str]] = {
    "random": (_random, "uniform random points (no model)"),
    "sobol": (_sobol, "one scrambled Sobol sequence per run (no model)"),
    "qlogei": (
        acquisition_method(_QLOGNEI),
        "BoTorch's qLogNoisyExpectedImprovement on its default SingleTaskGP",
    ),
    "qucb": (
        acquisition_method(qUCB),
        "qUCB, reparameterized q-UCB (Wilson et al. 2017)",
    ),
    "qsoftpi": (acquisition_method(qSoftPI), "qSoftPI, soft q-PI (Wilson et al. 2017)"),
    "qlogsoftpi": (
        acquisition_method(qLogSoftPI),
        "qLogSoftPI, soft q-PI in log space (Wilson et al. 2017)",
    ),
    "qes": (
        _flagged(acquisition_method(qES), gaussian_posterior=True),
        "qES, q-entropy search with a softmax p_max (Wilson et al. 2017)",
    ),
    "bock": (
        acquisition_method(_QLOGNEI, kernel="bock"),
        "qLogNEI with BOCK's CylindricalKernel (Oh et al. 2018), MAP hyperparameters",
    ),
    "bock-sgmcmc": (
        acquisition_method(_QLOGNEI, kernel="bock", fully_bayesian=True),
        "bock with its hyperparameters averaged over SGLD draws (Coullon et al. 2023)",
    ),
    "matern": (
        acquisition_method(_QLOGNEI, kernel="matern"),
        "qLogNEI with an isotropic Matern-5/2 (BOCK's baseline)",
    ),
    "matern-scaled": (
        acquisition_method(_QLOGNEI, kernel="matern-scaled"),
        "matern with a learned outputscale",
    ),
    "gpytorch-cylindrical": (
        acquisition_method(_QLOGNEI, kernel="gpytorch-cylindrical"),
        "qLogNEI with GPyTorch's CylindricalKernel",
    ),
    "eulbo-ei": (
        SVGPMethod("ei", kernel=svgp_ard_kernel),
        "EULBO: SVGP fitted jointly with the EI proposal (Maus et al. 2024)",
    ),
    "eulbo-kg": (
        SVGPMethod("kg", kernel=svgp_ard_kernel),
        "EULBO with the KG utility (Maus et al. 2024)",
    ),
    "elbo-svgp": (
        SVGPMethod(None, kernel=svgp_ard_kernel),
        "SVGP fitted by its ELBO, then qLogEI (EULBO's baseline)",
    ),
    "turbo-eulbo-ei": (
        SVGPMethod("ei", turbo=True, kernel=svgp_ard_kernel),
        "eulbo-ei in a TuRBO trust region (Maus et al. 2024)",
    ),
    "turbo-elbo-svgp": (
        SVGPMethod(None, turbo=True, kernel=svgp_ard_kernel),
        "elbo-svgp in a TuRBO trust region",
    ),
    "turbo": (
        TurboMethod(),
        "TuRBO with an exact GP and qLogEI (Eriksson et al. 2019)",
    ),
    "botorch-qucb": (
        acquisition_method(qUpperConfidenceBound, beta=BOTORCH_UCB_BETA),
        "BoTorch's qUpperConfidenceBound, beta = 0.1",
    ),
    "botorch-qpi": (
        acquisition_method(qProbabilityOfImprovement),
        "BoTorch's qProbabilityOfImprovement",
    ),
    "qjes": (
        _flagged(
            acquisition_method(
                qJointEntropySearch,
                late_kwargs=lambda: {"num_optima": JES_NUM_OPTIMA},
            ),
            gaussian_posterior=True,
        ),
        "BoTorch's qJointEntropySearch",
    ),
    "qmes": (
        _flagged(
            acquisition_method(qMaxValueEntropy, sequential=True),
            gaussian_posterior=True,
        ),
        "BoTorch's qMaxValueEntropy (batches built point by point)",
    ),
    "gibbon": (
        _flagged(
            acquisition_method(
                qLowerBoundMaxValueEntropy,
                constructor_class=qMaxValueEntropy,
                sequential=True,
            ),
            gaussian_posterior=True,
        ),
        "BoTorch's GIBBON, qLowerBoundMaxValueEntropy",
    ),
}

#: Method name -> method: the user-facing methods, then any registered with
#: ``register_method`` or resolved from ``module:attribute``.
METHODS: dict[str, Method] = {name: m for name, (m, _) in _REGISTRY.items()}
#: Method name -> one-line summary (``botorch-ext methods``).
METHOD_SUMMARIES: dict[str, str] = {name: t for name, (_, t) in _REGISTRY.items()}

#: Methods that standardize their outcomes themselves (``outcome_transform`` must
#: be ``"standardize"``).
SVGP_METHODS: set[str] = set()
#: Methods that fit a model, and so honour ``MethodOptions``.
MODEL_BASED: set[str] = set()
#: Methods whose acquisition needs a Gaussian posterior (``outcome_transform``
#: must be ``"standardize"``): the entropy searches.
GAUSSIAN_POSTERIOR_METHODS: set[str] = set()
#: Methods that build a batch one point at a time (``optimize_acqf``'s
#: ``sequential=True``), which takes no ``batch_initial_conditions`` (so no
#: ``initial_conditions="bock"``).
SEQUENTIAL_METHODS: set[str] = set()


def _add_flags(name: str, method: Method) -> None:
    for flags, on in (
        (SVGP_METHODS, isinstance(method, SVGPMethod)),
        (MODEL_BASED, getattr(method, "model_based", True)),
        (GAUSSIAN_POSTERIOR_METHODS, getattr(method, "gaussian_posterior", False)),
        (SEQUENTIAL_METHODS, getattr(method, "sequential", False)),
    ):
        (flags.add if on else flags.discard)(name)


for _name, _method in METHODS.items():
    _add_flags(_name, _method)


def register_method(
    name: str, method: Method, summary: str | None = None, replace: bool = False
) -> Method:
    r"""Register a method under ``name`` for ``run_bo``, ``run_grid`` and the CLI.

    The extension point for methods outside the curated list (a research
    ablation, your own acquisition). Registration lasts for this process; for
    worker processes or Dask workers, name the method as ``module:attribute``
    instead (see the module docstring), which each worker resolves itself.

    Example:
        >>> from botorch.acquisition import qLogExpectedImprovement
        >>> from botorch_ext.runner.acquisition import acquisition_method
        >>> register_method("qlogei-plain", acquisition_method(qLogExpectedImprovement))

    Args:
        name: The method's name: non-empty, without commas (``--methods`` splits
            on them) or whitespace.
        method: A function with the method signature ``(train_X, train_Y,
            bounds, q, seed, options) -> q x d`` candidates, or an object with
            ``new_run()`` returning one (see the module docstring for the flags
            it may carry).
        summary: A one-line description for ``botorch-ext methods``; the first
            line of ``method``'s docstring if None.
        replace: Allow replacing a different method already under ``name``.

    Returns:
        ``method``.

    Raises:
        ValueError: For a bad ``name``, a ``method`` that is not callable, or a
            ``name`` already taken by another method without ``replace``.
    """
    if not isinstance(name, str) or not name or any(c in name for c in ", \t\n"):
        raise ValueError(
            f"method name must be a non-empty string without commas or "
            f"whitespace, got {name!r}"
        )
    if not callable(method):
        raise ValueError(
            f"method {name!r} must be callable (a function or an object with "
            f"new_run()), got a {type(method).__name__}"
        )
    if name in METHODS and METHODS[name] is not method and not replace:
        raise ValueError(
            f"method {name!r} is already registered; pass replace=True to replace it"
        )
    if summary is None:
        doc = (getattr(method, "__doc__", None) or "").strip()
        summary = doc.splitlines()[0] if doc else ""
    METHODS[name] = method
    METHOD_SUMMARIES[name] = summary
    _add_flags(name, method)
    return method


def _resolve(spec: str) -> Method:
    source, _, attribute = spec.partition(":")
    if not source or not attribute:
        raise ValueError(f"method {spec!r} must be a registered name or module:attr")
    try:
        target = importlib.import_module(source)
    except ImportError as e:
        raise ValueError(
            f"method {spec!r}: cannot import module {source!r} ({e}); is it on "
            "PYTHONPATH (on every worker, too)?"
        ) from e
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"method {spec!r}: {source!r} has no {attribute!r}")
        target = getattr(target, part)
    return register_method(spec, cast(Method, target))


def get_method(name: str) -> Method:
    r"""Look up a registered method.

    Example:
        >>> get_method("qlogei")
        >>> get_method("benchmarks.eulbo.ablations:eulbo_ei_joint_lbfgs")

    Args:
        name: A name in ``METHODS`` (``botorch-ext methods`` lists them), or
            ``module:attribute`` for a method defined in an importable module,
            which is then registered under that name.

    Returns:
        The method.

    Raises:
        ValueError: For an unknown name (with a pointer to ``botorch-ext
            methods``), or a ``module:attribute`` that cannot be imported or is
            not callable.
    """
    if name in METHODS:
        return METHODS[name]
    if isinstance(name, str) and ":" in name:
        return _resolve(name)
    raise ValueError(
        f"unknown method {name!r}; see `botorch-ext methods` for the list, or give "
        "module:attribute for your own"
    )
