r"""Fully Bayesian GP hyperparameters by MAMBA-tuned SGMCMC, without NUTS or JAX.

A ``SGMCMCFullyBayesianSingleTaskGP`` is a ``SingleTaskGP`` (any kernel, e.g.
``BOCKKernel``) whose hyperparameters ``fit_fully_bayesian_model_sgmcmc``
samples from their posterior with SGLD or SGHMC, tuned by ``mamba``. The draws
are loaded as a batch of GPs, one per draw, and BoTorch's MC acquisition
functions average over them exactly as over ``SaasFullyBayesianSingleTaskGP``'s
NUTS draws (the model is marked ``_is_fully_bayesian``/``_is_ensemble`` and
returns a ``GaussianMixturePosterior``).

References:

.. [Coullon2023mamba]
    J. Coullon, L. South and C. Nemeth. Efficient and generalizable tuning
    strategies for stochastic gradient MCMC. Statistics and Computing, 2023.
.. [Oh2018bock]
    C. Oh, E. Gavves and M. Welling. BOCK: Bayesian optimization with
    cylindrical kernels. ICML 2018.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.posteriors.fully_bayesian import MCMC_DIM, GaussianMixturePosterior
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from gpytorch.constraints import Interval
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.errors import NotPSDError
from torch import Tensor
from torch.func import functional_call

from botorch_ext.constraints import ReflectedInterval
from botorch_ext.sgmcmc.mamba import MambaResult, mamba
from botorch_ext.validation import check_positive, check_positive_int

#: Standard deviation of the Gaussian put on raw parameters without a prior, so
#: that the posterior is proper (e.g. the shift-invariant softmax logits of
#: ``BOCKKernel``, or the constant mean).
RAW_PRIOR_SCALE = 10.0


class SGMCMCFullyBayesianSingleTaskGP(SingleTaskGP):
    r"""A ``SingleTaskGP`` whose hyperparameters are SGMCMC posterior draws.

    Before ``fit_fully_bayesian_model_sgmcmc`` it is an ordinary ``SingleTaskGP``
    (one set of hyperparameters). After it, every hyperparameter has a leading
    batch dimension of size ``num_samples`` (one GP per draw, sharing the
    training data); ``posterior(X)`` evaluates all of them and returns a
    ``GaussianMixturePosterior`` whose ``MCMC_DIM`` BoTorch's acquisition
    functions average over, as for ``SaasFullyBayesianSingleTaskGP``. Any
    kernel works, ``BOCKKernel`` included (the BOCK paper [Oh2018bock]_
    averaged its acquisition over slice-sampled hyperparameters).

    Example:
        >>> model = SGMCMCFullyBayesianSingleTaskGP(
        ...     train_X, train_Y, covar_module=BOCKKernel()
        ... )
        >>> fit_fully_bayesian_model_sgmcmc(model, num_samples=16)
        >>> acqf = qLogNoisyExpectedImprovement(model, X_baseline=train_X)
        >>> candidate, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4,
        ...                              raw_samples=64)
    """

    _is_fully_bayesian = True
    _is_ensemble = True

    @property
    def num_mcmc_samples(self) -> int:
        r"""Number of hyperparameter draws (1 before sampling)."""
        return getattr(self, "_num_mcmc_samples", 1)

    @property
    def batch_shape(self) -> torch.Size:
        r"""``torch.Size([num_mcmc_samples])``."""
        return torch.Size([self.num_mcmc_samples])

    def load_hyperparameter_samples(self, samples: dict[str, Tensor]) -> None:
        r"""Load draws as a batch of hyperparameters (one GP per draw).

        Args:
            samples: ``{parameter name: num_samples x *shape}`` raw values, for
                every parameter of the unbatched model.
        """
        if getattr(self, "_num_mcmc_samples", None) is not None:
            raise RuntimeError("Hyperparameter samples are already loaded.")
        names = {n for n, _ in self.named_parameters()}
        if set(samples) != names:
            raise ValueError(
                f"`samples` must hold every parameter {sorted(names)}, got "
                f"{sorted(samples)}."
            )
        sizes = {v.shape[0] for v in samples.values()}
        if len(sizes) != 1:
            raise ValueError(f"All samples need the same leading size, got {sizes}.")
        (k,) = sizes
        params = dict(self.named_parameters())
        for name, value in samples.items():
            if value.shape[1:] != params[name].shape:
                raise ValueError(
                    f"Samples of {name} have shape {tuple(value.shape)}, expected "
                    f"(k, {', '.join(map(str, params[name].shape))})."
                )
        # Checked first, so that a bad call leaves the model as it was.
        for name, value in samples.items():
            module_name, _, attr = name.rpartition(".")
            module = self.get_submodule(module_name)
            module._parameters[attr] = torch.nn.Parameter(
                value.detach().to(params[name]), requires_grad=False
            )
        # Kernels keep their batch shape as an attribute; a leading sample
        # dimension is added to every one of them.
        for module in self.modules():
            if isinstance(module, Kernel):
                module._batch_shape = torch.Size([k]) + module.batch_shape
        self._num_mcmc_samples = k
        self.eval()

    # The signature of SingleTaskGP.posterior, which mypy checks against the
    # narrower GPyTorchModel.posterior.
    def posterior(  # type: ignore[override]
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GaussianMixturePosterior | TransformedPosterior:
        r"""The mixture posterior over the draws at ``X`` (``batch x q x d``).

        Returns:
            A ``GaussianMixturePosterior`` with the draws in ``MCMC_DIM``; with a
            non-linear outcome transform (e.g. ``Bilog``), a ``TransformedPosterior``
            whose base is that mixture (samples are mapped back, as for
            ``SingleTaskGP``).
        """
        posterior = super().posterior(
            X=X.unsqueeze(MCMC_DIM),
            output_indices=output_indices,
            observation_noise=observation_noise,
            posterior_transform=posterior_transform,
            **kwargs,
        )
        if isinstance(posterior, TransformedPosterior):
            # A non-linear outcome transform: only samples can be mapped back, so
            # keep BoTorch's wrapper and make its base the mixture over the draws.
            return TransformedPosterior(
                GaussianMixturePosterior(
                    distribution=cast(
                        GPyTorchPosterior, posterior._posterior
                    ).distribution
                ),
                sample_transform=posterior._sample_transform,
                mean_transform=posterior._mean_transform,
                variance_transform=posterior._variance_transform,
            )
        return GaussianMixturePosterior(distribution=posterior.distribution)


class _LogJoint(torch.nn.Module):
    r"""``log p(y | theta) + sum log p(theta)`` of an exact GP (the MLL times n)."""

    def __init__(self, model: SingleTaskGP) -> None:
        super().__init__()
        # Only the model is a submodule: an MLL would hold the likelihood under
        # two names, and ``functional_call`` does not restore such aliases.
        self.model = model

    def forward(self) -> Tensor:
        model = self.model
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        output = model(*model.train_inputs)
        n = model.train_targets.shape[-1]
        value: Tensor = mll(output, model.train_targets) * n
        return value


class HyperparameterPosterior:
    r"""The log posterior of a GP's hyperparameters on an unconstrained vector.

    The sampling variable ``z`` stacks, for every parameter: the raw value
    itself when its constraint is enforced by a transform (GPyTorch's default;
    the prior, on the constrained value, is multiplied by the transform's
    Jacobian), or ``logit`` of its position in the box for an ``Interval``
    without transform (BoTorch's noise floor, which ``fit_gpytorch_mll`` keeps
    with L-BFGS-B bounds) or a ``ReflectedInterval`` (``BOCKKernel``'s
    warp exponents and radial lengthscale), with that map's Jacobian.
    Parameters without a registered prior get a ``N(0, RAW_PRIOR_SCALE^2)`` on
    ``z`` so the posterior is proper, except those in a box, where the
    sigmoid's Jacobian already makes it proper. Priors are matched
    to parameters by GPyTorch's naming (``foo_prior`` for ``raw_foo`` or
    ``foo``); every registered prior enters the density.

    The GP marginal likelihood does not factor over data points, so the gradient
    is full-batch (``indices`` is ignored); at BO data sizes it costs
    milliseconds.

    Example:
        >>> post = HyperparameterPosterior(model)
        >>> z0 = post.initial_point()
        >>> result = sgld(post.gradient, z0, 1e-3, post.num_data, post.num_data,
        ...               num_steps=500)
        >>> draws = post.unpack(result.samples)

    Args:
        model: An unbatched ``SingleTaskGP`` (no input batch dimensions).
    """

    def __init__(self, model: SingleTaskGP) -> None:
        self.model = model
        self.joint = _LogJoint(model)
        prior_names = set()
        # gpytorch is untyped: mypy resolves its methods by torch's
        # Module.__getattr__, which returns a Tensor or a Module.
        gp: Any = model
        for name, *_ in gp.named_priors():
            module_name, _, prior = name.rpartition(".")
            base = prior[: -len("_prior")] if prior.endswith("_prior") else prior
            for candidate in (f"raw_{base}", base):
                full = f"{module_name}.{candidate}" if module_name else candidate
                prior_names.add(full)
        self.entries = []
        for name, param, constraint in gp.named_parameters_and_constraints():
            if not param.requires_grad:
                continue
            kind = _kind(constraint)
            self.entries.append(
                {
                    "name": name,
                    "shape": param.shape,
                    "numel": param.numel(),
                    "constraint": constraint,
                    "kind": kind,
                    "has_prior": name in prior_names,
                }
            )
        self.dim = sum(e["numel"] for e in self.entries)
        self.num_data = int(model.train_targets.shape[-1])

    # --------------------------------------------------------------- mapping
    def _to_raw(self, entry: dict[str, Any], z: Tensor) -> tuple[Tensor, Tensor]:
        r"""Raw parameter value from ``z`` and ``log|d raw / d z|`` (summed)."""
        kind, c = entry["kind"], entry["constraint"]
        if kind == "box":
            lo, hi = c.lower_bound.to(z), c.upper_bound.to(z)
            log_jac = (
                torch.log(hi - lo)
                + torch.nn.functional.logsigmoid(z)
                + torch.nn.functional.logsigmoid(-z)
            )
            return lo + (hi - lo) * torch.sigmoid(z), log_jac.sum()
        if kind == "lower":
            return c.lower_bound.to(z) + torch.exp(z), z.sum()
        if kind == "upper":
            return c.upper_bound.to(z) - torch.exp(z), z.sum()
        return z, z.new_zeros(())

    def initial_point(self) -> Tensor:
        r"""The model's current hyperparameters as a ``z`` vector (``dim``)."""
        parts = []
        params = dict(self.model.named_parameters())
        for e in self.entries:
            raw = params[e["name"]].detach().reshape(-1)
            c, tiny = e["constraint"], torch.finfo(raw.dtype).tiny
            if e["kind"] == "box":
                lo, hi = c.lower_bound.to(raw), c.upper_bound.to(raw)
                u = ((raw - lo) / (hi - lo)).clamp(1e-6, 1 - 1e-6)
                raw = torch.log(u) - torch.log1p(-u)
            elif e["kind"] == "lower":
                raw = (raw - c.lower_bound.to(raw)).clamp_min(tiny).log()
            elif e["kind"] == "upper":
                raw = (c.upper_bound.to(raw) - raw).clamp_min(tiny).log()
            parts.append(raw)
        return torch.cat(parts)

    def unpack(self, z: Tensor) -> dict[str, Tensor]:
        r"""Raw parameter values for ``z`` of shape ``k x dim``."""
        out, start = {}, 0
        for e in self.entries:
            chunk = z[..., start : start + e["numel"]]
            start += e["numel"]
            raw, _ = self._to_raw(e, chunk)
            out[e["name"]] = raw.reshape(*z.shape[:-1], *e["shape"])
        return out

    # ---------------------------------------------------------------- density
    def log_density(self, z: Tensor) -> Tensor:
        r"""``log pi(z)`` up to a constant, for one ``z`` (``dim``)."""
        values, start = {}, 0
        extra = z.new_zeros(())
        for e in self.entries:
            chunk = z[start : start + e["numel"]]
            start += e["numel"]
            raw, log_jac = self._to_raw(e, chunk)
            values[f"model.{e['name']}"] = raw.reshape(e["shape"])
            extra = extra + log_jac
            if e["has_prior"]:
                c = e["constraint"]
                if c is not None and e["kind"] == "free":
                    # The prior is on the constrained value c(raw); the
                    # transform is elementwise, so its Jacobian is diagonal.
                    extra = extra + _log_abs_derivative(c.transform, raw)
            elif e["kind"] != "box":
                # lo + exp(z) (or hi - exp(z)) without a prior is improper too.
                extra = extra - 0.5 * (chunk / RAW_PRIOR_SCALE).pow(2).sum()
        self.model.train()
        log_density: Tensor = functional_call(self.joint, values, ()) + extra
        return log_density

    def gradient(self, z: Tensor, indices: Tensor | None = None) -> Tensor:
        r"""``grad log pi(z)``: one ``z`` (``dim``) or a batch (``k x dim``, looped).

        ``indices`` is ignored (full batch, see the class docstring). Where the
        kernel matrix is not positive definite, the gradient is NaN.
        """
        if z.dim() > 1:
            return torch.stack([self.gradient(zi) for zi in z])
        try:
            with torch.enable_grad():
                t = z.detach().clone().requires_grad_(True)
                (g,) = torch.autograd.grad(self.log_density(t), t)
        except NotPSDError:
            # Hyperparameters far out in the tails make the kernel matrix
            # numerically singular: report a non-finite gradient, which the
            # samplers treat as divergence (MAMBA ranks such arms last).
            return torch.full_like(z, math.nan)
        return g


