r"""The predictive distribution of an ``EULBOModel``: dense tensors, kept between calls.

An ``EULBOModel`` is a whitened SVGP: GPyTorch's ``VariationalStrategy`` with
``q(v) = N(m, S)`` on the whitened inducing values ``v = L^{-1} u``, where
``L L^T = K_ZZ + jitter I``. Its predictive distribution at ``X`` is

    mean(X) = mu(X) + K_XZ a,                     a = L^{-T} m,
    cov(X)  = K_XX + jitter I + K_XZ B K_ZX,      B = L^{-T} (S - I) L^{-1},

which is the arithmetic of ``VariationalStrategy.forward`` in eval mode.
``a`` and ``B`` depend on the model's state ``w`` and not on ``X``.

Choices:

* Dense tensors instead of GPyTorch's lazy ``LinearOperator`` algebra, and
  ``a`` and ``B`` kept across calls. Reason: optimizing an acquisition function
  evaluates the posterior hundreds of times per BO step at a fixed ``w`` (for
  q = 20 points in 60 dimensions, ``q x m`` and ``q x q`` matrices); there the
  operators' shape bookkeeping, not the arithmetic, took most of each
  evaluation (the EULBO page of the documentation, its cost table).
* The kept terms are recomputed whenever a tensor of the model changes (each
  parameter's and buffer's version counter and storage are part of the key),
  so an optimizer step, ``load_state_dict`` or ``to`` is seen. As
  GPyTorch's eval-mode caches do, they keep their autograd graph, so the
  gradient of the posterior with respect to ``w`` is right as well.
* The terms live in a table keyed weakly by the model, not on the model, so
  that a model stays picklable and deep-copyable after a posterior call.

Example:
    >>> dist = dense_predictive(model, X)  # X: batch x q x d, model space
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import torch
from botorch.models.approximate_gp import SingleTaskVariationalGP
from gpytorch.distributions import MultivariateNormal
from gpytorch.variational import VariationalStrategy
from linear_operator.operators import DenseLinearOperator
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor


class _Terms(NamedTuple):
    key: tuple[tuple[int, int, torch.dtype], ...]
    grad: bool
    a: Tensor
    B: Tensor


_TERMS: weakref.WeakKeyDictionary[SingleTaskVariationalGP, _Terms] = (
    weakref.WeakKeyDictionary()
)


def supports_dense_predictive(model: SingleTaskVariationalGP) -> bool:
    r"""Whether ``dense_predictive`` applies to ``model`` in its current state.

    True for a single-output model with GPyTorch's whitened
    ``VariationalStrategy`` whose ``q(v)`` is an initialized multivariate
    normal; otherwise the caller uses GPyTorch's path.
    """
    strategy = model.model.variational_strategy
    return (
        model.num_outputs == 1
        and type(strategy) is VariationalStrategy
        and bool(strategy.variational_params_initialized.item())
        and isinstance(strategy.variational_distribution, MultivariateNormal)
    )


def _state_key(
    model: SingleTaskVariationalGP,
) -> tuple[tuple[int, int, torch.dtype], ...]:
    tensors = [*model.parameters(), *model.buffers()]
    return tuple((t.data_ptr(), t._version, t.dtype) for t in tensors)


def _terms(model: SingleTaskVariationalGP) -> tuple[Tensor, Tensor]:
    r"""``a = L^{-T} m`` and ``B = L^{-T} (S - I) L^{-1}``, recomputed on a change."""
    key, grad = _state_key(model), torch.is_grad_enabled()
    kept = _TERMS.get(model)
    if kept is not None and kept.key == key and kept.grad == grad:
        return kept.a, kept.B
    strategy = model.model.variational_strategy
    Z = strategy.inducing_points
    eye = torch.eye(Z.shape[-2], dtype=Z.dtype, device=Z.device)
    K_ZZ = model.model.covar_module(Z).to_dense() + strategy.jitter_val * eye
    L = psd_safe_cholesky(K_ZZ)
    q_v = strategy.variational_distribution
    a = torch.linalg.solve_triangular(L.mT, q_v.mean.unsqueeze(-1), upper=True)
    L_inv = torch.linalg.solve_triangular(L, eye, upper=False)
    B = L_inv.mT @ (q_v.covariance_matrix - eye) @ L_inv
    _TERMS[model] = _Terms(key, grad, a, B)
    return a, B


def dense_predictive(model: SingleTaskVariationalGP, X: Tensor) -> MultivariateNormal:
    r"""The latent predictive distribution of ``model`` at ``X`` (model space).

    The same distribution as ``model.model(X)`` in eval mode, computed in
    dense tensors with the terms that do not depend on ``X`` kept across
    calls (module docstring).

    Args:
        model: An ``EULBOModel`` (a BoTorch ``SingleTaskVariationalGP``) for
            which ``supports_dense_predictive`` holds.
        X: A ``batch x q x d`` tensor of inputs, already input-transformed.

    Returns:
        A ``MultivariateNormal`` with ``batch x q`` mean and a
        ``batch x q x q`` covariance held as a ``DenseLinearOperator`` (a lazy
        covariance, as GPyTorch's, so that BoTorch's outcome transforms and
        indexing treat it as they treat GPyTorch's).
    """
    gp = model.model
    strategy = gp.variational_strategy
    a, B = _terms(model)
    Z = strategy.inducing_points
    K_XZ = gp.covar_module(X, Z).to_dense()
    K_XX = gp.covar_module(X).to_dense()
    eye = torch.eye(X.shape[-2], dtype=X.dtype, device=X.device)
    mean = gp.mean_module(X) + (K_XZ @ a).squeeze(-1)
    covar = K_XX + strategy.jitter_val * eye + K_XZ @ B @ K_XZ.mT
    return MultivariateNormal(mean, DenseLinearOperator(covar))
