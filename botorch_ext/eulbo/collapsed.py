r"""The collapsed ELBO of an ``EULBOModel`` and its L-BFGS fit.

With a Gaussian likelihood the SVGP's ELBO maximized over ``q(u)`` has a closed
form [Titsias2009]_ (``collapsed_elbo``), a function of the inducing points and
hyperparameters only. ``fit_elbo_collapsed`` maximizes it by L-BFGS and then
sets ``q(u)`` to its closed-form optimum; it is the default ELBO fit
(``botorch_ext.eulbo.fit.fit_elbo`` with ``elbo.optimizer="auto"``).

One L-BFGS driver, the package's only one: BoTorch's SciPy L-BFGS-B
(``scipy_minimize``, as ``fit_gpytorch_mll`` and the joint phase use it), for
``n > m`` (inducing points and hyperparameters) and for ``n <= m`` (``Z = X``
fixed, the exact GP's hyperparameters). Reason: one driver and one stopping
rule, BoTorch's, for every L-BFGS search of the package; against PyTorch's
``LBFGS`` with a strong Wolfe line search it left the BO results level and its
iterations cost no more (the EULBO benchmark page, "One L-BFGS driver").

References:
    .. [Titsias2009]
        M. Titsias. Variational Learning of Inducing Variables in Sparse Gaussian
        Processes. AISTATS 2009.
"""

from __future__ import annotations

import math
import warnings
from typing import cast

import torch
from botorch.optim.core import OptimizationStatus, scipy_minimize
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from botorch_ext.eulbo.adam import w_parameters
from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.snapshot import Snapshot


def collapsed_elbo(model: EULBOModel, rows: Tensor | None = None) -> Tensor:
    r"""The SVGP's ELBO at the optimal ``q(u)``, per datum, priors included.

    With a Gaussian likelihood the ELBO maximized over ``q(u)`` has the closed
    form of [Titsias2009]_ (the "collapsed" bound), a function of the inducing
    points and hyperparameters only:

        L* = log N(y | mu_X, Q + s2 I) - tr(K_XX - Q) / (2 s2),
        Q = K_XZ K_ZZ^{-1} K_ZX,

    computed with ``Phi = L^{-1} K_ZX`` (``L L^T = K_ZZ`` with the variational
    strategy's jitter) and ``A = I + Phi Phi^T / s2`` by the matrix
    determinant lemma and Woodbury's identity, in ``O(n m^2)``. It equals
    ``model``'s (uncollapsed) full-data ELBO at the ``q(u)`` that
    ``EULBOModel.set_optimal_variational_distribution`` sets. As GPyTorch's
    ``VariationalELBO`` does, the hyperparameters' log priors are added and
    the total is divided by ``n``. With ``rows`` it is the bound of those
    training points alone (``n`` their number), the data of an SVGP fitted to
    a subset.

    Example:
        >>> value = collapsed_elbo(model)  # differentiable in Z and theta

    Args:
        model: An ``EULBOModel`` (its training data, inducing points, kernel,
            mean and Gaussian likelihood are used; its ``q(u)`` is not).
        rows: Indices of the training points to use; None for all.

    Returns:
        A scalar tensor, the per-datum bound.
    """
    gp = model.model
    strategy = gp.variational_strategy
    X = model.train_X_full if rows is None else model.train_X_full[rows]
    n = X.shape[-2]
    phi, r, s2, L_A = model.whitened_regression(rows)
    c = torch.linalg.solve_triangular(L_A, (phi @ r).unsqueeze(-1), upper=False)
    quad = (r @ r) / s2 - (c.squeeze(-1) @ c.squeeze(-1)) / s2**2
    logdet = n * torch.log(s2) + 2 * torch.log(torch.diagonal(L_A)).sum()
    # GPyTorch adds the jitter to the predictive variance too.
    k_diag = gp.covar_module(X, diag=True) + strategy.jitter_val
    trace = (k_diag.sum() - (phi**2).sum()) / s2
    total = -0.5 * (n * math.log(2 * math.pi) + logdet + quad + trace)
    log_prior = sum(
        prior.log_prob(closure(module)).sum()
        for modules in (gp, model.likelihood)
        for _, module, prior, closure, _ in modules.named_priors()
    )
    return cast(Tensor, (total + log_prior) / n)


def _lbfgs_search(
    model: EULBOModel, params: list[Tensor], max_iter: int, rows: Tensor | None
) -> tuple[int, bool]:
    r"""L-BFGS-B (BoTorch's SciPy driver, as ``fit_gpytorch_mll``) on the bound.

    Returns its iterations and whether SciPy reported success (a trial point
    where the bound is not finite ends the search early, at the last finite
    one). SciPy's default stopping rule (relative decrease ``ftol`` and
    projected gradient ``gtol``), as in ``fit_gpytorch_mll``.
    """

    def closure() -> tuple[Tensor, list[Tensor | None]]:
        for p in params:
            p.grad = None
        loss = -collapsed_elbo(model, rows)
        loss.backward()
        return loss.detach(), [p.grad for p in params]

    tensors = {f"w{i}": p for i, p in enumerate(params)}
    result = scipy_minimize(closure, tensors, options={"maxiter": max_iter})
    return result.step, result.status == OptimizationStatus.SUCCESS