def _kind(constraint: Interval | None) -> str:
    r"""How ``z`` maps to a raw parameter.

    ``"free"`` (identity; the constraint, if any, is enforced by its
    transform), or, for a constraint without
    transform (BoTorch's noise and lengthscale floors, which L-BFGS-B keeps
    feasible during MAP fits) or a ``ReflectedInterval`` (``BOCKKernel``'s
    boxes; its raw value is the parameter's value inside the box), ``"box"``
    (sigmoid), ``"lower"`` (``lo + exp(z)``) or ``"upper"`` (``hi - exp(z)``).
    """
    if constraint is None:
        return "free"
    if constraint.enforced and not isinstance(constraint, ReflectedInterval):
        return "free"
    lower = bool(torch.isfinite(constraint.lower_bound).all())
    upper = bool(torch.isfinite(constraint.upper_bound).all())
    if lower and upper:
        return "box"
    if lower:
        return "lower"
    return "upper" if upper else "free"


def _log_abs_derivative(transform: Callable[[Tensor], Tensor], raw: Tensor) -> Tensor:
    r"""``sum log|transform'(raw)|`` of an elementwise transform, differentiable."""
    with torch.enable_grad():
        r = raw if raw.requires_grad else raw.detach().requires_grad_(True)
        (dv,) = torch.autograd.grad(transform(r).sum(), r, create_graph=True)
    return dv.abs().clamp_min(torch.finfo(raw.dtype).tiny).log().sum()


