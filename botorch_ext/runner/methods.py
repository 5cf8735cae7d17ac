r"""Registry of optimization methods for the benchmark runner.

A method is one function from ``(train_X, train_Y, bounds, q, seed, options)`` to a
``q x d`` tensor of candidates in ``bounds``; ``train_Y`` is in BoTorch's
maximization sign and ``seed`` is the run's seed (methods derive per-iteration
seeds from it and ``len(train_X)``, so a run is reproducible from its seed).
Registering a function in ``METHODS`` is all it takes to add a method to
``botorch-ext run`` and ``compare``. A method may report, after each call, a
``diagnostics`` dict (the fitted model's state, written to the ``model_*``
columns) and a ``timings`` dict whose ``"fit_seconds"`` is the part of the call
spent fitting the model (the runner counts the rest as acquisition time; for the
EULBO methods, which fit the SVGP jointly with the proposal, only setting up the
model counts as fitting).

The methods' parts live in modules of their own: ``options`` (``MethodOptions``,
the signature, the per-iteration seed), ``transforms`` (outcome transforms),
``kernels`` (covariance modules), ``fitting`` (MAP and SGMCMC fits),
``initial_conditions`` (BOCK's starting points), ``acquisition`` (the
acquisition-function methods), ``turbo`` and ``svgp`` (the methods that carry
state between iterations). This module registers them and re-exports their
public names.
"""

from __future__ import annotations

import math

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
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.priors import GammaPrior, LogNormalPrior
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
from botorch_ext.runner.kernels import BOCK_LINEAR_WEIGHT_FLOOR, KERNELS
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


def _authors_kernel(d: int) -> ScaleKernel:
    return ScaleKernel(RBFKernel())


def _scaled_ard_kernel(d: int) -> ScaleKernel:
    return ScaleKernel(RBFKernel(ard_num_dims=d))


def _iso_prior_kernel(d: int) -> RBFKernel:
    # BoTorch's default kernel with one shared lengthscale: its dimension-scaled
    # LogNormal prior for `d` inputs [Hvarfner2024vanilla]_, started at the
    # prior's mode, the 0.025 floor enforced by a softplus so Adam keeps it.
    prior = LogNormalPrior(loc=math.sqrt(2) + 0.5 * math.log(d), scale=math.sqrt(3))
    kernel = RBFKernel(
        lengthscale_prior=prior, lengthscale_constraint=GreaterThan(2.5e-2)
    )
    kernel.lengthscale = prior.mode
    return kernel


def _iso_prior_scaled_kernel(d: int) -> ScaleKernel:
    # The same with a learned amplitude (the Gamma(2, 0.15) outputscale prior of
    # the runner's `matern-scaled`): without one, the isotropic lengthscale of
    # the m = 100 ELBO drifts to 0.6 on Hartmann6 (README 7.10).
    return ScaleKernel(_iso_prior_kernel(d), outputscale_prior=GammaPrior(2.0, 0.15))