def holds_every_input(model: EULBOModel, rows: Tensor | None = None) -> bool:
    r"""Whether the collapsed fit can place one inducing point on each input.

    True when the fit uses all the data (``rows`` is None) and the model has as
    many inducing points as training points (``n <= m``: ``EULBOModel`` then
    has ``m = n``). With ``Z = X``, ``Q = K_XX``, so the collapsed bound is the
    exact GP's log marginal likelihood, and no other ``Z`` gives more
    (the bound is a lower bound of it): ``fit_elbo_collapsed`` then fixes ``Z``
    at ``X`` and searches the hyperparameters only, which is the exact GP's fit.

    Example:
        >>> holds_every_input(EULBOModel(X[:20], Y[:20], num_inducing_points=100))
        True
    """
    Z = model.model.variational_strategy.inducing_points
    return rows is None and Z.shape[-2] == model.train_X_full.shape[-2]


def fit_elbo_collapsed(
    model: EULBOModel, max_iter: int = 500, rows: Tensor | None = None
) -> float:
    r"""Fit an ``EULBOModel`` by its ELBO to convergence: L-BFGS on the collapsed bound.

    Maximizes ``collapsed_elbo`` (the ELBO with ``q(u)`` at its optimum) over
    the inducing points and hyperparameters by full-batch L-BFGS-B (BoTorch's
    ``scipy_minimize``, SciPy's stopping rule), from the model's current
    state, then sets ``q(u)`` to its closed-form optimum
    (``set_optimal_variational_distribution``). The optimum is the ELBO's
    optimum over all of ``w``, the objective of ``fit_elbo``, reached without
    minibatch noise and without ``q(u)``'s ``O(m^2)`` parameters in the
    search. Each iteration costs ``O(n m^2)``.
    With ``rows`` the search maximizes the bound of those points only (an
    iteration then costs ``O(|rows| m^2)``); ``q(u)`` is still set to the
    optimum of all the data. Where the model has an inducing point per input
    (``holds_every_input``: ``n <= m``) the inducing points are set to the
    inputs and only the hyperparameters are searched: the bound is then the
    exact GP's log marginal likelihood, and this is the exact GP's fit.

    Example:
        >>> elbo_per_datum = fit_elbo_collapsed(model)

    Args:
        model: The model to fit, in place.
        max_iter: L-BFGS iteration budget.
        rows: Indices of the training points the search uses; None for all.

    Returns:
        The final per-datum ELBO of all the data (``collapsed_elbo``).

    Raises:
        ValueError: If ``rows`` is empty or names a point the model lacks.
    """
    n = model.train_X_full.shape[-2]
    if rows is not None and (
        rows.numel() == 0 or int(rows.min()) < 0 or int(rows.max()) >= n
    ):
        raise ValueError(
            f"`rows` must be a non-empty set of indices in [0, {n}), got "
            f"{rows.tolist() if rows.numel() <= 10 else rows}"
        )
    model.train()
    blocks = model.parameter_blocks()
    skip = {id(p) for p in blocks["variational"]}
    exact = holds_every_input(model, rows)
    if exact:
        # Z = X makes the bound the exact marginal likelihood, its maximum over
        # Z: only the hyperparameters are searched.
        Z = model.model.variational_strategy.inducing_points
        with torch.no_grad():
            Z.copy_(model.train_X_full)
        skip |= {id(p) for p in blocks["inducing_points"]}
    params = [p for p in w_parameters(model) if id(p) not in skip]
    start = Snapshot(params)
    value, failed, steps, success = math.nan, None, 0, True
    try:
        steps, success = _lbfgs_search(model, params, max_iter, rows)
        model.set_optimal_variational_distribution()
        with torch.no_grad():
            value = collapsed_elbo(model).item()
    # A trial point with a singular K_ZZ or A, or one where it has NaNs (e.g. an
    # overflowing lengthscale or outputscale of a kernel without priors).
    except (NotPSDError, NanError) as e:
        failed = str(e)
    if not math.isfinite(value):
        # Keep the state the fit started from rather than a broken one.
        start.restore()
        model.set_optimal_variational_distribution()
        with torch.no_grad():
            value = collapsed_elbo(model).item()
        if not math.isfinite(value):
            raise RuntimeError(
                "The ELBO is non-finite at the start of fit_elbo_collapsed."
            )
        warnings.warn(
            "fit_elbo_collapsed: L-BFGS reached a non-finite ELBO or a singular "
            f"K_ZZ ({failed or 'non-finite value'}); the starting state is kept.",
            RuntimeWarning,
            stacklevel=2,
        )
        steps, failed = 0, failed or "non-finite"
    model.eval()
    converged = failed is None and success and steps < max_iter
    model.last_fit = {
        "steps": steps,
        "elbo": value,
        "converged": converged,
        "rows": model.train_X_full.shape[-2] if rows is None else len(rows),
    }
    return value
