# Over 500 lines: one concept, qES (its analytic conditioning, its caches and the
# factorized entropy of p_max); about half of the file is docstrings with the math.
# The representer points it needs live in representer_points.py.
r"""Parallel entropy search with a softmax-relaxed ``p_max`` (q-ES).

References:
    .. [Wilson2017reparam]
        J. T. Wilson, R. Moriconi, F. Hutter and M. P. Deisenroth. The
        reparameterization trick for acquisition functions. NeurIPS Workshop on
        Bayesian Optimization, 2017.
    .. [Hennig2012entropy]
        P. Hennig and C. J. Schuler. Entropy search for information-efficient global
        optimization. Journal of Machine Learning Research, 2012.

The representer points over which ``p_max`` is defined are drawn by
``botorch_ext.acquisition.representer_points.draw_representer_points``.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import gpytorch
import torch
from botorch.acquisition.monte_carlo import MCAcquisitionFunction
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.models.transforms.outcome import Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling.qmc import NormalQMCEngine
from botorch.utils.transforms import (
    concatenate_pending_points,
    is_fully_bayesian,
    t_batch_mode_transform,
)
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.models import ExactGP
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor
from torch.autograd.function import once_differentiable

from botorch_ext.acquisition import representer_points
from botorch_ext.acquisition.probability_of_improvement import DEFAULT_TAU
from botorch_ext.acquisition.representer_points import (
    RELATIVE_JITTER,
    training_inputs,
)
from botorch_ext.validation import (
    check_finite,
    check_no_nan_inputs,
    check_positive,
    check_positive_int,
)

#: Pairs (fantasy, inner sample) whose shifted softmax normalizer falls below
#: this value are recomputed directly (see ``_factorized_pmax_entropy``); it
#: keeps ``1 / N`` and its derivative ``-1 / N^2`` far from float64 overflow.
_NORMALIZER_FLOOR = 1e-100

#: ``qES.forward`` splits batches of t-batches into chunks of about this many
#: conditioned deviations (``t-batches x num_inner_samples x m``, float64): 4 MiB.
_CHUNK_ELEMENTS = 2**19

#: Shifted logits below this are raised to it before exponentiating in
#: ``_factorized_pmax_entropy``: ``exp(-300)`` is about ``5e-131``, so the
#: exponentials, their pairwise products (about ``3e-261``) and their products
#: with ``1 / N <= 1 / _NORMALIZER_FLOOR`` stay normal float64 numbers. A pair
#: that is kept has ``N >= _NORMALIZER_FLOOR = e^{-230}``, so raising terms of at
#: most ``e^{-300}`` moves ``N`` and every probability by a relative
#: ``m e^{-70}``, far below float64's rounding.
_LOG_FLOOR = -300.0


class qES(MCAcquisitionFunction):
    r"""Parallel entropy search over representer points with a softmax ``p_max``.

    q-ES is the expected reduction in the entropy of ``p_max``, the distribution of
    the maximiser over ``m`` representer points ``R``, from observing the q-batch
    ``X`` [Hennig2012entropy]_:
    ``ES(X) = H[p_max | D] - E_{y ~ p(y_X | D)} H[p_max | D, (X, y)]``.
    Following Table 1 of [Wilson2017reparam]_, ``p_max`` is the Monte Carlo average
    of ``softmax((mu_R + L_R z) / tau)``, which is differentiable and becomes the
    hard argmax frequency as ``tau -> 0``.

    Conditioning is analytic and needs no model refit. With the joint posterior
    ``N(mu, S)`` over ``[X, R]`` and observation-noise variances ``N`` at ``X``,
    a fantasy is ``y = mu_X + L_X w`` (``L_X L_X^T = S_XX + N``), and draws of
    ``f(R) | y`` come from Matheron's rule,
    ``f_R + G (y - f_X - eps)`` with ``G = S_RX (S_XX + N)^{-1}``, applied to
    joint draws ``f_R = mu_R + L_R z`` and ``f_X + eps = mu_X + B z + L_V u``
    (``B = S_XR L_R^{-T}``, ``L_V L_V^T = S_XX + N - B B^T``). Only ``q x q``
    factorizations depend on ``X``; ``L_R``, the prior draws and the current
    entropy are computed once. Fantasies are of the noisy observation ``y``
    (not of ``f``), since ``y`` is what evaluating ``X`` reveals; for noiseless
    models the two coincide. The draws ``w`` (``num_fantasies x q``) and
    ``(z, u)`` (``num_inner_samples x (m + q)``) are fixed normal samples
    (scrambled Sobol for ``w`` and ``z``, i.i.d. for ``u``) shared by every
    t-batch and by the current and conditioned entropies (common random
    numbers), so ``optimize_acqf`` sees a
    deterministic surface and an uninformative ``X`` (``S_RX = 0``, e.g. an
    already observed noiseless point) scores exactly 0.

    The entropy of an average of ``J`` softmaxes is biased low (Jensen), more so
    for the wider current ``p_max`` than for the conditioned one, so where the
    information gain is tiny the estimate can be slightly negative (of order
    ``1e-2`` nats at ``num_inner_samples=64``); the bias shrinks like
    ``1 / num_inner_samples``.

    When to use it: measured against BoTorch's ``qMaxValueEntropy`` and GIBBON
    (see the qES page of the documentation), ``qES`` trails them for sequential
    BO (``q = 1``), because entropy over the maximiser's *location* spends
    evaluations telling nearby candidate maximisers apart rather than refining
    the incumbent; for joint batches (``q > 1``), where those build their batch
    greedily, it is competitive at lower cost. Use it for batches, or where the
    distribution of the maximiser's location itself is wanted.

    Representer points come from ``draw_representer_points``, whose defaults
    (sampled maximisers over a pool enriched near the incumbent) were chosen by
    measurement; the defaults ``num_fantasies=32`` and ``num_inner_samples=128``
    likewise (larger counts cost little, since the entropy is computed by
    matrix products).

    Example:
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> R = draw_representer_points(model, bounds, num_points=64)
        >>> acqf = qES(model, representer_points=R)
        >>> candidates, value = optimize_acqf(
        ...     acqf, bounds=bounds, q=2, num_restarts=10, raw_samples=512
        ... )
    """

    representer_points: Tensor
    tau: Tensor

    def __init__(
        self,
        model: Model,
        representer_points: Tensor,
        tau: float = DEFAULT_TAU,
        num_fantasies: int = 32,
        num_inner_samples: int = 128,
        posterior_transform: PosteriorTransform | None = None,
        X_pending: Tensor | None = None,
        seed: int = 0,
    ) -> None:
        r"""Parallel entropy search.

        Args:
            model: A fitted single-output model (or a multi-output model with a
                scalarizing ``posterior_transform``).
            representer_points: A ``m x d``-dim tensor of points over which
                ``p_max`` is defined (see ``draw_representer_points``).
            tau: Positive softmax temperature in the units of the objective;
                ``0.01`` is the value [Wilson2017reparam]_ used on standardized
                outcomes (the input constructor rescales it by the training
                outcomes' standard deviation).
            num_fantasies: Number of fantasy observations ``y`` at ``X``.
            num_inner_samples: Number of draws of ``f(R)`` used to estimate each
                ``p_max``; the Jensen bias of the entropy estimate shrinks like
                ``1 / num_inner_samples``.
            posterior_transform: A ``PosteriorTransform`` (optional).
            X_pending: A ``n x d``-dim tensor of pending points, conditioned on
                jointly with ``X``.
            seed: Seed of the fixed base samples.

        Raises:
            ValueError: For an empty, non-finite or wrongly shaped
                ``representer_points``, a non-positive ``tau``, non-positive
                sample counts or a ``seed`` that is not a non-negative integer.
            UnsupportedError: For a multi-output model without a scalarizing
                ``posterior_transform``, or a fully Bayesian model.
        """
        if is_fully_bayesian(model):
            raise UnsupportedError(
                f"qES does not support fully Bayesian models ({type(model).__name__}):"
                " its entropy is of one posterior's p_max, not of a mixture's."
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"`seed` must be a non-negative integer, got {seed!r}.")
        check_positive("tau", tau)
        check_positive_int("num_fantasies", num_fantasies)
        check_positive_int("num_inner_samples", num_inner_samples)
        representer_points = torch.as_tensor(representer_points)
        if representer_points.dim() != 2 or representer_points.shape[0] == 0:
            raise ValueError(
                "`representer_points` must be a non-empty `m x d` tensor, got shape "
                f"{tuple(representer_points.shape)}."
            )
        check_finite("representer_points", representer_points)
        expected_d = _model_input_dim(model)
        if expected_d is not None and representer_points.shape[-1] != expected_d:
            raise ValueError(
                f"`representer_points` has dimension {representer_points.shape[-1]}, "
                f"but the model's inputs have dimension {expected_d}."
            )
        super().__init__(
            model=model, posterior_transform=posterior_transform, X_pending=X_pending
        )
        self.register_buffer("representer_points", representer_points)
        self.register_buffer("tau", torch.as_tensor(float(tau)))
        self.num_fantasies = num_fantasies
        self.num_inner_samples = num_inner_samples
        self.seed = seed
        self._base_sample_cache: dict[tuple[Any, ...], tuple[Tensor, Tensor]] = {}
        # Holds the tuples of ``_prior_terms`` and of ``_exact_gp_terms`` (or None).
        self._prior_cache: dict[tuple[Any, ...], Any] = {}

    @concatenate_pending_points
    @t_batch_mode_transform()  # type: ignore[arg-type]  # typed for the base class
    def forward(self, X: Tensor) -> Tensor:
        r"""Evaluate q-ES on the candidate set ``X``.

        Args:
            X: A ``batch_shape x q x d``-dim tensor of t-batches.

        Returns:
            A ``batch_shape'``-dim tensor of entropy reductions (nats), where
            ``batch_shape'`` broadcasts ``batch_shape`` with the model's batch.
        """
        check_no_nan_inputs(X)
        # Candidates of another floating dtype than the model's (float32 bounds
        # given to optimize_acqf for a float64 model) are computed in the model's.
        train_X = training_inputs(self.model)
        if train_X is not None and train_X.is_floating_point():
            X = X.to(train_X.dtype)
        R = self.representer_points.to(X)
        if R.shape[-1] != X.shape[-1]:
            raise ValueError(
                f"`representer_points` has dimension {R.shape[-1]}, but `X` has "
                f"dimension {X.shape[-1]}."
            )
        prior_logits = self._prior_terms(like=X)[3]
        # Large batches (e.g. optimize_acqf's raw samples) go through in chunks
        # of about _CHUNK_ELEMENTS conditioned deviations: t-batches are
        # independent, and chunks that fit in cache run several times faster.
        # Only for an unbatched model, whose output batch is X's batch.
        batch = X.shape[:-2]
        chunk = max(1, _CHUNK_ELEMENTS // prior_logits.shape[-2:].numel())
        if prior_logits.dim() == 2 and batch.numel() > chunk:
            flat = X.reshape(-1, *X.shape[-2:])
            parts = [self._entropy_reduction(c, R) for c in flat.split(chunk)]
            return torch.cat(parts).reshape(batch)
        return self._entropy_reduction(X, R)

    def _entropy_reduction(self, X: Tensor, R: Tensor) -> Tensor:
        r"""``forward`` on a ``batch_shape x q x d``-dim ``X`` in one piece."""
        q = X.shape[-2]
        _, L_R, z, prior_logits, h_prior = self._prior_terms(like=X)
        w, u = self._base_samples(q=q, like=X)
        tau = self.tau.to(X)

        S_XX_noisy, S_RX = self._cross_covariances(X, R)
        L_X = _small_cholesky(S_XX_noisy)
        # G = S_RX (S_XX + N)^{-1} is the Kalman gain; A = G L_X maps standardized
        # fantasies w to mean shifts, so that mu_R|y = mu_R + A w. The suffix _T
        # marks a transpose: A_T = A^T and G_T = G^T are q x m (_tf below marks
        # inputs after the model's input transform).
        if q == 1:  # triangular solves with 1 x 1 factors are divisions
            A_T = S_RX.transpose(-1, -2) / L_X
            G_T = A_T / L_X
        else:
            S_XR = S_RX.transpose(-1, -2)
            A_T = torch.linalg.solve_triangular(L_X, S_XR, upper=False)
            G_T = torch.linalg.solve_triangular(L_X.transpose(-1, -2), A_T, upper=True)
        # Joint draw of the simulated observation f_X + eps given the prior draw
        # f_R = mu_R + L_R z: mean part B z and residual part L_V u.
        B_T = _solve_shared_lower(L_R, S_RX)  # B^T, m x q
        V = S_XX_noisy - B_T.transpose(-1, -2) @ B_T
        jitter_X = RELATIVE_JITTER[X.dtype] * S_XX_noisy.diagonal(dim1=-2, dim2=-1)
        L_V = _small_cholesky(V + torch.diag_embed(jitter_X))
        sim = z @ B_T + u @ L_V.transpose(-1, -2)  # b x J x q
        # Matheron's rule: f_R|y = f_R + G (y - f_X - eps) with y = mu_X + L_X w,
        # whose mean part is mu_R + A w and draw part f_R - mu_R - G (f_X + eps -
        # mu_X). The logits of (fantasy, inner draw) are the sum of the two; the
        # prior mean mu_R goes with the draws (prior_logits = (mu_R + L_R z) /
        # tau), so that each inner draw's row maximum sits near the pair's
        # (see _factorized_pmax_entropy) and the fantasies carry only A w.
        post_logits = prior_logits - (sim @ G_T) / tau  # b x J x m
        shifts = (w @ A_T) / tau  # b x F x m

        h_post = _factorized_pmax_entropy(shifts, post_logits).mean(dim=-1)  # b
        return h_prior - h_post

    def _cross_covariances(self, X: Tensor, R: Tensor) -> tuple[Tensor, Tensor]:
        r"""``S_XX + N`` (``b x q x q``) and ``S_RX`` (``b x m x q``) at ``X``.

        For a single-output, unbatched exact GP with a homoskedastic Gaussian
        likelihood, no posterior transform and no or a ``Standardize`` outcome
        transform (e.g. BoTorch's default ``SingleTaskGP``), from the cached
        ``W_R = L_K^{-1} k(D, R)``:
        ``S_RX = s^2 (k(R, X) - W_R^T W_X)`` and
        ``S_XX + N = s^2 (k(X, X) - W_X^T W_X + sigma^2 I)`` with
        ``W_X = L_K^{-1} k(D, X)``, ``L_K L_K^T = k(D, D) + sigma^2 I`` and ``s``
        the outcome transform's scale, which costs ``O(n q (n + m))`` per
        t-batch. Any other model goes through its joint posterior over
        ``[X, R]`` with the observation noise, whose ``R-R`` block is computed
        and not used.
        """
        cache = self._exact_gp_terms(like=X)
        if cache is None:
            XR = torch.cat([X, R.expand(*X.shape[:-2], *R.shape)], dim=-2)
            # The observation noise only adds to the diagonal, so the cross
            # block S_RX is the noiseless one and the X block is S_XX + N, with
            # outcome transforms and fixed or heteroskedastic noise respected.
            posterior = cast(
                GPyTorchPosterior,
                self.model.posterior(
                    XR,
                    observation_noise=True,
                    posterior_transform=self.posterior_transform,
                ),
            )
            cov = posterior.distribution.covariance_matrix  # b x (q + m) x (q + m)
            q = X.shape[-2]
            return cov[..., :q, :q], cov[..., q:, :q]
        DR, n, L_K, W_R, noise, scale = cache
        covar_module = cast(Kernel, self.model.covar_module)
        X_tf = self.model.transform_inputs(X)  # _tf: transformed inputs
        batch, q = X_tf.shape[:-2], X_tf.shape[-2]
        # One eager kernel call for the training, representer and X rows
        # against X: GPyTorch's lazy kernel evaluation costs several times the
        # arithmetic at these sizes.
        rows = torch.cat([DR.expand(*batch, *DR.shape), X_tf], dim=-2)
        with gpytorch.settings.lazily_evaluate_kernels(False):
            k_all = covar_module(rows, X_tf).to_dense()
        k_DX, k_RX, k_XX = k_all[..., :n, :], k_all[..., n:-q, :], k_all[..., -q:, :]
        W_X = torch.linalg.solve_triangular(L_K, k_DX, upper=False)  # b x n x q
        S_RX = scale * (k_RX - W_R.transpose(-1, -2) @ W_X)
        eye = torch.eye(q, dtype=X.dtype, device=X.device)
        S_XX_noisy = scale * (k_XX - W_X.transpose(-1, -2) @ W_X + noise * eye)
        return S_XX_noisy, S_RX

    def _exact_gp_terms(self, like: Tensor) -> tuple[Tensor, ...] | None:
        r"""The ``X``-independent terms of the fast path of ``_cross_covariances``.

        None where the model does not qualify (cached like ``_prior_terms``).
        """
        key = ("exact", like.dtype, like.device)
        if key in self._prior_cache:
            return cast(tuple[Tensor, ...] | None, self._prior_cache[key])
        model, terms = self.model, None
        outcome_transform = getattr(model, "outcome_transform", None)
        train_inputs = getattr(model, "train_inputs", None)
        if (
            self.posterior_transform is None
            and isinstance(model, ExactGP)
            and getattr(model, "num_outputs", None) == 1
            and type(model.likelihood) is GaussianLikelihood
            and hasattr(model, "covar_module")
            and isinstance(train_inputs, tuple)
            and len(train_inputs) == 1
            and train_inputs[0].dim() == 2
            and len(getattr(model, "_input_batch_shape", ())) == 0
            and (outcome_transform is None or type(outcome_transform) is Standardize)
        ):
            with torch.no_grad():
                model.eval()
                D = train_inputs[0].to(like)
                noise = model.likelihood.noise.to(like).squeeze(-1)
                K = model.covar_module(D).to_dense()
                L_K = psd_safe_cholesky(
                    K + noise * torch.eye(D.shape[0], dtype=K.dtype, device=K.device)
                )
                R_tf = model.transform_inputs(self.representer_points.to(like))
                k_DR = model.covar_module(D, R_tf).to_dense()
                W_R = torch.linalg.solve_triangular(L_K, k_DR, upper=False)
                scale = torch.ones((), dtype=like.dtype, device=like.device)
                if outcome_transform is not None:
                    scale = outcome_transform.stdvs.to(like).squeeze() ** 2
            terms = (torch.cat([D, R_tf]), D.shape[0], L_K, W_R, noise, scale)
        self._prior_cache[key] = terms
        return terms

    def _prior_terms(self, like: Tensor) -> tuple[Tensor, ...]:
        r"""The X-independent terms, computed once per dtype and device.

        Returns ``mu_R / tau``, the Cholesky factor ``L_R`` of the (jittered)
        posterior covariance at the representers, the inner base samples ``z``
        (``J x m``), the scaled prior draws ``(mu_R + L_R z) / tau`` and the
        current entropy ``H[p_max | D]``.
        Cached: build a new ``qES`` after refitting or conditioning the model, as
        with BoTorch's cached-Cholesky acquisition functions.
        """
        key = (like.dtype, like.device)
        if key not in self._prior_cache:
            R = self.representer_points.to(like)
            with torch.no_grad():
                posterior = self.model.posterior(
                    R, posterior_transform=self.posterior_transform
                )
                if not isinstance(posterior, GPyTorchPosterior):
                    raise UnsupportedError(
                        "qES conditions a Gaussian posterior analytically, but the "
                        f"model's posterior is a {type(posterior).__name__} (e.g. "
                        "from a non-linear outcome transform such as Bilog)."
                    )
                mu_R = posterior.mean.squeeze(-1)
                S_RR = posterior.distribution.covariance_matrix
                # A fixed jitter relative to the prior variance (not only the
                # adaptive one of psd_safe_cholesky) for clustered representers.
                diag = S_RR.diagonal(dim1=-2, dim2=-1)
                jitter = RELATIVE_JITTER[like.dtype] * diag.mean(-1, keepdim=True)
                L_R = psd_safe_cholesky(S_RR + torch.diag_embed(jitter.expand_as(diag)))
                tau = self.tau.to(like)
                z = self._inner_base_samples(m=R.shape[-2], like=like)
                prior_dev = z @ L_R.transpose(-1, -2) / tau  # (model batch) x J x m
                prior_logits = (mu_R / tau).unsqueeze(-2) + prior_dev
                # One fantasy with no shift: the logits are the prior draws,
                # split as in _entropy_reduction.
                no_shift = torch.zeros_like(mu_R).unsqueeze(-2)
                h_prior = _factorized_pmax_entropy(no_shift, prior_logits).squeeze(-1)
            self._prior_cache[key] = (mu_R / tau, L_R, z, prior_logits, h_prior)
        return cast(tuple[Tensor, ...], self._prior_cache[key])

    def _base_samples(self, q: int, like: Tensor) -> tuple[Tensor, Tensor]:
        r"""Fixed normal draws for a batch of ``q``.

        Fantasies ``w`` (``F x q``) and the residual part ``u`` (``J x q``) of the
        simulated observations.
        """
        key = (q, like.dtype, like.device)
        if key not in self._base_sample_cache:
            F, J = self.num_fantasies, self.num_inner_samples
            w = NormalQMCEngine(d=q, seed=self.seed, inv_transform=True).draw(F)
            assert w is not None  # draw returns None only when given `out`
            # u pairs index-by-index with the Sobol z, so it must not be Sobol
            # too: two scrambled Sobol sequences are dependent at equal indices.
            gen = torch.Generator().manual_seed(self.seed + 2)
            u = torch.randn(J, q, generator=gen, dtype=torch.double)
            self._base_sample_cache[key] = (
                w.to(like.device, like.dtype),
                u.to(like.device, like.dtype),
            )
        return self._base_sample_cache[key]

    def _inner_base_samples(self, m: int, like: Tensor) -> Tensor:
        r"""Fixed normal draws ``z`` (``J x m``) for ``f(R)``."""
        engine = NormalQMCEngine(d=m, seed=self.seed + 1, inv_transform=True)
        z = engine.draw(self.num_inner_samples)
        assert z is not None  # draw returns None only when given `out`
        return z.to(like.device, like.dtype)


def _small_cholesky(S: Tensor) -> Tensor:
    r"""``psd_safe_cholesky`` of a batch of ``q x q`` matrices, ``sqrt`` for q = 1.

    For ``1 x 1`` matrices whose entries are all positive, the factor is the
    elementwise square root (what LAPACK computes, without one LAPACK call per
    batch member); anything else goes through ``psd_safe_cholesky`` with its
    jitter and errors.
    """
    if S.shape[-1] == 1 and bool((S > 0).all()):
        return S.sqrt()
    L: Tensor = psd_safe_cholesky(S)
    return L


def _solve_shared_lower(L: Tensor, B: Tensor) -> Tensor:
    r"""``L^{-1} B`` for a lower-triangular ``L`` (``m x m``) shared by the batch.

    With an unbatched ``L`` and a batched ``B`` (``batch x m x q``), the batch
    is moved into the columns of one ``m x (batch q)`` right-hand side: one
    triangular solve instead of one per batch member (each column is solved
    alone, so the result is the same).
    """
    if L.dim() != 2 or B.dim() < 3:
        solution: Tensor = torch.linalg.solve_triangular(L, B, upper=False)
        return solution
    batch, m, q = B.shape[:-2], B.shape[-2], B.shape[-1]
    columns = B.reshape(-1, m, q).permute(1, 0, 2).reshape(m, -1)
    solved: Tensor = torch.linalg.solve_triangular(L, columns, upper=False)
    return solved.reshape(m, -1, q).permute(1, 0, 2).reshape(*batch, m, q)


def _factorized_pmax_entropy(a: Tensor, d: Tensor) -> Tensor:
    r"""Entropies of softmax-relaxed ``p_max`` for every fantasy.

    Computed without the ``fantasies x inner samples x representers`` tensor.
    For fantasy ``f`` the logits of inner draw ``j`` are ``a_f + d_j`` (the
    fantasy's mean shift plus the conditioned draw, both divided by tau), and
    ``p_f = mean_j softmax(a_f + d_j)``. The softmax factorizes: with
    ``A = exp(a - max a)`` and ``E = exp(d - max d)`` (row-wise shifts), the
    normalizers are ``N = A E^T`` and ``p_f = A_f * (N_f^{-1} E) / J``, two
    matrix products of ``F x J x m`` multiply-adds and nothing larger than
    ``F x J`` or ``F x m`` in memory. The shifts are exact (they cancel), but a
    pair whose logits peak at different representers can have ``N`` underflow;
    pairs with ``N < _NORMALIZER_FLOOR`` are left out of the products and their
    softmax computed directly. Such pairs are few when the larger, shared part
    of the logits is in ``d`` (``qES`` puts the posterior mean there), since
    each row of ``d`` then peaks near where its pairs' logits do. The products
    run in float64 whatever the input dtype, since float32's exponent range
    (about ``e^{-87}``) would send most pairs to the direct path. Equal to the
    entropy computed through the full tensor up to rounding, gradients included
    (tested). A representer whose probability underflows to exactly zero
    contributes ``0 * log(tiny) = 0`` and a finite gradient, where
    ``xlogy(p, p)`` would back-propagate ``0 / 0``.

    The gradient is written out (``_FactorizedPmaxEntropy``): four more matrix
    products of the same size, and a few elementwise passes, where autograd
    would record and replay about thirty small operations per call; the
    derivatives are those autograd takes of the forward arithmetic. There is no
    second derivative (``qES`` is optimized with gradients only).

    Args:
        a: A ``batch x F x m``-dim tensor of scaled fantasy mean shifts.
        d: A ``batch x J x m``-dim tensor of scaled conditioned draws (batch
            shapes broadcast).

    Returns:
        A ``batch x F``-dim tensor of entropies in nats, in ``a``'s dtype.
    """
    h: Tensor = _FactorizedPmaxEntropy.apply(a, d)  # type: ignore[no-untyped-call]
    return h


class _FactorizedPmaxEntropy(torch.autograd.Function):
    r"""``_factorized_pmax_entropy`` with its gradient written out.

    Notation as in ``_factorized_pmax_entropy`` (per batch member): ``A`` is
    ``F x m``, ``E`` is ``J x m``, ``N = A E^T``, ``M = 1 / N`` on the kept
    pairs and 0 on the others, ``P = M E`` and ``p = A * P / J`` (plus the
    directly computed softmaxes of the other pairs). With ``g_p`` the gradient
    with respect to ``p``, the chain rule through these definitions gives
    ``g_A = g_p * P / J + g_N E``, ``g_E = M^T g_P + g_N^T A`` with
    ``g_P = g_p * A / J``, ``g_M = g_P E^T`` and ``g_N = -g_M M^2``; then
    ``g_a = g_A A`` and ``g_d = g_E E`` where the logit was not raised to
    ``_LOG_FLOOR`` (``clamp_min`` passes no gradient where it clamps) and the
    row maxima, which cancel, carry none. The directly computed pairs are
    differentiated by autograd in the backward pass. Differentiable once: a
    second derivative (e.g. ``create_graph=True``) raises an error.
    """

    @staticmethod
    def forward(ctx: Any, a: Tensor, d: Tensor) -> Tensor:
        batch = torch.broadcast_shapes(a.shape[:-2], d.shape[:-2])
        F, J, m = a.shape[-2], d.shape[-2], a.shape[-1]
        a64 = a.double().expand(*batch, F, m).reshape(-1, F, m)
        d64 = d.double().expand(*batch, J, m).reshape(-1, J, m)
        # Shifted logits are clamped at _LOG_FLOOR so that no exponential, and no
        # product of two in the matrix products, is subnormal (subnormal
        # arithmetic is about 100x slower on x86); see _LOG_FLOOR for why this
        # leaves the entropy unchanged to rounding.
        x = a64 - a64.amax(dim=-1, keepdim=True)
        y = d64 - d64.amax(dim=-1, keepdim=True)
        A = x.clamp_min(_LOG_FLOOR).exp_()
        E = y.clamp_min(_LOG_FLOOR).exp_()
        N = A @ E.transpose(-1, -2)  # B x F x J
        ok = N >= _NORMALIZER_FLOOR
        all_ok = bool(ok.all())
        M = N.clamp_min_(_NORMALIZER_FLOOR).reciprocal_()
        if not all_ok:
            M = M.masked_fill_(~ok, 0.0)
        P = M @ E  # B x F x m
        p = A * P / J
        pairs: tuple[Tensor, ...] = ()
        if not all_ok:
            b_idx, f_idx, j_idx = (~ok).nonzero(as_tuple=True)
            direct = torch.softmax(a64[b_idx, f_idx] + d64[b_idx, j_idx], dim=-1) / J
            p = p.index_put((b_idx, f_idx), direct, accumulate=True)
            pairs = (b_idx, f_idx, j_idx)
        log_p = p.clamp_min(torch.finfo(p.dtype).tiny).log()
        h = -(p * log_p).sum(dim=-1)
        ctx.save_for_backward(a64, d64, x, y, A, E, M, P, p, log_p, *pairs)
        ctx.shapes = (a.shape, d.shape, a.dtype, d.dtype, batch)
        return h.reshape(*batch, F).to(a.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_h: Tensor) -> tuple[Tensor, Tensor]:
        a64, d64, x, y, A, E, M, P, p, log_p, *pairs = ctx.saved_tensors
        a_shape, d_shape, a_dtype, d_dtype, batch = ctx.shapes
        J = E.shape[-2]
        tiny = torch.finfo(p.dtype).tiny
        # h = -sum_k p_k log(max(p_k, tiny)): the derivative is
        # -(log(max(p, tiny)) + [p >= tiny]).
        g_h = grad_h.double().reshape(-1, p.shape[-2], 1)
        g_p = -g_h * (log_p + (p >= tiny).to(p.dtype))
        g_P = g_p * A / J
        g_M = g_P @ E.transpose(-1, -2)  # B x F x J
        g_N = g_M.mul_(M).mul_(M).neg_()
        g_A = g_p * P / J + g_N @ E
        g_E = M.transpose(-1, -2) @ g_P + g_N.transpose(-1, -2) @ A
        g_a = g_A.mul_(A).masked_fill_(x < _LOG_FLOOR, 0.0)
        g_d = g_E.mul_(E).masked_fill_(y < _LOG_FLOOR, 0.0)
        if pairs:
            b_idx, f_idx, j_idx = pairs
            with torch.enable_grad():
                a_sub = a64[b_idx, f_idx].detach().requires_grad_(True)
                d_sub = d64[b_idx, j_idx].detach().requires_grad_(True)
                direct = torch.softmax(a_sub + d_sub, dim=-1) / J
                ga_sub, gd_sub = torch.autograd.grad(
                    direct, (a_sub, d_sub), grad_outputs=g_p[b_idx, f_idx]
                )
            g_a = g_a.index_put((b_idx, f_idx), ga_sub, accumulate=True)
            g_d = g_d.index_put((b_idx, j_idx), gd_sub, accumulate=True)
        F, m = a_shape[-2], a_shape[-1]
        g_a = g_a.reshape(*batch, F, m).sum_to_size(a_shape).to(a_dtype)
        g_d = g_d.reshape(*batch, J, m).sum_to_size(d_shape).to(d_dtype)
        return g_a, g_d


def _model_input_dim(model: Model) -> int | None:
    r"""The input dimension of a model's training data, if it exposes one."""
    train_X = training_inputs(model)
    return None if train_X is None else int(train_X.shape[-1])


#: Names that lived in this module before 0.2.0, now in ``representer_points``.
_MOVED_TO_REPRESENTER_POINTS = ("draw_representer_points", "REPRESENTER_SCHEMES")


def __getattr__(name: str) -> object:
    # Deprecated aliases for one release: the names moved with the sampler.
    if name in _MOVED_TO_REPRESENTER_POINTS:
        warnings.warn(
            f"`botorch_ext.acquisition.entropy_search.{name}` moved to "
            f"`botorch_ext.acquisition.representer_points.{name}` (also exported "
            "by `botorch_ext.acquisition`); the old path will be removed in the "
            "next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(representer_points, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
