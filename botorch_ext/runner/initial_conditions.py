r"""Starting points for the acquisition optimizer.

``"botorch"`` (BoTorch's own heuristic) or ``"bock"``, the candidate scheme of
[Oh2018bock]_ (``bock_initial_conditions``).
"""

from __future__ import annotations

import torch
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from botorch_ext.runner.options import MethodOptions

#: The choices of ``MethodOptions.initial_conditions``.
INITIAL_CONDITIONS = ("botorch", "bock")
#: Scales of the Gaussian sprays around the incumbent, as fractions of the box.
SPRAY_SCALES = (1e-3, 1e-2, 1e-1)


def bock_initial_conditions(
    acqf: AcquisitionFunction,
    bounds: Tensor,
    q: int,
    train_X: Tensor,
    train_Y: Tensor,
    options: MethodOptions,
    seed: int,
    batch_size: int = 512,
) -> Tensor:
    r"""Starting points for ``optimize_acqf`` by the candidate scheme of [Oh2018bock]_.

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
    # Drawn by the CPU generator (the same draws on every device), then moved.
    noise = torch.randn(n_spray, q, bounds.shape[-1], generator=gen, dtype=bounds.dtype)
    noise, scale = noise.to(bounds.device), scale.to(bounds.device)
    spray = best + noise * scale * (bounds[1] - bounds[0])
    spray = torch.maximum(torch.minimum(spray, bounds[1]), bounds[0])
    raw = torch.cat([sobol, spray.to(sobol)])
    with torch.no_grad():
        values = torch.cat([acqf(X_) for X_ in raw.split(batch_size)])
    top = values.topk(min(options.num_restarts, len(values))).indices
    return raw[top]
