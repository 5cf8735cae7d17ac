r"""Shared fixtures for the acquisition tests: small GPs and a prefix sampler."""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP
from botorch.posteriors import Posterior
from botorch.sampling.normal import IIDNormalSampler
from botorch.utils.testing import MockModel, MockPosterior
from torch import Tensor


def make_gp(
    n: int = 8,
    d: int = 2,
    dtype: torch.dtype = torch.double,
    device: torch.device | None = None,
    batch_shape: tuple[int, ...] = (),
    noise: float | None = None,
    seed: int = 0,
) -> SingleTaskGP:
    r"""A SingleTaskGP on a smooth function with fixed, unfitted hyperparameters.

    Fixed hyperparameters keep the tests fast and deterministic; ``noise`` gives a
    fixed-noise likelihood (``train_Yvar``) when set.
    """
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(*batch_shape, n, d, generator=gen, dtype=torch.double)
    Y = torch.sin(6.0 * X).sum(-1, keepdim=True) + 0.1 * X.sum(-1, keepdim=True)
    tkw = {"dtype": dtype, "device": device}
    X, Y = X.to(**tkw), Y.to(**tkw)
    Yvar = None if noise is None else torch.full_like(Y, noise)
    model = SingleTaskGP(X, Y, train_Yvar=Yvar, outcome_transform=None)
    model.covar_module.lengthscale = 0.3
    if noise is None:
        model.likelihood.noise = 1e-3
    return model.eval()


def unbatched_member(model: SingleTaskGP, index: int) -> SingleTaskGP:
    r"""The unbatched ``SingleTaskGP`` built from member ``index`` of a batched one.

    The member's training data and every hyperparameter (each state entry with a
    leading batch dimension is indexed by ``index``) are copied into a new model
    with no batch shape, built as ``make_gp`` builds its models, so that the
    member's acquisition value can be compared with the batched model's.

    Args:
        model: A ``SingleTaskGP`` with a one-dimensional batch shape (as made by
            ``make_gp(batch_shape=(b,))``).
        index: The member.

    Returns:
        The member as an unbatched model, in eval mode.
    """
    X = model.train_inputs[0][index]
    Y = model.train_targets[index].unsqueeze(-1)
    fixed = type(model.likelihood).__name__ == "FixedNoiseGaussianLikelihood"
    Yvar = model.likelihood.noise[index].unsqueeze(-1) if fixed else None
    member = SingleTaskGP(X, Y, train_Yvar=Yvar, outcome_transform=None)
    batched_state = model.state_dict()
    state = {}
    for key, value in member.state_dict().items():
        source = batched_state[key]
        state[key] = source if source.shape == value.shape else source[index]
        if state[key].shape != value.shape:
            raise ValueError(f"cannot take member {index} of {key}")
    member.load_state_dict(state)
    return member.eval()


def make_mock(
    samples: Tensor, mean: Tensor | None = None, variance: Tensor | None = None
) -> MockModel:
    r"""A MockModel whose posterior returns exactly ``samples`` (``n x ...``).

    With ``base_shape`` set to the per-sample shape, a sampler with
    ``sample_shape = [n]`` receives the ``n`` distinct mock samples.
    """
    posterior = MockPosterior(
        mean=mean, variance=variance, samples=samples, base_shape=samples.shape[1:]
    )
    return MockModel(posterior)


class PrefixSampler(IIDNormalSampler):
    r"""IID sampler whose base samples for a batch of ``q`` points are the first
    ``q`` columns of one fixed ``n x q_max`` draw, so that a batch and its
    extension by a point share the samples of the common points exactly."""

    def __init__(self, num_samples: int, q_max: int, seed: int = 0) -> None:
        super().__init__(sample_shape=torch.Size([num_samples]))
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer(
            "full", torch.randn(num_samples, q_max, generator=gen, dtype=torch.double)
        )

    def _construct_base_samples(self, posterior: Posterior) -> None:
        shape = self._get_collapsed_shape(posterior=posterior)  # n x 1.. x q x 1
        q = shape[-2]
        Z = self.full[:, :q].to(device=posterior.device, dtype=posterior.dtype)
        Z = Z.reshape(shape[0], *([1] * (len(shape) - 3)), q, 1).expand(shape)
        self.register_buffer("base_samples", Z.contiguous())
