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
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.acquisition import (
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qLowerBoundMaxValueEntropy,
    qMaxValueEntropy,
    qProbabilityOfImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.joint_entropy_search import qJointEntropySearch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import AffineInputTransform, InputTransform
from botorch.models.transforms.outcome import (
    Bilog,
    ChainedOutcomeTransform,
    Log,
    OutcomeTransform,
    Standardize,
)
from botorch.optim import optimize_acqf
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import CylindricalKernel as GPyTorchCylindricalKernel
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior
from torch import Tensor

from botorch_ext.acquisition import qES, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.kernels import CylindricalKernel
from botorch_ext.models import EULBOModel, EULBOOptions
from botorch_ext.optim import TurboState, ignore_optimize_acqf_retry_warnings
from botorch_ext.runner.transforms import Negate
from botorch_ext.sgmcmc import (
    SGMCMCFullyBayesianSingleTaskGP,
    fit_fully_bayesian_model_sgmcmc,
)

OUTCOME_TRANSFORMS = ("standardize", "bilog", "log")
INITIAL_CONDITIONS = ("botorch", "bock")
#: Hyperparameter draws per BO iteration of ``bock-sgmcmc`` (BoTorch's SAAS
#: default keeps 16 NUTS draws too).
SGMCMC_DRAWS = 16
#: MAMBA's budget ``R`` for ``bock-sgmcmc``, in SGLD iterations of the winning
#: arm (thinned by 5 for the KSD and the draws); about 10 s per BO iteration.
SGMCMC_BUDGET_STEPS = 150
# Scales of the Gaussian sprays around the incumbent, as fractions of the box.
SPRAY_SCALES = (1e-3, 1e-2, 1e-1)
#: ``beta`` of the ``botorch-qucb`` baseline: the value of BoTorch's "Getting
#: started" example (``UpperConfidenceBound(gp, beta=0.1)``); BoTorch's input
#: constructor (Ax's default) would use 0.2, the runner's ``qucb`` sqrt(3).
BOTORCH_UCB_BETA = 0.1
#: Optimal samples (``get_optimal_samples``) per iteration of ``qjes``: the
#: default of BoTorch's input constructor (Ax's setting).
JES_NUM_OPTIMA = 64


@dataclass(frozen=True)
class MethodOptions:
    r"""Settings shared by the model-based methods.

    Args:
        outcome_transform: ``"standardize"``, ``"bilog"`` (BoTorch's ``Bilog``
            chained with ``Standardize``) or ``"log"`` (BoTorch's ``Log`` of the
            minimization-sign objective ``f``, chained with ``Standardize``; needs
            ``f > 0``), applied to the training outcomes.
        num_restarts: ``optimize_acqf`` restarts.
        raw_samples: ``optimize_acqf`` raw samples for the initial conditions.
        initial_conditions: How ``optimize_acqf``'s starting points are chosen:
            ``"botorch"`` (its default heuristic on ``raw_samples`` Sobol points)
            or ``"bock"``, the candidate scheme of [Oh2018bock]: the acquisition
            is evaluated on ``raw_samples`` fresh Sobol points plus
            ``raw_samples / 10`` sprays around the incumbent, and the best
            ``num_restarts`` are refined by gradient ascent (L-BFGS-B here, Adam
            in the paper). The paper used 20,000 points and 20 restarts.
        num_inducing_points: Inducing points of the SVGP methods (``eulbo-*``,
            ``elbo-svgp``, ``turbo-*``); 100 in [Maus2024eulbo].
    """

    outcome_transform: str = "standardize"
    num_restarts: int = 10
    raw_samples: int = 512
    initial_conditions: str = "botorch"
    num_inducing_points: int = 100


Method = Callable[[Tensor, Tensor, Tensor, int, int, MethodOptions], Tensor]


def _outcome_transform(name: str) -> OutcomeTransform:
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


#: Floor on BOCK's linear angular weight ``c_1`` in the runner's ``bock``: MAP
#: fits collapse the weights onto ``c = e_0`` (a radius-only model, blind to
#: direction), and 0.05 is the value the issue-13 study tried on Rosenbrock-100.
BOCK_LINEAR_WEIGHT_FLOOR = 0.05


def _bock_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # The continuous center rule with a floor on the linear (local gradient)
    # term (benchmarks/README.md section 6.7).
    return CylindricalKernel(
        center_rule="continuous",
        angular_weights_floor=[0.0, BOCK_LINEAR_WEIGHT_FLOOR, 0.0, 0.0],
    ), None


def _bock_continuous_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    return CylindricalKernel(center_rule="continuous"), None


def _bock_direction_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # The center rule of botorch_ext 0.x, kept for comparison.
    return CylindricalKernel(center_rule="direction"), None


def _bock_scaled_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # BOCK with a learned amplitude, as in the authors' code (their radius
    # kernel carries one).
    return ScaleKernel(_bock_kernel(d)[0]), None


def _matern_scaled_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # The runner's `matern` with a learned amplitude, under the outputscale prior
    # of BoTorch's former default covariance (Gamma(2, 0.15)): the stronger
    # Matern baseline (issue 13).
    kernel, _ = _matern_kernel(d)
    return ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15)), None


