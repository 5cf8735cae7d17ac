r"""EULBO: approximation-aware Bayesian optimization [Maus2024eulbo]_, in one home.

The method of [Maus2024eulbo]_ chooses the next query jointly with the fit of a
sparse variational GP, by maximizing the expected-utility lower bound (EULBO)

    L_ELBO(w) + utility_weight * E_{q_w(f)} log u(x, f)

over the candidates ``x`` and the SVGP state ``w``. Its parts, and the one way
data flows through them in a BO step:

* ``model``: ``EULBOModel``, the SVGP (data, state ``w``, posterior, carry-over
  to the next step); it holds no fit settings and imports nothing below.
* ``predictive``: the arithmetic of the model's posterior (dense tensors, the
  terms that do not depend on the inputs kept until the state changes).
* ``objective``: ``EULBO``, the objective as an object that holds its ELBO
  scale, utility weight and incumbent, as GPyTorch's ``VariationalELBO`` holds
  ``num_data`` and ``beta``.
* ``utilities``: the expected log utilities (soft improvement, one-shot soft
  KG) that the objective adds to the ELBO.
* ``options``: ``EULBOOptions``, the optimizer settings, grouped by concern.
* ``fit`` (with ``adam`` and ``collapsed``): ``fit_elbo``, the ELBO fit, by
  BoTorch's SciPy L-BFGS-B (the package's one L-BFGS driver) or Adam.
* ``joint``, ``joint_adam``, ``joint_epochs``: the joint phase's optimizers.
* ``state`` and ``inducing``: how a model starts (checked data, kernel,
  carried state) and its inducing points when none are carried
  (``LowMemoryGreedyVarianceReduction``, ``LowMemoryGreedyImprovementReduction``:
  BoTorch's allocators without the ``n x n`` training kernel).
* ``snapshot``: ``Snapshot``, the one way the fits and joint phases save a
  state and restore it (rollback, best state, restart).
* ``optimize``: ``optimize_eulbo``, one BO step (fit, warm start, joint phase).

Carried state -> ``fit_elbo(model, options, objective)`` -> warm start
(``optimize_acqf``) -> joint ``(x, w)`` ascent of the objective -> candidates
and the state for the next step (``model.carry_over``). Every function takes
the model, the objective and the options as arguments and reaches the model
through its public BoTorch/GPyTorch surface (``model.model``, ``likelihood``,
``variational_strategy``, ``parameter_blocks``, ``whitened_regression``); the
model never calls back into them.

Why one folder for the method rather than BoTorch's layering (``models/``,
``optim/``, ``acquisition/``): the EULBO is one objective over a model and its
query together, so its model, objective, utilities, fits and settings change
together and are read together; spread over BoTorch's folders they made a
reader cross six folders (and ``models/`` import ``acquisition/``) to follow
one step. GPyTorch keeps a method whose parts belong together in one package
the same way (``gpytorch.variational``). Inside the folder the layering is
BoTorch's: the model at the bottom, the objective above it, the fits and the
joint step on top.

The names that botorch_ext 0.1.0 exported from ``botorch_ext.models``,
``botorch_ext.optim`` and ``botorch_ext.acquisition`` still import from there
with a ``DeprecationWarning`` for one release (see docs/migration.md).

References:
    .. [Maus2024eulbo]
        N. Maus, K. Kim, G. Pleiss, D. Eriksson, J. P. Cunningham and J. R. Gardner.
        Approximation-Aware Bayesian Optimization. NeurIPS 2024.
"""

from botorch_ext.eulbo.fit import fit_elbo
from botorch_ext.eulbo.inducing import (
    LowMemoryGreedyImprovementReduction,
    LowMemoryGreedyVarianceReduction,
)
from botorch_ext.eulbo.model import EULBOModel
from botorch_ext.eulbo.objective import EULBO
from botorch_ext.eulbo.optimize import optimize_eulbo, warm_start
from botorch_ext.eulbo.options import (
    AUTHORS_WINDOW,
    ELBO_SCALES,
    AdamOptions,
    ELBOFitOptions,
    EULBOOptions,
    JointOptions,
    StoppingOptions,
    UtilityOptions,
    WarmStartOptions,
)
from botorch_ext.eulbo.utilities import (
    expected_log_soft_improvement,
    expected_log_utility,
    gauss_hermite_normal,
    mc_log_soft_improvement,
)

__all__ = [
    "AUTHORS_WINDOW",
    "ELBO_SCALES",
    "AdamOptions",
    "ELBOFitOptions",
    "EULBO",
    "EULBOModel",
    "EULBOOptions",
    "JointOptions",
    "LowMemoryGreedyImprovementReduction",
    "LowMemoryGreedyVarianceReduction",
    "StoppingOptions",
    "UtilityOptions",
    "WarmStartOptions",
    "expected_log_soft_improvement",
    "expected_log_utility",
    "fit_elbo",
    "gauss_hermite_normal",
    "mc_log_soft_improvement",
    "optimize_eulbo",
    "warm_start",
]
