r"""The BOCK study's ablations, as runner methods outside the curated list.

Each attribute is a method for ``--method`` / ``--methods`` as
``benchmarks.bock.ablations:<attribute>`` (from the repository root with
``PYTHONPATH=.``); ``register()`` registers them under the names of the stored
results (``ABLATIONS``'s keys, e.g. ``bock-direction``).
"""

from __future__ import annotations

from botorch.acquisition import qLogNoisyExpectedImprovement

from benchmarks.bock.kernels import (
    bock_continuous_kernel,
    bock_direction_kernel,
    bock_scaled_kernel,
    bock_square_kernel,
)
from botorch_ext.runner.acquisition import (
    AcquisitionMethod,
    WarmStartRun,
    acquisition_method,
)
from botorch_ext.runner.methods import register_method
from botorch_ext.runner.protocol import Proposal

#: The continuous center rule without the linear-weight floor.
bock_continuous = acquisition_method(
    qLogNoisyExpectedImprovement, kernel=bock_continuous_kernel
)
#: The ``"direction"`` center rule (the default before the continuous one).
bock_direction = acquisition_method(
    qLogNoisyExpectedImprovement, kernel=bock_direction_kernel
)
#: ``bock`` with a learned amplitude, as in the authors' code.
bock_scaled = acquisition_method(
    qLogNoisyExpectedImprovement, kernel=bock_scaled_kernel
)

#: ``bock`` with each MAP fit of a run started at the run's previous fit
#: (measured: cheaper fits, worse regret on Rosenbrock-20; see the README).
bock_warm = acquisition_method(
    qLogNoisyExpectedImprovement, kernel="bock", warm_start=True
)

#: ``bock`` with its MAP fit stopped at a relative reduction of the negative
#: log marginal likelihood (per point) of 1e-6 per L-BFGS-B iteration instead
#: of SciPy's 2.2e-9, its acquisition maximized with SciPy's default: the
#: runner's ``bock`` between the two checks of the README's section 5.3.
bock_ftol = acquisition_method(
    qLogNoisyExpectedImprovement, kernel="bock", fit_options={"ftol": 1e-6}
)
#: ``bock`` with SciPy's default ``ftol`` (the runner's ``bock`` before it took
#: ``BOCK_FIT_FTOL``).
bock_scipy_ftol = acquisition_method(qLogNoisyExpectedImprovement, kernel="bock")

#: ``bock`` with its acquisition's L-BFGS-B also stopped at a relative reduction
#: of 1e-6 (SciPy's default 2.2e-9), as its MAP fit is: the arm checked before
#: it became the runner's ``bock`` (section 5.3).
bock_acqf_ftol = acquisition_method(
    qLogNoisyExpectedImprovement,
    kernel="bock",
    fit_options={"ftol": 1e-6},
    acqf_options={"ftol": 1e-6, "factr": None},
)

#: The names of the stored results -> the methods.
ABLATIONS = {
    "bock-warm": bock_warm,
    "bock-ftol": bock_ftol,
    "bock-scipy-ftol": bock_scipy_ftol,
    "bock-acqf-ftol": bock_acqf_ftol,
    "bock-continuous": bock_continuous,
    "bock-direction": bock_direction,
    "bock-scaled": bock_scaled,
}


def register() -> None:
    r"""Register ``ABLATIONS`` under their stored names in this process."""
    for name, method in ABLATIONS.items():
        register_method(name, method, summary=f"BOCK ablation ({name})")


def _bock_fit(kernel="bock", **fit_options):
    # The runner's ``bock`` (acquisition ftol BOCK_ACQF_FTOL) with another kernel
    # or other MAP-fit L-BFGS-B options.
    return acquisition_method(
        qLogNoisyExpectedImprovement,
        kernel=kernel,
        fit_options=fit_options,
        acqf_options={"ftol": 1e-6, "factr": None},
    )


