r"""Stochastic gradient MCMC samplers in torch: SGLD, SGHMC and control variates.

Every sampler takes a *gradient estimator* ``gradient(theta, indices)``: an
unbiased estimate of ``grad log pi(theta)`` from the data points ``indices``
(``None`` = the full data set, used when the batch size equals ``num_data``).
``log_posterior_gradient`` builds one from a log prior and a per-datum log
likelihood by autograd; ``control_variate_gradient`` turns one into the
control-variate estimator of SGLD-CV / SGHMC-CV. Runs stop after ``num_steps``
iterations or ``time_budget`` seconds (the budget MAMBA allocates), and return
the (thinned) samples and the final state, from which a later run continues.

References:

.. [Welling2011sgld]
    M. Welling and Y. W. Teh. Bayesian learning via stochastic gradient Langevin
    dynamics. ICML 2011.
.. [Chen2014sghmc]
    T. Chen, E. Fox and C. Guestrin. Stochastic gradient Hamiltonian Monte Carlo.
    ICML 2014.
.. [Baker2019cv]
    J. Baker, P. Fearnhead, E. B. Fox and C. Nemeth. Control variates for
    stochastic gradient MCMC. Statistics and Computing, 2019.
.. [Coullon2023mamba]
    J. Coullon, L. South and C. Nemeth. Efficient and generalizable tuning
    strategies for stochastic gradient MCMC. Statistics and Computing, 2023.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from botorch_ext.validation import check_positive, check_positive_int

GradientEstimator = Callable[[Tensor, Tensor | None], Tensor]
#: Draws the next minibatch's indices (``None`` = full batch).
Batches = Callable[[], Tensor | None]


def log_posterior_gradient(
    log_prior: Callable[[Tensor], Tensor],
    log_likelihood: Callable[[Tensor, Tensor | None], Tensor],
    num_data: int,
) -> GradientEstimator:
    r"""The minibatch gradient estimator of a log posterior, by autograd.

    For independent data, ``log pi(theta) = log p(theta) + sum_i log f(y_i |
    theta)`` and ``log p(theta) + (N / n) sum_{i in S} log f(y_i | theta)`` over a
    minibatch ``S`` of size ``n`` is unbiased for it; its gradient is the
    estimator of [Welling2011sgld]_.

    Example:
        >>> grad = log_posterior_gradient(
        ...     lambda t: -0.5 * (t**2).sum(-1),
        ...     lambda t, idx: -0.5 * ((Y[idx] - t) ** 2).sum(-2).sum(-1),
        ...     num_data=len(Y),
        ... )

    Args:
        log_prior: ``theta (batch x d) -> batch`` log prior density.
        log_likelihood: ``(theta (batch x d), indices) -> batch`` summed log
            likelihood of the data points ``indices`` (``None`` = all of them).
        num_data: ``N``, the number of data points.

    Returns:
        ``gradient(theta, indices)``: ``theta`` of shape ``batch x d`` (or
        ``d``), the estimate of the same shape.
    """
    check_positive_int("num_data", num_data)

    def gradient(theta: Tensor, indices: Tensor | None = None) -> Tensor:
        with torch.enable_grad():
            t = theta.detach().requires_grad_(True)
            scale = 1.0 if indices is None else num_data / indices.numel()
            value = log_prior(t) + scale * log_likelihood(t, indices)
            (grad,) = torch.autograd.grad(value.sum(), t)
        return grad

    return gradient


def control_variate_gradient(
    gradient: GradientEstimator, centre: Tensor
) -> GradientEstimator:
    r"""The control-variate gradient estimator of SGLD-CV [Baker2019cv]_.

    ``g_cv(theta, S) = g(theta, S) - g(theta_hat, S) + grad log pi(theta_hat)``
    with ``theta_hat`` a fixed centre (usually the MAP) and the full-data gradient
    at it computed once. It stays unbiased and its variance vanishes as ``theta``
    approaches ``theta_hat``, so small batches lose little accuracy near the mode.

    Example:
        >>> grad_cv = control_variate_gradient(grad, theta_map)
        >>> result = sgld(grad_cv, theta_map, step_size=1e-5, batch_size=100,
        ...               num_data=N, num_steps=1000)

    Args:
        gradient: The plain estimator ``g(theta, indices)``.
        centre: ``d`` centre ``theta_hat``.

    Returns:
        The control-variate estimator, with the same signature.
    """
    centre = centre.detach()
    if not bool(torch.isfinite(centre).all()):
        raise ValueError(f"`centre` must be finite, got {centre}.")
    full_at_centre = gradient(centre, None).detach()

    def cv_gradient(theta: Tensor, indices: Tensor | None = None) -> Tensor:
        if indices is None:
            return gradient(theta, None)
        return gradient(theta, indices) - gradient(centre, indices) + full_at_centre

    return cv_gradient


@dataclass
class SamplerState:
    r"""Where a chain stands: position, minibatch order and step count.

    A later ``sgld``/``sghmc`` call given this state continues the same chain
    (MAMBA's surviving arms do).
    """

    theta: Tensor
    num_steps: int = 0
    diverged: bool = False
    _permutation: Tensor | None = field(default=None, repr=False)
    _cursor: int = field(default=0, repr=False)
    _gradient: Tensor | None = field(default=None, repr=False)


@dataclass
class SamplerResult:
    r"""Output of a sampler run.

    Attributes:
        samples: ``k x d`` thinned samples of this run (finite ones only).
        state: The final ``SamplerState``.
        num_steps: Iterations taken in this run.
        num_gradients: Gradient evaluations in this run.
        seconds: Wall-clock seconds of this run.
    """

    samples: Tensor
    state: SamplerState
    num_steps: int
    num_gradients: int
    seconds: float


class _Batcher:
    r"""Minibatch indices by random reshuffling.

    Each epoch is a random permutation, cut into consecutive batches, so every
    batch is drawn without
    replacement and the estimator stays unbiased, without the cost of a fresh
    ``randperm(N)`` per step.
    """

    def __init__(
        self,
        state: SamplerState,
        num_data: int,
        batch_size: int,
        generator: torch.Generator | None,
        device: torch.device,
    ) -> None:
        self.state, self.num_data, self.batch_size = state, num_data, batch_size
        self.generator, self.device = generator, device

    def __call__(self) -> Tensor | None:
        if self.batch_size >= self.num_data:
            return None
        s = self.state
        if s._permutation is None or s._cursor + self.batch_size > self.num_data:
            s._permutation = torch.randperm(self.num_data, generator=self.generator).to(
                self.device
            )
            s._cursor = 0
        idx = s._permutation[s._cursor : s._cursor + self.batch_size]
        s._cursor += self.batch_size
        return idx


def _check_run_args(
    theta: Tensor | SamplerState,
    step_size: float,
    batch_size: int,
    num_data: int,
    num_steps: int | None,
    time_budget: float | None,
    thin: int,
) -> SamplerState:
    check_positive("step_size", step_size)
    check_positive_int("batch_size", batch_size)
    check_positive_int("num_data", num_data)
    check_positive_int("thin", thin)
    if num_steps is None and time_budget is None:
        raise ValueError("Give `num_steps` or `time_budget` (or both).")
    if num_steps is not None:
        check_positive_int("num_steps", num_steps)
    if time_budget is not None:
        check_positive("time_budget", time_budget)
    state = theta if isinstance(theta, SamplerState) else SamplerState(theta=theta)
    t = state.theta
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(
            f"`theta` must be a non-empty 1-d tensor, got shape {tuple(t.shape)}."
        )
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"`theta` must be finite, got {t}.")
    return state


def _run(
    step: Callable[[Tensor, Batches], tuple[Tensor, int]],
    state: SamplerState,
    batch_size: int,
    num_data: int,
    num_steps: int | None,
    time_budget: float | None,
    thin: int,
    generator: torch.Generator | None,
) -> SamplerResult:
    theta = state.theta.detach().clone()
    batches = _Batcher(state, num_data, batch_size, generator, theta.device)
    kept: list[Tensor] = []
    start = time.perf_counter()
    steps = grads = 0
    while not state.diverged:
        if num_steps is not None and steps >= num_steps:
            break
        if time_budget is not None and time.perf_counter() - start >= time_budget:
            break
        new_theta, n_grad = step(theta, batches)
        if new_theta.shape != theta.shape:
            raise ValueError(
                f"`gradient` must return a tensor shaped like theta "
                f"{tuple(theta.shape)}, got {tuple(new_theta.shape)}."
            )
        steps += 1
        grads += n_grad
        if not bool(torch.isfinite(new_theta).all()):
            # A diverged chain keeps its last finite position; MAMBA ranks it last.
            state.diverged = True
            break
        theta = new_theta
        if (state.num_steps + steps) % thin == 0:
            kept.append(theta)
    state.theta = theta
    state.num_steps += steps
    samples = torch.stack(kept) if kept else theta.new_empty(0, theta.numel())
    return SamplerResult(samples, state, steps, grads, time.perf_counter() - start)


def sgld(
    gradient: GradientEstimator,
    theta: Tensor | SamplerState,
    step_size: float,
    batch_size: int,
    num_data: int,
    num_steps: int | None = None,
    time_budget: float | None = None,
    thin: int = 1,
    generator: torch.Generator | None = None,
) -> SamplerResult:
    r"""Stochastic gradient Langevin dynamics [Welling2011sgld]_.

    ``theta <- theta + h g(theta) + sqrt(2 h) xi`` with ``g`` the minibatch
    estimate of ``grad log pi`` and ``xi ~ N(0, I)``: the Euler-Maruyama
    discretization of the Langevin diffusion with step ``h``, in the notation of
    [Coullon2023mamba]_ eq. (1). With ``batch_size >= num_data`` it is the
    unadjusted Langevin algorithm. Give a ``control_variate_gradient`` for
    SGLD-CV.

    Example:
        >>> result = sgld(grad, torch.zeros(d), step_size=1e-4, batch_size=1000,
        ...               num_data=N, time_budget=1.0, thin=10)
        >>> result.samples.mean(0)

    Args:
        gradient: ``gradient(theta, indices)``, unbiased for ``grad log pi``.
        theta: ``d`` start, or a ``SamplerState`` to continue a chain.
        step_size: ``h > 0``.
        batch_size: Minibatch size ``n`` (``>= num_data`` = full batch).
        num_data: ``N``.
        num_steps: Stop after this many iterations.
        time_budget: Stop after this many wall-clock seconds.
        thin: Keep every ``thin``-th iterate.
        generator: Drives the noise and the minibatches (reproducible runs).

    Returns:
        A ``SamplerResult``.
    """
    state = _check_run_args(
        theta, step_size, batch_size, num_data, num_steps, time_budget, thin
    )
    h = float(step_size)
    noise_scale = math.sqrt(2.0 * h)

    def step(t: Tensor, batches: Batches) -> tuple[Tensor, int]:
        g = gradient(t, batches())
        xi = torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device)
        return t + h * g + noise_scale * xi, 1

    return _run(
        step, state, batch_size, num_data, num_steps, time_budget, thin, generator
    )


def sghmc(
    gradient: GradientEstimator,
    theta: Tensor | SamplerState,
    step_size: float,
    batch_size: int,
    num_data: int,
    num_leapfrog_steps: int = 10,
    friction: float = 0.01,
    num_steps: int | None = None,
    time_budget: float | None = None,
    thin: int = 1,
    generator: torch.Generator | None = None,
) -> SamplerResult:
    r"""Stochastic gradient Hamiltonian Monte Carlo with friction [Chen2014sghmc]_.

    One iteration resamples the momentum ``v ~ N(0, h I)`` (Algorithm 2 of
    [Chen2014sghmc]_) and integrates ``L`` leapfrog steps of their eq. (15) (no
    noise-estimate correction): a half kick ``v <- v + (h / 2) g(theta)``, then
    ``theta <- theta + v`` and ``v <- v + h g(theta) - alpha v + sqrt(2 alpha h)
    xi`` with a fresh minibatch per gradient, ending on a half kick that the
    refresh discards. The iterate after the ``L`` steps is one sample. ``h``
    plays the role of SGLD's step size (``L = 1`` is SGLD with step ``h / 2``),
    ``alpha`` is the friction. The half kicks matter: with full kicks at the
    trajectory's ends the stationary variance is off by a factor that does not
    vanish as ``h -> 0`` (about 0.5 at ``L = 1``). Defaults: ``L = 10`` and
    ``alpha = 0.01``; [Coullon2023mamba]_ tuned ``L`` over 5 and 10. Each
    iteration costs ``L`` gradients (the last one is reused by the next).

    Example:
        >>> result = sghmc(grad, theta0, step_size=1e-5, batch_size=1000,
        ...                num_data=N, num_leapfrog_steps=5, num_steps=500)

    Args:
        gradient: ``gradient(theta, indices)``, unbiased for ``grad log pi``.
        theta: ``d`` start, or a ``SamplerState`` to continue a chain.
        step_size: ``h > 0``.
        batch_size: Minibatch size ``n``.
        num_data: ``N``.
        num_leapfrog_steps: ``L >= 1``.
        friction: ``alpha in (0, 1]``.
        num_steps: Stop after this many iterations (samples).
        time_budget: Stop after this many wall-clock seconds.
        thin: Keep every ``thin``-th sample.
        generator: Drives the noise and the minibatches.

    Returns:
        A ``SamplerResult`` (``num_gradients = L * num_steps``, plus one at a
        chain's start).
    """
    state = _check_run_args(
        theta, step_size, batch_size, num_data, num_steps, time_budget, thin
    )
    check_positive_int("num_leapfrog_steps", num_leapfrog_steps)
    if not (0.0 < friction <= 1.0):
        raise ValueError(f"`friction` must lie in (0, 1], got {friction}.")
    h, alpha, L = float(step_size), float(friction), int(num_leapfrog_steps)
    noise_scale = math.sqrt(2.0 * alpha * h)

    def randn(t: Tensor) -> Tensor:
        return torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device)

    def step(t: Tensor, batches: Batches) -> tuple[Tensor, int]:
        n_grad = 0
        g = state._gradient
        if g is None or g.shape != t.shape:
            g, n_grad = gradient(t, batches()), 1
        # Momentum refresh, a half kick, then L drift-kick steps with friction;
        # the last kick is half as well, so its gradient (at the new position)
        # is kept for the next iteration's first half kick.
        v = math.sqrt(h) * randn(t) + 0.5 * h * g
        for i in range(L):
            t = t + v
            g = gradient(t, batches())
            n_grad += 1
            if i < L - 1:
                v = v + h * g - alpha * v + noise_scale * randn(t)
        state._gradient = g
        return t, n_grad

    return _run(
        step, state, batch_size, num_data, num_steps, time_budget, thin, generator
    )