def _matern_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # BoTorch's default covariance (dimension-scaled lengthscale prior, no
    # outputscale on standardized outcomes) made isotropic and Matern-5/2: the
    # paper's "Matern" baseline is a non-ARD Matern-5/2.
    prior = LogNormalPrior(loc=math.sqrt(2) + 0.5 * math.log(d), scale=math.sqrt(3))
    kernel = MaternKernel(
        nu=2.5,
        lengthscale_prior=prior,
        lengthscale_constraint=GreaterThan(
            2.5e-2, transform=None, initial_value=prior.mode
        ),
    )
    return kernel, None


def _gpytorch_cylindrical_kernel(d: int) -> tuple[Kernel, InputTransform | None]:
    # GPyTorch's kernel needs inputs inside its unit ball, which it checks
    # strictly: map the cube's circumscribed ball (radius sqrt(d) / 2 about the
    # cube's center) into it, with a little slack for rounding at the corners.
    kernel = GPyTorchCylindricalKernel(
        num_angular_weights=4, radial_base_kernel=MaternKernel(nu=2.5)
    )
    to_ball = AffineInputTransform(
        d=d,
        coefficient=torch.full((d,), math.sqrt(d) / 2 * (1 + 1e-6)),
        offset=torch.full((d,), 0.5),
    )
    return kernel, to_ball


#: Covariance modules for ``fit_model``: name -> (covar_module, input_transform)
#: for ``d``-dimensional inputs in the unit cube; ``"default"`` is BoTorch's.
KERNELS: dict[str, Callable[[int], tuple[Kernel, InputTransform | None]]] = {
    "bock": _bock_kernel,
    "bock-continuous": _bock_continuous_kernel,
    "bock-direction": _bock_direction_kernel,
    "bock-scaled": _bock_scaled_kernel,
    "matern": _matern_kernel,
    "matern-scaled": _matern_scaled_kernel,
    "gpytorch-cylindrical": _gpytorch_cylindrical_kernel,
}


def fit_model(
    train_X: Tensor,
    train_Y: Tensor,
    options: MethodOptions,
    kernel: str | Kernel = "default",
    fully_bayesian: bool = False,
    seed: int = 0,
) -> SingleTaskGP:
    r"""Fit a ``SingleTaskGP`` by maximizing the marginal likelihood (MAP) with
    ``fit_gpytorch_mll``, or sample its hyperparameters by MAMBA-tuned SGLD.

    Args:
        train_X: ``n x d`` inputs in the unit cube.
        train_Y: ``n x 1`` outcomes (maximization sign).
        options: The method options (outcome transform).
        kernel: ``"default"`` for BoTorch's default covariance (ARD RBF with
            dimension-scaled priors), a name in ``KERNELS``, or a GPyTorch kernel
            instance (for variants; used as is, without input transform).
            Everything else (likelihood, outcome transform, fitting) is the same
            for all kernels.
        fully_bayesian: Sample the hyperparameters instead
            (``fit_fully_bayesian_model_sgmcmc`` from the MAP, ``SGMCMC_DRAWS``
            draws, an SGLD step-size grid tuned by MAMBA with a budget of
            ``SGMCMC_BUDGET_STEPS`` iterations, so runs stay reproducible).
        seed: Seeds the sampler (fully Bayesian only).

    Returns:
        The fitted model, in eval mode.
    """
    covar_module, input_transform = None, None
    if isinstance(kernel, Kernel):
        covar_module = kernel
    elif kernel != "default":
        if kernel not in KERNELS:
            choices = ", ".join(["default", *KERNELS])
            raise ValueError(f"unknown kernel {kernel!r}; choose from {choices}")
        covar_module, input_transform = KERNELS[kernel](train_X.shape[-1])
    model_class = SGMCMCFullyBayesianSingleTaskGP if fully_bayesian else SingleTaskGP
    model = model_class(
        train_X,
        train_Y,
        covar_module=covar_module,
        input_transform=input_transform,
        outcome_transform=_outcome_transform(options.outcome_transform),
    )
    if fully_bayesian:
        fit_fully_bayesian_model_sgmcmc(
            model,
            num_samples=SGMCMC_DRAWS,
            budget=SGMCMC_BUDGET_STEPS,
            budget_unit="steps",
            thin=5,
            generator=torch.Generator().manual_seed(seed),
        )
    else:
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def _iteration_seed(seed: int, train_X: Tensor) -> int:
    return seed * 100_003 + train_X.shape[0]