#: ``bock`` with its MAP fit stopped at ``ftol`` 1e-5 (the runner's: 1e-6).
bock_fit_ftol1e5 = _bock_fit(ftol=1e-5)
#: ``bock`` with its MAP fit stopped at ``ftol`` 1e-4.
bock_fit_ftol1e4 = _bock_fit(ftol=1e-4)
#: ``bock`` with its MAP fit stopped after 30 L-BFGS-B iterations (or ``ftol`` 1e-6).
bock_fit_it30 = _bock_fit(ftol=1e-6, maxiter=30)


class FreshNoiseWarmStartRun(WarmStartRun):
    r"""A warm-started run whose fits start the noise at its initial value.

    The other hyperparameters start at the previous fit's values; the noise,
    where the plain warm start stayed in the basin of the early fits, starts
    afresh each time.
    """

    def propose(self, *args, **kwargs) -> Proposal:
        r"""Propose as ``WarmStartRun`` does; then forget the fitted noise."""
        proposal = super().propose(*args, **kwargs)
        assert self.hyperparameters is not None
        self.hyperparameters = {
            name: value
            for name, value in self.hyperparameters.items()
            if "noise" not in name
        }
        return proposal


class WarmStartWith(AcquisitionMethod):
    r"""A warm-started ``AcquisitionMethod`` whose runs are ``run_class`` objects.

    Args:
        spec: What the method proposes with (an ``acquisition_method``'s spec).
        run_class: A ``WarmStartRun`` subclass (what its runs carry over).
    """

    def __init__(self, spec, run_class: type[WarmStartRun]) -> None:
        r"""See the class docstring."""
        super().__init__(spec, warm_start=True)
        self.run_class = run_class

    def new_run(self) -> WarmStartRun:
        r"""A fresh run (with no hyperparameters to start from yet)."""
        return self.run_class(self.spec)


#: ``bock`` (both of its L-BFGS-B tolerances) with each MAP fit started at the
#: previous fit's hyperparameters except the noise.
bock_warm_fresh_noise = WarmStartWith(_bock_fit(ftol=1e-6).spec, FreshNoiseWarmStartRun)


#: How far below the largest the angular weights' softmax logits may start a
#: warm-started fit of ``bock_warm_soft`` (each weight at least e^-4 ~ 2% of the
#: largest, where the softmax's gradient has not vanished).
SOFT_LOGIT_FLOOR = 4.0


class SoftWarmStartRun(FreshNoiseWarmStartRun):
    r"""A fresh-noise warm start whose angular logits start within a band.

    The previous fit's softmax logits of the angular weights are shifted so that
    the largest is 0 and floored at ``-SOFT_LOGIT_FLOOR``: a weight an early fit
    drove to 0 starts small but able to grow.
    """

    def propose(self, *args, **kwargs) -> Proposal:
        r"""Propose as ``FreshNoiseWarmStartRun`` does; then pull the logits in."""
        proposal = super().propose(*args, **kwargs)
        assert self.hyperparameters is not None
        for name, value in self.hyperparameters.items():
            if name.endswith("raw_angular_weights"):
                shifted = value - value.max()
                self.hyperparameters[name] = shifted.clamp(min=-SOFT_LOGIT_FLOOR)
        return proposal


#: ``bock`` warm-started except the noise, with the angular logits pulled into
#: a band (``SoftWarmStartRun``).
bock_warm_soft = WarmStartWith(_bock_fit(ftol=1e-6).spec, SoftWarmStartRun)


#: ``bock`` with ``"square"`` angular weights (``bock_square_kernel``): the same
#: fit and acquisition tolerances (``ftol`` 1e-6).
bock_square = _bock_fit(kernel=bock_square_kernel, ftol=1e-6)
#: ``bock_square`` with its MAP fit stopped at ``ftol`` 1e-5.
bock_square_ftol1e5 = _bock_fit(kernel=bock_square_kernel, ftol=1e-5)
#: ``bock_square`` warm-started as ``bock_warm_fresh_noise`` is (do warm starts
#: lose only because softmax logits stall far out?).
bock_square_warm_fresh_noise = WarmStartWith(
    _bock_fit(kernel=bock_square_kernel, ftol=1e-6).spec, FreshNoiseWarmStartRun
)
