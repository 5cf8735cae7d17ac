r"""Registry of optimization methods for the benchmark runner.

A method is an object with the protocol of ``botorch_ext.runner.protocol``: its
flags as attributes (``model_based``, ``sequential``, ``gaussian_posterior``,
``standardizes_outcomes``, ``carries_state``) and ``new_run()``, which makes a
run whose ``propose(train_X, train_Y, bounds, q, seed, options)`` returns a
``Proposal`` (the batch, the seconds spent fitting, the fitted model's
diagnostics).

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

A plain function ``(train_X, train_Y, bounds, q, seed, options) -> candidates``
is registered as a ``FunctionMethod`` (stateless, no fit time, no diagnostics).

Example:
    >>> from botorch_ext.runner.svgp import SVGPMethod
    >>> register_method("my-elbo-svgp", SVGPMethod(None, kernel=my_kernel))

The methods' parts live in modules of their own: ``protocol`` (``Method``,
``Proposal``, ``FunctionMethod``), ``options`` (``MethodOptions``, the
per-iteration seed), ``transforms`` (outcome transforms), ``kernels``
(covariance modules), ``fitting`` (MAP and SGMCMC fits), ``initial_conditions``
(BOCK's starting points), ``acquisition`` (the acquisition-function methods),
``turbo`` and ``svgp`` (the methods that carry state between iterations). This
module registers them.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

import torch
from botorch.acquisition.joint_entropy_search import qJointEntropySearch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.max_value_entropy_search import (
    qLowerBoundMaxValueEntropy,
    qMaxValueEntropy,
)
from botorch.acquisition.monte_carlo import (
    qProbabilityOfImprovement,
    qUpperConfidenceBound,
)
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from botorch_ext.acquisition import qES, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.eulbo.options import EULBOOptions
from botorch_ext.runner import acquisition, fitting, kernels, protocol, svgp, turbo
from botorch_ext.runner.acquisition import acquisition_method
from botorch_ext.runner.aliases import deprecated_aliases
from botorch_ext.runner.options import iteration_seed
from botorch_ext.runner.protocol import METHOD_FLAGS, FunctionMethod

if TYPE_CHECKING:
    # Not imported at run time: ``methods.MethodOptions`` is a deprecated alias.
    from botorch_ext.runner.options import MethodOptions

#: Names this module re-exported from their homes in 0.2.0: still
#: importable from here, with a ``DeprecationWarning``, until 0.3.0.
_MOVED = {
    **dict.fromkeys(
        ("SGMCMC_BUDGET_STEPS", "SGMCMC_DRAWS", "fit_model", "gp_diagnostics"),
        "botorch_ext.runner.fitting",
    ),
    **dict.fromkeys(
        ("INITIAL_CONDITIONS", "SPRAY_SCALES", "bock_initial_conditions"),
        "botorch_ext.runner.initial_conditions",
    ),
    **dict.fromkeys(
        ("BOCK_LINEAR_WEIGHT_FLOOR", "KERNELS", "svgp_ard_kernel"),
        "botorch_ext.runner.kernels",
    ),
    "Method": "botorch_ext.runner.protocol",
    "MethodOptions": "botorch_ext.runner.options",
    "OUTCOME_TRANSFORMS": "botorch_ext.runner.transforms",
    "SVGPMethod": "botorch_ext.runner.svgp",
    "TurboMethod": "botorch_ext.runner.turbo",
}
# Called from this module's own __getattr__: one frame more to the importer.
_moved = deprecated_aliases(__name__, _MOVED, stacklevel=3)

#: The former flag sets (now attributes of each method) -> the flag they hold.
_FLAG_SETS = {
    "SVGP_METHODS": "standardizes_outcomes",
    "MODEL_BASED": "model_based",
    "GAUSSIAN_POSTERIOR_METHODS": "gaussian_posterior",
    "SEQUENTIAL_METHODS": "sequential",
}


def __getattr__(name: str) -> object:
    r"""Serve the names that moved, and the former flag sets, with a warning."""
    flag = _FLAG_SETS.get(name)
    if flag is None:
        return _moved(name)
    warnings.warn(
        f"{__name__}.{name} is deprecated (removed in 0.3.0); read the flag "
        f"`{flag}` of get_method(name) instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return {n for n, m in METHODS.items() if getattr(m, flag)}


#: ``beta`` of the ``botorch-qucb`` baseline: the value of BoTorch's "Getting
#: started" example (``UpperConfidenceBound(gp, beta=0.1)``); BoTorch's input
#: constructor (Ax's default) would use 0.2, the runner's ``qucb`` sqrt(3).
BOTORCH_UCB_BETA = 0.1
#: Optimal samples (``get_optimal_samples``) per iteration of ``qjes``: the
#: default of BoTorch's input constructor (Ax's setting).
JES_NUM_OPTIMA = 64


def _random(
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor,
    q: int,
    seed: int,
    options: MethodOptions,
) -> Tensor:
    r"""Uniform random points (no model)."""
    gen = torch.Generator().manual_seed(iteration_seed(seed, train_X))
    U = torch.rand(q, bounds.shape[-1], generator=gen, dtype=bounds.dtype)
    return bounds[0] + U.to(bounds.device) * (bounds[1] - bounds[0])


def _sobol(
    train_X: Tensor,
    train_Y: Tensor,
    bounds: Tensor,
    q: int,
    seed: int,
    options: MethodOptions,
) -> Tensor:
    r"""One scrambled Sobol sequence per run (no model)."""
    # Continue one scrambled Sobol sequence across iterations: the points already
    # used are the first len(train_X) of the sequence with this seed.
    n = train_X.shape[0] + q
    X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=seed).squeeze(-2)
    return X[-q:]


_QLOGNEI = qLogNoisyExpectedImprovement

#: The user-facing methods: name -> (method, one-line summary). The SVGP methods
#: pin their kernel (``svgp_ard_kernel``), so a name keeps its model; the
#: ``*-authors`` ones use the kernel of the authors' loop (``preset="authors"``).
_REGISTRY: dict[str, tuple[protocol.Method, str]] = {
    "random": (
        FunctionMethod(_random, model_based=False),
        "uniform random points (no model)",
    ),
    "sobol": (
        FunctionMethod(_sobol, model_based=False),
        "one scrambled Sobol sequence per run (no model)",
    ),
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
        acquisition_method(qES, gaussian_posterior=True),
        "qES, q-entropy search with a softmax p_max (Wilson et al. 2017)",
    ),
    "bock": (
        # Its MAP fit and its acquisition's maximization stop at L-BFGS-B's
        # ftol BOCK_FIT_FTOL and BOCK_ACQF_FTOL (fewer evaluations).
        acquisition_method(
            _QLOGNEI,
            kernel="bock",
            fit_options={"ftol": fitting.BOCK_FIT_FTOL},
            acqf_options={"ftol": acquisition.BOCK_ACQF_FTOL, "factr": None},
        ),
        "qLogNEI with BOCK's kernel (BOCKKernel, Oh et al. 2018), MAP hyperparameters",
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
        svgp.SVGPMethod("ei", kernel=kernels.svgp_ard_kernel),
        "EULBO: SVGP fitted jointly with the EI proposal (Maus et al. 2024)",
    ),
    "eulbo-kg": (
        svgp.SVGPMethod("kg", kernel=kernels.svgp_ard_kernel),
        "EULBO with the KG utility (Maus et al. 2024)",
    ),
    "elbo-svgp": (
        svgp.SVGPMethod(None, kernel=kernels.svgp_ard_kernel),
        "SVGP fitted by its ELBO, then qLogEI (EULBO's baseline)",
    ),
    "eulbo-ei-authors": (
        svgp.SVGPMethod("ei", preset="authors"),
        "eulbo-ei as the authors' released code runs it (EULBOOptions.authors)",
    ),
    "elbo-svgp-authors": (
        svgp.SVGPMethod(None, preset="authors"),
        "the authors' ELBO baseline: early-stopped Adam fit, qEI with noise",
    ),
    # Long TuRBO runs in many dimensions: the bounded searches of
    # EULBOOptions.turbo() (several times cheaper a step, BO results level).
    "turbo-eulbo-ei": (
        svgp.SVGPMethod(
            "ei",
            turbo=True,
            kernel=kernels.svgp_ard_kernel,
            options=EULBOOptions.turbo(),
        ),
        "eulbo-ei in a TuRBO trust region, bounded searches (Maus et al. 2024)",
    ),
    "turbo-elbo-svgp": (
        svgp.SVGPMethod(
            None,
            turbo=True,
            kernel=kernels.svgp_ard_kernel,
            options=EULBOOptions.turbo(),
        ),
        "elbo-svgp in a TuRBO trust region, bounded searches",
    ),
    "turbo": (
        turbo.TurboMethod(),
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
        acquisition_method(
            qJointEntropySearch,
            late_kwargs=lambda: {"num_optima": JES_NUM_OPTIMA},
            gaussian_posterior=True,
        ),
        "BoTorch's qJointEntropySearch",
    ),
    "qmes": (
        acquisition_method(qMaxValueEntropy, sequential=True, gaussian_posterior=True),
        "BoTorch's qMaxValueEntropy (batches built point by point)",
    ),
    "gibbon": (
        acquisition_method(
            qLowerBoundMaxValueEntropy,
            constructor_class=qMaxValueEntropy,
            sequential=True,
            gaussian_posterior=True,
        ),
        "BoTorch's GIBBON, qLowerBoundMaxValueEntropy",
    ),
}

#: Method name -> method, the user-facing methods, then any registered with
#: ``register_method`` or resolved from ``module:attribute``.
METHODS: dict[str, protocol.Method] = {name: m for name, (m, _) in _REGISTRY.items()}
#: Method name -> one-line summary (``botorch-ext methods``).
METHOD_SUMMARIES: dict[str, str] = {name: t for name, (_, t) in _REGISTRY.items()}


def as_method(name: str, method: object) -> protocol.Method:
    r"""``method`` as a runner method: itself, or a plain function wrapped.

    A function ``(train_X, train_Y, bounds, q, seed, options) -> candidates``
    becomes a ``FunctionMethod``, whose flags are read from the function's
    attributes of the same names where it has them (the former way to flag a
    method; ``model_based`` defaults to True, the others to False).

    Args:
        name: The name it is registered under (for the error message).
        method: A method (``new_run()`` and the flags of ``METHOD_FLAGS``) or a
            function.

    Returns:
        The method.

    Raises:
        ValueError: For an object that is neither, a method that lacks a flag,
            or a class (give an instance: a class has ``new_run`` and the flags
            as attributes too, but ``new_run`` needs ``self``).
    """
    if isinstance(method, type):
        raise ValueError(
            f"method {name!r} is the class {method.__name__}; give an instance, "
            f"e.g. {method.__name__}()"
        )
    if isinstance(method, protocol.Method):
        return method
    if hasattr(method, "new_run"):
        missing = [flag for flag in METHOD_FLAGS if not hasattr(method, flag)]
        raise ValueError(
            f"method {name!r} lacks the flags {', '.join(missing)} (attributes "
            "of a method; see botorch_ext.runner.protocol)"
        )
    if not callable(method):
        raise ValueError(
            f"method {name!r} must be callable (a function or an object with "
            f"new_run()), got a {type(method).__name__}"
        )
    return FunctionMethod(
        method,
        model_based=getattr(method, "model_based", True),
        sequential=getattr(method, "sequential", False),
        gaussian_posterior=getattr(method, "gaussian_posterior", False),
    )


def _same(registered: protocol.Method, method: object) -> bool:
    # The method itself, or the wrapper registered for the same function.
    wrapped = isinstance(registered, FunctionMethod) and registered.function is method
    return registered is method or wrapped


def register_method(
    name: str, method: object, summary: str | None = None, replace: bool = False
) -> protocol.Method:
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
        method: An object with the method protocol (``new_run()`` and the flags,
            see ``botorch_ext.runner.protocol``), or a function with the
            signature ``(train_X, train_Y, bounds, q, seed, options) -> q x d``
            candidates (registered as a ``FunctionMethod``).
        summary: A one-line description for ``botorch-ext methods``; the first
            line of ``method``'s docstring if None.
        replace: Allow replacing a different method already under ``name``.

    Returns:
        The registered method (``method``, or its ``FunctionMethod``).

    Raises:
        ValueError: For a bad ``name``, a ``method`` that is neither a method
            nor a function, or a ``name`` already taken by another method
            without ``replace``.
    """
    if not isinstance(name, str) or not name or any(c in name for c in ", \t\n"):
        raise ValueError(
            f"method name must be a non-empty string without commas or "
            f"whitespace, got {name!r}"
        )
    registered = METHODS.get(name)
    if registered is not None and _same(registered, method):
        return registered
    if registered is not None and not replace:
        raise ValueError(
            f"method {name!r} is already registered; pass replace=True to replace it"
        )
    resolved = as_method(name, method)
    if summary is None:
        doc = (getattr(method, "__doc__", None) or "").strip()
        summary = doc.splitlines()[0] if doc else ""
    METHODS[name] = resolved
    METHOD_SUMMARIES[name] = summary
    return resolved


def _resolve(spec: str) -> protocol.Method:
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
    except Exception as e:  # the module's own code may raise anything
        raise ValueError(
            f"method {spec!r}: importing module {source!r} raised "
            f"{type(e).__name__}: {' '.join(str(e).split())}"
        ) from e
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"method {spec!r}: {source!r} has no {attribute!r}")
        target = getattr(target, part)
    return register_method(spec, target)


def get_method(name: str) -> protocol.Method:
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
