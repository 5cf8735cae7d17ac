r"""The "continuous" cylindrical Gram matrix as one autograd function, in row blocks.

``BOCKKernel`` evaluates its default configuration (the ``"continuous"``
center rule with the default Matern-5/2 radius kernel) on unbatched inputs with
it. Autograd's chain of ``n x m`` operations (the polynomial by Horner's rule,
the normalization, the radius kernel, their product) writes and reads a dozen
``n x m`` intermediates forward and three dozen backward; here every one of them
lives only for a block of rows that fits in cache, and the backward pass
recomputes them block by block from the saved ``n x m`` dot products.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

#: The entries of one row block of the Gram matrix, about ``rows x m`` (float64:
#: 512 KiB); the rows per block follow from it.
BLOCK_ELEMENTS = 2**16


def _blocks(n: int, m: int) -> list[slice]:
    rows = max(1, BLOCK_ELEMENTS // max(m, 1))
    return [slice(i, min(i + rows, n)) for i in range(0, n, rows)]


def _polynomial(c: list[float], t: Tensor) -> Tensor:
    r"""``sum_p c[p] t^p`` by Horner's rule; ``c`` the coefficients as floats."""
    out = torch.full_like(t, c[-1])
    for p in range(len(c) - 2, -1, -1):
        out.mul_(t).add_(c[p])
    return out