def fit_fully_bayesian_model_sgmcmc(
    model: SGMCMCFullyBayesianSingleTaskGP,
    num_samples: int = 16,
    sampler: str | None = None,
    budget: float = 2.0,
    step_sizes: Sequence[float] = (10**-0.5, 1e-1, 10**-1.5, 1e-2, 10**-2.5, 1e-3),
    num_leapfrog_steps: Sequence[int] | None = None,
    budget_unit: str | None = None,
    fit_map: bool = True,
    generator: torch.Generator | None = None,
    progress: bool = False,
    **mamba_kwargs: Any,
) -> MambaResult:
    r"""Sample a GP's hyperparameters by MAMBA-tuned SGMCMC and load the draws.

    Starts every MAMBA arm at the MAP (``fit_gpytorch_mll``), as the paper's
    experiments start at the MAP, tunes the step size (and, for SGHMC, the
    leapfrog steps) by successive halving on the KSD of the draws with their
    full-batch scores, then loads ``num_samples`` evenly spaced draws of the
    winning arm's last round into ``model`` (``load_hyperparameter_samples``).

    Choices:

    - Batch size is not tuned: the GP marginal likelihood is not a sum over
      data, so every gradient is full-batch.
    - Default step sizes ``10^-0.5 ... 10^-3`` in half decades: the paper's
      spacing, placed for the O(1) posterior spread of raw GP hyperparameters
      at BO data sizes. A step too large makes the kernel matrix singular,
      which counts as divergence and ranks the arm last.

    Example:
        >>> model = SGMCMCFullyBayesianSingleTaskGP(train_X, train_Y)
        >>> result = fit_fully_bayesian_model_sgmcmc(model, num_samples=16)
        >>> result.best_arm.step_size, model.batch_shape

    Args:
        model: An unfitted ``SGMCMCFullyBayesianSingleTaskGP``.
        num_samples: Number of draws loaded into the model.
        sampler: ``"sgld"`` or ``"sghmc"``; if None, that of ``settings``
            (in ``mamba_kwargs``), else ``"sgld"``.
        budget: MAMBA's ``R`` (seconds, or iterations with
            ``budget_unit="steps"``).
        step_sizes: Step-size grid.
        num_leapfrog_steps: Leapfrog grid (SGHMC).
        budget_unit: ``"seconds"`` or ``"steps"``; if None, that of
            ``settings``, else ``"seconds"``.
        fit_map: Start from the MAP (else from the current hyperparameters).
        generator: Seeds the samplers.
        progress: Show MAMBA's progress bar.
        **mamba_kwargs: Passed to ``mamba``: ``eta``, ``settings`` or fields of
            ``ArmSettings`` (``metric``, ``thin``, ...); a field given here
            replaces the one in ``settings``, as do ``sampler`` and
            ``budget_unit`` when given.

    Returns:
        The ``MambaResult`` of the tuning run (its ``history`` shows the arms).
    """
    if not isinstance(model, SGMCMCFullyBayesianSingleTaskGP):
        raise ValueError(
            "`model` must be an SGMCMCFullyBayesianSingleTaskGP, got "
            f"{type(model).__name__}."
        )
    if getattr(model, "_num_mcmc_samples", None) is not None:
        raise RuntimeError(
            "Hyperparameter samples are already loaded; build a new model to refit."
        )
    check_positive_int("num_samples", num_samples)
    check_positive("budget", budget)
    if model.train_inputs[0].dim() != 2:
        raise ValueError("Batched training data are not supported.")
    if fit_map:
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    posterior = HyperparameterPosterior(model)
    # Forwarded only when given, so that those of `settings` hold otherwise.
    given = {"sampler": sampler, "budget_unit": budget_unit}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    result = mamba(
        posterior.gradient,
        posterior.initial_point(),
        num_data=posterior.num_data,
        step_sizes=step_sizes,
        batch_sizes=[posterior.num_data],
        budget=budget,
        num_leapfrog_steps=num_leapfrog_steps,
        generator=generator,
        progress=progress,
        **overrides,
        **mamba_kwargs,
    )
    draws = result.samples
    if draws.shape[0] == 0:
        # Every arm diverged: fall back to the starting point, which is finite.
        warnings.warn(
            "Every MAMBA arm diverged; loaded the starting hyperparameters "
            "(the MAP) as every draw. Try smaller `step_sizes`.",
            RuntimeWarning,
            stacklevel=2,
        )
        draws = posterior.initial_point().unsqueeze(0)
    elif draws.shape[0] < num_samples:
        warnings.warn(
            f"The winning MAMBA arm kept {draws.shape[0]} draws in its last round; "
            f"loading them as {num_samples} samples repeats some. Raise `budget` "
            "or lower `thin` for distinct draws.",
            RuntimeWarning,
            stacklevel=2,
        )
    idx = torch.linspace(0, draws.shape[0] - 1, num_samples).round().long()
    model.load_hyperparameter_samples(posterior.unpack(draws[idx]))
    return result