def _random(train_X, train_Y, bounds, q, seed, options) -> Tensor:
    gen = torch.Generator().manual_seed(_iteration_seed(seed, train_X))
    U = torch.rand(q, bounds.shape[-1], generator=gen, dtype=bounds.dtype)
    return bounds[0] + U * (bounds[1] - bounds[0])


def _sobol(train_X, train_Y, bounds, q, seed, options) -> Tensor:
    # Continue one scrambled Sobol sequence across iterations: the points already
    # used are the first len(train_X) of the sequence with this seed.
    n = train_X.shape[0] + q
    X = draw_sobol_samples(bounds=bounds, n=n, q=1, seed=seed).squeeze(-2)
    return X[-q:]


def bock_initial_conditions(
    acqf,
    bounds: Tensor,
    q: int,
    train_X: Tensor,
    train_Y: Tensor,
    options: MethodOptions,
    seed: int,
    batch_size: int = 512,
) -> Tensor:
    r"""Starting points for ``optimize_acqf`` by the candidate scheme of [Oh2018bock].

    Scores ``raw_samples`` fresh scrambled Sobol q-batches plus ``raw_samples / 10``
    q-batches of Gaussian sprays around the incumbent (the best observed point;
    scales ``SPRAY_SCALES`` times the box width, cycled, clamped to the box) and
    returns the ``num_restarts`` best. Unlike BoTorch's ``sample_around_best``,
    the incumbent is taken from the observations, so it works with outcome
    transforms whose posterior has no closed-form mean (``Bilog``).

    Example:
        >>> ics = bock_initial_conditions(acqf, bounds, 1, X, Y, options, seed=0)
        >>> optimize_acqf(acqf, bounds, q=1, num_restarts=len(ics),
        ...               batch_initial_conditions=ics)

    Args:
        acqf: The acquisition function.
        bounds: ``2 x d`` box.
        q: Batch size.
        train_X: ``n x d`` training inputs.
        train_Y: ``n x 1`` training outcomes (maximization sign).
        options: Supplies ``raw_samples`` and ``num_restarts``.
        seed: Seed of the Sobol points and the sprays.
        batch_size: Number of q-batches scored per acquisition call.

    Returns:
        A ``num_restarts x q x d`` tensor.
    """
    sobol = draw_sobol_samples(bounds=bounds, n=options.raw_samples, q=q, seed=seed)
    n_spray = max(options.raw_samples // 10, 1)
    gen = torch.Generator().manual_seed(seed)
    best = train_X[train_Y.squeeze(-1).argmax()]
    scales = torch.tensor(SPRAY_SCALES, dtype=bounds.dtype)
    scale = scales[torch.arange(n_spray * q) % len(scales)].reshape(n_spray, q, 1)
    noise = torch.randn(n_spray, q, bounds.shape[-1], generator=gen, dtype=bounds.dtype)
    spray = best + noise * scale * (bounds[1] - bounds[0])
    spray = torch.maximum(torch.minimum(spray, bounds[1]), bounds[0])
    raw = torch.cat([sobol, spray.to(sobol)])
    with torch.no_grad():
        values = torch.cat([acqf(X_) for X_ in raw.split(batch_size)])
    top = values.topk(min(options.num_restarts, len(values))).indices
    return raw[top]


def _acquisition_method(
    acqf_class,
    kernel: str = "default",
    fully_bayesian: bool = False,
    constructor_class=None,
    sequential: bool = False,
    late_kwargs: Callable[[], dict] | None = None,
    **constructor_kwargs,
) -> Method:
    # `constructor_class`: whose registered input constructor builds the
    # arguments (GIBBON has none of its own and takes qMES's). `sequential`:
    # the acquisition scores one point at a time, so a batch is built greedily
    # with the earlier points pending (as BoTorch's MES and GIBBON tutorials do).
    # `late_kwargs`: constructor arguments read at each call, from module
    # constants that tests shorten.
    constructor = get_acqf_input_constructor(constructor_class or acqf_class)

    def method(train_X, train_Y, bounds, q, seed, options) -> Tensor:
        seed_i = _iteration_seed(seed, train_X)
        torch.manual_seed(seed_i)
        tic = time.monotonic()
        model = fit_model(
            train_X,
            train_Y,
            options,
            kernel=kernel,
            fully_bayesian=fully_bayesian,
            seed=seed_i,
        )
        method.timings = {"fit_seconds": time.monotonic() - tic}
        data = SupervisedDataset(
            train_X,
            train_Y,
            feature_names=[f"x{i}" for i in range(train_X.shape[-1])],
            outcome_names=["y"],
        )
        pairs = list(zip(bounds[0].tolist(), bounds[1].tolist(), strict=True))
        kwargs = constructor(
            model=model,
            training_data=data,
            bounds=pairs,
            **constructor_kwargs,
            **(late_kwargs() if late_kwargs is not None else {}),
        )
        acqf = acqf_class(**kwargs)
        kwargs = {"raw_samples": options.raw_samples, "sequential": sequential}
        if options.initial_conditions == "bock":
            kwargs = {
                "batch_initial_conditions": bock_initial_conditions(
                    acqf, bounds, q, train_X, train_Y, options, seed_i
                )
            }
        elif options.initial_conditions != "botorch":
            choices = ", ".join(INITIAL_CONDITIONS)
            raise ValueError(
                f"unknown initial conditions {options.initial_conditions!r}; "
                f"choose from {choices}"
            )
        with warnings.catch_warnings():
            # L-BFGS-B's occasional "ABNORMAL" line-search exits are retried by
            # optimize_acqf itself; they are not worth a warning per iteration.
            warnings.simplefilter("ignore", OptimizationWarning)
            ignore_optimize_acqf_retry_warnings()
            candidates, _ = optimize_acqf(
                acqf, bounds=bounds, q=q, num_restarts=options.num_restarts, **kwargs
            )
        method.diagnostics = gp_diagnostics(model)
        return candidates.detach()

    method.diagnostics = {}
    method.timings = {}
    method.sequential = sequential
    return method


def gp_diagnostics(model) -> dict:
    r"""The fitted noise variance and lengthscales of a (batched) exact GP.

    Averages over a batch of hyperparameter draws (fully Bayesian models). The
    lengthscale is the first one found among the covariance's modules (for BOCK,
    that of its radius kernel); a ``CylindricalKernel`` also reports its angular
    weights ``c_0..c_P`` and its warp ``(alpha, beta)``.

    Args:
        model: A fitted ``SingleTaskGP``.

    Returns:
        ``{"noise": float, "lengthscales": list or None}``, plus
        ``"angular_weights"`` and ``"warp"`` (lists) for BOCK.
    """
    out = {}
    with torch.no_grad():
        out["noise"] = model.likelihood.noise.mean().item()
        out["lengthscales"] = None
        for module in model.covar_module.modules():
            value = getattr(module, "lengthscale", None)
            if isinstance(value, Tensor):
                ls = value.reshape(-1, value.shape[-1]).mean(0)
                out["lengthscales"] = ls.tolist()
                break
        for module in model.covar_module.modules():
            if isinstance(module, CylindricalKernel):
                c = module.angular_weights
                out["angular_weights"] = c.reshape(-1, c.shape[-1]).mean(0).tolist()
                out["warp"] = [module.alpha.mean().item(), module.beta.mean().item()]
                break
    return out


def _maximize_qlogei(model, train_Y, region, q, options) -> Tensor:
    r"""``q`` maximizers of qLogEI (incumbent ``train_Y.max()``) in ``region``."""
    acqf = qLogExpectedImprovement(model, best_f=train_Y.max())
    candidates, _ = optimize_acqf(
        acqf,
        bounds=region,
        q=q,
        num_restarts=options.num_restarts,
        raw_samples=options.raw_samples,
    )
    return candidates


class _TrustRegion:
    r"""Run state of a TuRBO method: the ``TurboState`` and the rows seen."""

    def __init__(self) -> None:
        self.state: TurboState | None = None
        self.n_seen = 0

    def _trust_region(self, train_X, train_Y, bounds, q, lengthscale) -> Tensor:
        if self.state is None:
            self.state = TurboState(dim=train_X.shape[-1], batch_size=q)
            self.state.update(train_Y)
        elif train_Y.shape[0] > self.n_seen:
            self.state.update(train_Y[self.n_seen :])
        if self.state.restart_triggered:
            best = self.state.best_value
            self.state = TurboState(dim=train_X.shape[-1], batch_size=q)
            self.state.best_value = best
        x_best = train_X[train_Y.squeeze(-1).argmax()]
        # The box lives in the unit cube; map it into the problem's bounds.
        unit = self.state.bounds(
            (x_best - bounds[0]) / (bounds[1] - bounds[0]), lengthscale=lengthscale
        ).to(bounds)
        return bounds[0] + unit * (bounds[1] - bounds[0])


class SVGPMethod:
    r"""The SVGP methods of [Maus2024eulbo]: EULBO or ELBO fitting, optionally in
    a TuRBO trust region.

    A registered object, not a plain function, because these methods carry state
    from one BO iteration to the next: ``new_run()`` returns a fresh callable per
    run (``run_bo`` asks for one), which keeps the previous iteration's model and
    the ``TurboState``. As in Algorithm 1 (Appendix A) of the paper, each
    iteration's SVGP starts from the previous iteration's ``w`` (inducing
    points, ``q(u)``, hyperparameters; ``EULBOModel.carry_over``), so the new
    observations enter through the ELBO; the first iteration's ``q(u)`` starts
    at its closed-form optimum. Fits stop by ``EULBOOptions``'s default rule
    (bounded steps, converged on a fixed check set). A collapsed trust region
    restarts at its initial length (the data and the model state are kept).
    After each call, ``diagnostics`` holds the fitted noise, lengthscales, ELBO
    and (for EULBO) the utility term, which the runner writes into every row
    of the iteration.

    Args:
        utility: ``"ei"`` or ``"kg"`` for ``optimize_eulbo``; ``None`` for the
            ELBO baseline (``fit_elbo``, then ``qLogExpectedImprovement`` under
            the SVGP).
        turbo: Restrict proposals to a TuRBO trust region.
    """

    def __init__(self, utility: str | None, turbo: bool = False) -> None:
        self.utility = utility
        self.turbo = turbo

    def new_run(self) -> Method:
        return _SVGPRun(self.utility, self.turbo)

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        # Without run state (a direct call), behave as the first iteration.
        return self.new_run()(train_X, train_Y, bounds, q, seed, options)


class _SVGPRun(_TrustRegion):
    def __init__(self, utility: str | None, turbo: bool) -> None:
        super().__init__()
        self.utility = utility
        self.turbo = turbo
        self.previous: EULBOModel | None = None
        self.diagnostics: dict = {}
        self.timings: dict = {}

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        seed_i = _iteration_seed(seed, train_X)
        torch.manual_seed(seed_i)
        tic = time.monotonic()
        if self.previous is None:
            model = EULBOModel(
                train_X,
                train_Y,
                num_inducing_points=options.num_inducing_points,
                options=EULBOOptions(
                    num_restarts=options.num_restarts, raw_samples=options.raw_samples
                ),
            )
        else:
            model = self.previous.carry_over(train_X, train_Y)
        region = bounds
        if self.turbo:
            # The box's lengthscales come from the previous fit (or the prior's
            # start at the first iteration), as in the TuRBO tutorial.
            region = self._trust_region(
                train_X, train_Y, bounds, q, model.model.covar_module.lengthscale
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            ignore_optimize_acqf_retry_warnings()
            if self.utility is None:
                model.fit_elbo(seed=seed_i)
                self.timings = {"fit_seconds": time.monotonic() - tic}
                candidates = _maximize_qlogei(model, train_Y, region, q, options)
            else:
                # EULBO fits the SVGP jointly with the proposal: only setting up
                # the model counts as fitting, the joint optimization as
                # acquisition.
                self.timings = {"fit_seconds": time.monotonic() - tic}
                candidates, _ = model.optimize_eulbo(
                    region, q=q, utility=self.utility, seed=seed_i
                )
        self.diagnostics = model.diagnostics()
        if self.utility is None and q == 1:
            # The same utility term EULBO maximizes, for comparison in the logs.
            with torch.no_grad():
                self.diagnostics["utility"] = model.expected_log_utility(
                    candidates.detach().unsqueeze(0)
                ).item()
        self.previous = model
        self.n_seen = train_Y.shape[0]
        self.last_region = region
        return candidates.detach()


class TurboMethod:
    r"""TuRBO with an exact GP [Eriksson2019turbo]: BoTorch's default
    ``SingleTaskGP`` (MAP) and ``qLogExpectedImprovement`` in a trust region.

    The exact-GP baseline of [Maus2024eulbo]'s TuRBO experiments (used while
    ``n`` allows an exact GP). Same trust-region rules as the ``turbo-*`` SVGP
    methods; each run keeps its own ``TurboState`` (``new_run()``).
    """

    def new_run(self) -> Method:
        return _TurboExactRun()

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        return self.new_run()(train_X, train_Y, bounds, q, seed, options)


class _TurboExactRun(_TrustRegion):
    def __init__(self) -> None:
        super().__init__()
        self.diagnostics: dict = {}
        self.timings: dict = {}

    def __call__(self, train_X, train_Y, bounds, q, seed, options) -> Tensor:
        seed_i = _iteration_seed(seed, train_X)
        torch.manual_seed(seed_i)
        tic = time.monotonic()
        model = fit_model(train_X, train_Y, options)
        self.timings = {"fit_seconds": time.monotonic() - tic}
        region = self._trust_region(
            train_X, train_Y, bounds, q, model.covar_module.lengthscale
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            ignore_optimize_acqf_retry_warnings()
            candidates = _maximize_qlogei(model, train_Y, region, q, options)
        self.n_seen = train_Y.shape[0]
        self.last_region = region
        self.diagnostics = gp_diagnostics(model)
        return candidates.detach()


METHODS: dict[str, Method] = {
    "random": _random,
    "sobol": _sobol,
    "qlogei": _acquisition_method(qLogNoisyExpectedImprovement),
    "qucb": _acquisition_method(qUCB),
    "qsoftpi": _acquisition_method(qSoftPI),
    "qlogsoftpi": _acquisition_method(qLogSoftPI),
    "qes": _acquisition_method(qES),
    # The BOCK comparison: qLogNEI on a SingleTaskGP whose kernel is the only change.
    "bock": _acquisition_method(qLogNoisyExpectedImprovement, kernel="bock"),
    "bock-continuous": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-continuous"
    ),
    "bock-direction": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-direction"
    ),
    "bock-scaled": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock-scaled"
    ),
    "matern": _acquisition_method(qLogNoisyExpectedImprovement, kernel="matern"),
    "matern-scaled": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="matern-scaled"
    ),
    "gpytorch-cylindrical": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="gpytorch-cylindrical"
    ),
    # BOCK with its hyperparameters averaged over SGLD draws [Coullon2023mamba],
    # as the BOCK paper averaged over slice-sampling draws.
    "bock-sgmcmc": _acquisition_method(
        qLogNoisyExpectedImprovement, kernel="bock", fully_bayesian=True
    ),
    # Approximation-aware BO [Maus2024eulbo] and its ELBO-SVGP baseline.
    "eulbo-ei": SVGPMethod("ei"),
    "eulbo-kg": SVGPMethod("kg"),
    "elbo-svgp": SVGPMethod(None),
    "turbo-eulbo-ei": SVGPMethod("ei", turbo=True),
    "turbo-elbo-svgp": SVGPMethod(None, turbo=True),
    # TuRBO with an exact GP, the baseline of the TuRBO comparisons.
    "turbo": TurboMethod(),
    # BoTorch's own acquisition functions on the same model and optimizer
    # settings as `qlogei`, each built by BoTorch's registered input
    # constructor (as Ax builds them), for fair comparisons.
    "botorch-qucb": _acquisition_method(qUpperConfidenceBound, beta=BOTORCH_UCB_BETA),
    "botorch-qpi": _acquisition_method(qProbabilityOfImprovement),
    "qjes": _acquisition_method(
        qJointEntropySearch, late_kwargs=lambda: {"num_optima": JES_NUM_OPTIMA}
    ),
    # Max-values from 1000 uniform candidates (the constructor's default).
    "qmes": _acquisition_method(qMaxValueEntropy, sequential=True),
    "gibbon": _acquisition_method(
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