METHODS: dict[str, Method] = {
    "random": _random,
    "sobol": _sobol,
    "qlogei": acquisition_method(qLogNoisyExpectedImprovement),
    "qucb": acquisition_method(qUCB),
    "qsoftpi": acquisition_method(qSoftPI),
    "qlogsoftpi": acquisition_method(qLogSoftPI),
    "qes": acquisition_method(qES),
    # The BOCK comparison: qLogNEI on a SingleTaskGP whose kernel is the only change.
    "bock": acquisition_method(qLogNoisyExpectedImprovement, kernel="bock"),
    "bock-continuous": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-continuous"
    ),
    "bock-direction": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-direction"
    ),
    "bock-scaled": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-scaled"
    ),
    "matern": acquisition_method(qLogNoisyExpectedImprovement, kernel="matern"),
    "matern-scaled": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="matern-scaled"
    ),
    "gpytorch-cylindrical": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="gpytorch-cylindrical"
    ),
    # BOCK with its hyperparameters averaged over SGLD draws [Coullon2023mamba]_,
    # as the BOCK paper averaged over slice-sampling draws.
    "bock-sgmcmc": acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock", fully_bayesian=True
    ),
    # Approximation-aware BO [Maus2024eulbo]_ and its ELBO-SVGP baseline.
    "eulbo-ei": SVGPMethod("ei"),
    "eulbo-kg": SVGPMethod("kg"),
    "elbo-svgp": SVGPMethod(None),
    "turbo-eulbo-ei": SVGPMethod("ei", turbo=True),
    "turbo-elbo-svgp": SVGPMethod(None, turbo=True),
    # The same with the ELBO fitted to convergence by L-BFGS on the collapsed
    # bound (`EULBOOptions(elbo_optimizer="lbfgs")`; issue 12's gap study).
    "eulbo-ei-lbfgs": SVGPMethod("ei", eulbo_options={"elbo_optimizer": "lbfgs"}),
    "elbo-svgp-lbfgs": SVGPMethod(None, eulbo_options={"elbo_optimizer": "lbfgs"}),
    # The kernel of the authors' code (an isotropic RBF with an outputscale,
    # GPyTorch's defaults, no priors) in place of BoTorch's ARD default: with
    # m = 100 the ELBO switches off input dimensions of the ARD kernel
    # (benchmarks/README.md, 7.9); and its ARD version, to tell the two apart.
    "elbo-svgp-iso": SVGPMethod(None, kernel=_authors_kernel),
    "eulbo-ei-iso": SVGPMethod("ei", kernel=_authors_kernel),
    "eulbo-kg-iso": SVGPMethod("kg", kernel=_authors_kernel),
    "elbo-svgp-ard-scaled": SVGPMethod(None, kernel=_scaled_ard_kernel),
    "turbo-elbo-svgp-iso": SVGPMethod(None, turbo=True, kernel=_authors_kernel),
    # An isotropic kernel that keeps BoTorch's dimension-scaled lengthscale
    # prior: the authors' kernel fits a constant plus noise on the 60-D rover
    # (README 7.9); is a prior enough to keep isotropy safe there (7.10)?
    "elbo-svgp-iso-prior": SVGPMethod(None, kernel=_iso_prior_kernel),
    "eulbo-ei-iso-prior": SVGPMethod("ei", kernel=_iso_prior_kernel),
    "turbo-elbo-svgp-iso-prior": SVGPMethod(None, turbo=True, kernel=_iso_prior_kernel),
    "elbo-svgp-iso-prior-scaled": SVGPMethod(None, kernel=_iso_prior_scaled_kernel),
    "turbo-elbo-svgp-iso-prior-scaled": SVGPMethod(
        None, turbo=True, kernel=_iso_prior_scaled_kernel
    ),
    # EULBO with its joint phase solved by full-batch L-BFGS-B instead of
    # minibatch Adam (`EULBOOptions(joint_optimizer="lbfgs")`): from the
    # converged ELBO fit the Adam phase returns its warm start unchanged
    # (benchmarks/README.md, 7.8).
    "eulbo-ei-joint-lbfgs": SVGPMethod(
        "ei", eulbo_options={"elbo_optimizer": "lbfgs", "joint_optimizer": "lbfgs"}
    ),
    # Ablation of the rover comparison (README 7.8): TuRBO-EULBO with the Adam
    # fit of the runs in 7.7 and the utility's weight in the w-steps set to 0,
    # so the joint phase keeps fitting the ELBO and moving x, but the utility no
    # longer shapes w; and the same pipeline's EULBO and ELBO, for reference.
    "turbo-eulbo-ei-w0": SVGPMethod(
        "ei",
        turbo=True,
        eulbo_options={"elbo_optimizer": "adam"},
        model_kwargs={"utility_weight": 0.0},
    ),
    "turbo-eulbo-ei-adam": SVGPMethod(
        "ei", turbo=True, eulbo_options={"elbo_optimizer": "adam"}
    ),
    "turbo-elbo-svgp-adam": SVGPMethod(
        None, turbo=True, eulbo_options={"elbo_optimizer": "adam"}
    ),
    # TuRBO with an exact GP, the baseline of the TuRBO comparisons.
    "turbo": TurboMethod(),
    # BoTorch's own acquisition functions on the same model and optimizer
    # settings as `qlogei`, each built by BoTorch's registered input
    # constructor (as Ax builds them), for fair comparisons.
    "botorch-qucb": acquisition_method(qUpperConfidenceBound, beta=BOTORCH_UCB_BETA),
    "botorch-qpi": acquisition_method(qProbabilityOfImprovement),
    "qjes": acquisition_method(
        qJointEntropySearch, late_kwargs=lambda: {"num_optima": JES_NUM_OPTIMA}
    ),
    # Max-values from 1000 uniform candidates (the constructor's default).
    "qmes": acquisition_method(qMaxValueEntropy, sequential=True),
    "gibbon": acquisition_method(
        qLowerBoundMaxValueEntropy,
        constructor_class=qMaxValueEntropy,
        sequential=True,
    ),
}

#: Methods that standardize their outcomes themselves (``outcome_transform`` must
#: be ``"standardize"``).
SVGP_METHODS = frozenset(k for k, v in METHODS.items() if isinstance(v, SVGPMethod))

#: Methods that fit a model, and so honour ``MethodOptions``.
MODEL_BASED = frozenset(METHODS) - {"random", "sobol"}

#: Methods whose acquisition needs a Gaussian posterior (``outcome_transform``
#: must be ``"standardize"``): the entropy searches.
GAUSSIAN_POSTERIOR_METHODS = frozenset({"qes", "qjes", "qmes", "gibbon"})

#: Methods that build a batch one point at a time (``optimize_acqf``'s
#: ``sequential=True``), which takes no ``batch_initial_conditions`` (so no
#: ``initial_conditions="bock"``).
SEQUENTIAL_METHODS = frozenset(
    k for k, v in METHODS.items() if getattr(v, "sequential", False)
)


def get_method(name: str) -> Method:
    r"""Look up a registered method.

    Args:
        name: One of ``METHODS``.

    Returns:
        The method function.

    Raises:
        ValueError: For an unknown name, listing the valid ones.
    """
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return METHODS[name]
