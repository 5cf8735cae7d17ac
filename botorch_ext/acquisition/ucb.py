r"""Parallel upper confidence bound (q-UCB) with the exact posterior mean.

References:
    .. [Wilson2017reparam]
        J. T. Wilson, R. Moriconi, F. Hutter and M. P. Deisenroth. The
        reparameterization trick for acquisition functions. NeurIPS Workshop on
        Bayesian Optimization, 2017.
"""

from __future__ import annotations

from botorch.acquisition.monte_carlo import qUpperConfidenceBound
from botorch.acquisition.objective import (
    IdentityMCObjective,
    LinearMCObjective,
    MCAcquisitionObjective,
    PosteriorTransform,
)
from botorch.models.model import Model
from botorch.posteriors.posterior import Posterior
from botorch.sampling.base import MCSampler
from torch import Tensor

from botorch_ext.validation import check_no_nan_inputs, check_positive

# Objectives that are affine in the samples: for these E[objective(Y)] equals
# objective(E[Y]), so the exact posterior mean can replace the sample mean.
_AFFINE_OBJECTIVES = (IdentityMCObjective, LinearMCObjective)


class qUCB(qUpperConfidenceBound):
    r"""MC-based parallel Upper Confidence Bound using the exact posterior mean.

    Appendix A of [Wilson2017reparam]_ writes UCB as a Gaussian integral,

    .. math::

        \text{q-UCB}(X) = E_z\big[\max_j \big(\mu_j + |(\tilde{L} z)_j|\big)\big],
        \qquad \tilde{L} \tilde{L}^\top = \tfrac{\beta \pi}{2} \Sigma,
        \quad z \sim N(0, I),

    whose Monte Carlo estimate (their eq. 10) is
    ``1/N sum_k max_j (mu_j + sqrt(beta pi / 2) |(L z_k)_j|)``. At ``q = 1`` this
    equals ``mu + sqrt(beta) sigma`` because ``E|z| = sqrt(2 / pi)``, and
    marginalising any subset of the batch recovers that subset's value, so adding a
    point never lowers it.

    This is a subclass of BoTorch's ``qUpperConfidenceBound`` (same arguments in
    the same order, same ``_get_beta_prime`` hook, same treatment of
    ``X_pending``, ensembles and constraints-as-``ConstrainedMCObjective``) whose
    only change is the centre of the samples: BoTorch centres them at their
    Monte Carlo mean, this class at the exact posterior mean ``mu``. The sample
    mean shrinks ``E|y - ybar|`` by ``sqrt((N - 1) / N)`` and adds
    ``sigma * zbar`` noise to every term, which inflates the estimator's variance.
    The exact mean is available when the objective is affine in the samples
    (``IdentityMCObjective``, ``LinearMCObjective``; any ``posterior_transform`` is
    already applied to the posterior). For ensemble models (e.g. a batch of
    MCMC hyperparameter draws) the per-member means are used and the value is
    averaged over members, as BoTorch does. For any other objective (including
    the ``ConstrainedMCObjective`` that the input constructor builds from
    ``constraints``), and for posteriors whose ``mean`` does not line up with the
    samples' shape, the class falls back to the sample mean, i.e. to BoTorch's
    estimator; so does a posterior without a closed-form mean (e.g. under a
    ``Bilog`` outcome transform).

    Example:
        >>> model = SingleTaskGP(train_X, train_Y)
        >>> sampler = SobolQMCNormalSampler(torch.Size([512]))
        >>> acqf = qUCB(model, 2.0, sampler)  # BoTorch's positional order
        >>> candidates, value = optimize_acqf(
        ...     acqf, bounds=bounds, q=3, num_restarts=10, raw_samples=512
        ... )
    """

    def __init__(
        self,
        model: Model,
        beta: float,
        sampler: MCSampler | None = None,
        objective: MCAcquisitionObjective | None = None,
        posterior_transform: PosteriorTransform | None = None,
        X_pending: Tensor | None = None,
    ) -> None:
        r"""q-Upper Confidence Bound with the exact posterior mean.

        Args:
            model: A fitted model.
            beta: The non-negative exploration weight; at ``q = 1`` the value is
                ``mu + sqrt(beta) sigma``. [Wilson2017reparam]_ used
                ``beta = sqrt(3)`` in their experiments (the input constructor's
                default; BoTorch's constructor defaults to ``0.2``).
            sampler: The sampler used to draw base samples. Defaults to BoTorch's
                ``SobolQMCNormalSampler`` with 512 samples.
            objective: The ``MCAcquisitionObjective`` under which the samples are
                evaluated. Defaults to ``IdentityMCObjective()``. Non-affine
                objectives use the sample mean (see the class docstring).
                Outcome constraints go in as a ``ConstrainedMCObjective``, as for
                ``qUpperConfidenceBound`` (the input constructor builds it).
            posterior_transform: A ``PosteriorTransform`` (optional); required to
                scalarize a multi-output model when ``objective`` is None.
            X_pending: A ``m x d``-dim tensor of points that have been submitted
                for evaluation but not yet evaluated; concatenated into ``X`` on
                every forward call.

        Raises:
            ValueError: If ``beta`` is negative, NaN or infinite.
            UnsupportedError: For a multi-output model without a scalarizing
                ``objective`` or ``posterior_transform``.
        """
        check_positive("beta", beta, allow_zero=True)
        super().__init__(
            model=model,
            beta=beta,
            sampler=sampler,
            objective=objective,
            posterior_transform=posterior_transform,
            X_pending=X_pending,
        )
        self.beta = float(beta)
        self.uses_exact_mean = isinstance(self.objective, _AFFINE_OBJECTIVES)

    def _non_reduced_forward(self, X: Tensor) -> Tensor:
        r"""Per-sample, per-point utilities ``mu_j + beta' |y_j - mu_j|``.

        BoTorch's ``SampleReducingMCAcquisitionFunction._non_reduced_forward``
        with the exact posterior mean handed to ``_sample_forward``.

        Args:
            X: A ``batch_shape x q x d``-dim tensor of candidates.

        Returns:
            A ``sample_shape x batch_shape x q``-dim tensor of utilities.
        """
        check_no_nan_inputs(X)
        posterior = self.model.posterior(
            X=X, posterior_transform=self.posterior_transform
        )
        samples = self.get_posterior_samples(posterior)
        obj = self.objective(samples=samples, X=X)
        mean = _exact_mean(posterior) if self.uses_exact_mean else None
        if mean is not None:
            mean = self.objective(samples=mean.unsqueeze(0), X=X).squeeze(0)
            if mean.shape != obj.shape[len(self.sample_shape) :]:
                mean = None  # e.g. a posterior whose mean is a mixture summary
        acqval = self._sample_forward(obj=obj, mean=mean)
        # A no-op: qUpperConfidenceBound takes no `constraints` (they enter
        # through a ConstrainedMCObjective); kept so the pipeline is BoTorch's.
        return self._apply_constraints(acqval=acqval, samples=samples)

    def _sample_forward(self, obj: Tensor, mean: Tensor | None = None) -> Tensor:
        r"""Map objective samples to q-UCB utilities.

        Args:
            obj: A ``sample_shape x batch_shape x q``-dim tensor of MC objective
                values.
            mean: The ``batch_shape x q``-dim centre of the samples; if omitted,
                the sample mean over all sample dimensions (BoTorch's centre for
                its one-dimensional sample shapes).

        Returns:
            A ``sample_shape x batch_shape x q``-dim tensor of utilities.
        """
        if mean is None:
            mean = obj.mean(dim=tuple(range(len(self.sample_shape))))
        return mean + self.beta_prime * (obj - mean).abs()


def _exact_mean(posterior: Posterior) -> Tensor | None:
    r"""The posterior mean, or None where the posterior cannot provide it.

    E.g. a ``TransformedPosterior`` under a non-linear outcome transform such as
    ``Bilog``, whose mean has no closed form.
    """
    try:
        # The stubs' Posterior declares no mean; BoTorch's posteriors have one.
        mean: Tensor = posterior.mean  # type: ignore[attr-defined]
    except NotImplementedError:
        return None
    return mean