def _block_terms(
    dot: Tensor, r1: Tensor, r2: Tensor, s1: Tensor, s2: Tensor, c: list[float]
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    r"""``t = dot r1 r2``, ``H(t)``, ``d = s1 - s2``, ``e = exp(-|d|)`` and ``M(d)``."""
    t = dot * r1.unsqueeze(-1)
    t.mul_(r2)
    H = _polynomial(c, t)
    d = s1.unsqueeze(-1) - s2
    z = d.abs()
    e = z.neg().exp_()
    # Matern-5/2: (1 + z + z^2 / 3) exp(-z).
    M = z.div(3.0).add_(1.0).mul_(z).add_(1.0).mul_(e)
    return t, H, d, e, M


class CylindricalGram(torch.autograd.Function):
    r"""``K_ij = M(s1_i - s2_j) H(a1_i . a2_j r1_i r2_j) g1_i g2_j``.

    ``M(d) = (1 + |d| + d^2 / 3) exp(-|d|)`` is the Matern-5/2 correlation of
    scaled radii ``s = sqrt(5) w / l``, ``H(t) = sum_p c_p t^p`` the angular
    polynomial of the warped offsets' dot products (``a`` unit directions,
    ``r = |u|`` the offsets' norms) and ``g = N^{-1/2}`` its normalization.
    Unbatched: ``a1`` is ``n x d``, ``a2`` is ``m x d``, ``r1, s1, g1`` are
    ``n``-vectors, ``r2, s2, g2`` are ``m``-vectors and ``c`` holds the ``P + 1``
    weights. Gradients flow to every input. The value equals
    ``BOCKKernel``'s autograd path up to rounding (tested).
    """

    @staticmethod
    def forward(
        ctx: Any,
        a1: Tensor,
        a2: Tensor,
        r1: Tensor,
        r2: Tensor,
        s1: Tensor,
        s2: Tensor,
        g1: Tensor,
        g2: Tensor,
        c: Tensor,
    ) -> Tensor:
        r"""The ``n x m`` Gram matrix; saves the dot products for the backward.

        With one row block (``n m <= BLOCK_ELEMENTS``, e.g. a fit's Gram matrix
        of a few hundred points) it also saves the block's terms, which the
        backward pass then reads instead of recomputing them.
        """
        dot = a1 @ a2.mT
        K = torch.empty_like(dot)
        coefficients = c.tolist()  # read once, not once per block and power
        blocks = _blocks(*dot.shape)
        terms: tuple[Tensor, ...] = ()
        for rows in blocks:
            t, H, d, e, M = _block_terms(
                dot[rows], r1[rows], r2, s1[rows], s2, coefficients
            )
            if len(blocks) == 1:
                K = M * H
                K.mul_(g1.unsqueeze(-1)).mul_(g2)
                terms = (t, H, d, e, M)
            else:
                K[rows] = M.mul_(H).mul_(g1[rows].unsqueeze(-1)).mul_(g2)
        ctx.save_for_backward(a1, a2, dot, r1, r2, s1, s2, g1, g2, c, *terms)
        ctx.same_directions = a1 is a2
        return K

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        r"""Gradients of every input, computed block by block."""
        a1, a2, dot, r1, r2, s1, s2, g1, g2, c, *terms = ctx.saved_tensors
        need = ctx.needs_input_grad
        P = c.shape[0] - 1
        # Derivative coefficients p c_p of H'(t), and both as floats, read once.
        dc = c[1:] * torch.arange(1, P + 1, dtype=c.dtype, device=c.device)
        coefficients, derivative = c.tolist(), dc.tolist()
        # g_X: the gradient with respect to X, accumulated over the row blocks.
        g_dot = torch.zeros_like(dot) if (need[0] or need[1]) else None
        g_r1, g_s1, g_g1 = (torch.zeros_like(v) for v in (r1, s1, g1))
        g_r2, g_s2, g_g2 = (torch.zeros_like(v) for v in (r2, s2, g2))
        # The c_p's gradients summed over the blocks (0-d tensors).
        g_c_sums: list[Tensor] = []
        for rows in _blocks(*dot.shape):
            dot_b, r1_b = dot[rows], r1[rows]
            if terms:  # the one block's, saved by the forward pass
                t, H, d, e, M = terms
            else:
                t, H, d, e, M = _block_terms(
                    dot_b, r1_b, r2, s1[rows], s2, coefficients
                )
            Gg = grad[rows] * g1[rows].unsqueeze(-1)
            Gg.mul_(g2)
            Q = Gg * M  # the gradient with respect to H
            GH = Gg.mul_(H)  # the gradient with respect to M
            # g: K = (M H g1 g2), so dK/dg1_i = sum_j G M H g2 = sum_j Q H / g1.
            QH = Q * H
            g_g1[rows] = QH.sum(-1)
            g_g2 += QH.sum(-2)
            # c_p: sum Q t^p.
            block_sums = [Q.sum()]
            if P > 0:
                Qt = Q * t
                block_sums.append(Qt.sum())
                for _ in range(2, P + 1):
                    block_sums.append(Qt.mul_(t).sum())
            g_c_sums = (
                block_sums
                if not g_c_sums
                else [a + b for a, b in zip(g_c_sums, block_sums, strict=True)]
            )
            # t: Q H'(t); then t = dot r1 r2.
            if P > 0:
                grad_t = _polynomial(derivative, t).mul_(Q)
                gtd = grad_t * dot_b
                g_r1[rows] = gtd @ r2
                g_r2 += r1_b @ gtd
                if g_dot is not None:
                    g_dot[rows] = grad_t.mul_(r1_b.unsqueeze(-1)).mul_(r2)
            # M'(d) = -(d / 3)(1 + |d|) exp(-|d|).
            Md = d.abs().add_(1.0).mul_(d).mul_(e).mul_(GH)
            g_s1[rows] = Md.sum(-1).mul_(-1.0 / 3.0)
            g_s2 += Md.sum(-2).mul_(1.0 / 3.0)
        g_c = torch.stack(g_c_sums)
        g_g1 = g_g1 / g1
        g_g2 = g_g2 / g2
        g_a1 = g_a2 = None
        if g_dot is not None and ctx.same_directions:
            # a1 is a2 (a Gram matrix of one input): one product for both slots.
            g_a1, need = (g_dot + g_dot.mT) @ a1, (True, False, *need[2:])
        elif g_dot is not None:
            g_a1 = g_dot @ a2 if need[0] else None
            g_a2 = g_dot.mT @ a1 if need[1] else None
        grads = (g_a1, g_a2, g_r1, g_r2, g_s1, g_s2, g_g1, g_g2, g_c)
        return tuple(g if n else None for g, n in zip(grads, need, strict=True))
