r"""The EULBO study's ablations, as runner methods outside the curated list.

Each attribute is a method for ``--method`` / ``--methods`` as
``benchmarks.eulbo.ablations:<attribute>`` (run from the repository root with
``PYTHONPATH=.``), e.g.::

    PYTHONPATH=. botorch-ext compare --problem hartmann6 --budget 300 \
        --methods eulbo-ei,benchmarks.eulbo.ablations:eulbo_ei_joint_lbfgs ...

``register()`` registers them in this process under the names of the stored
results (``ABLATIONS``'s keys, e.g. ``eulbo-ei-joint-lbfgs``), for scripts that
call ``run_bo`` / ``run_grid`` themselves.

Every method but the kernel ablations pins the runner's SVGP kernel
(``svgp_ard_kernel``), the kernel these runs were made with.
"""

from __future__ import annotations

from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel

from botorch_ext.eulbo import EULBO, ELBOFitOptions, EULBOOptions, JointOptions
from botorch_ext.kernels import get_isotropic_rbf_kernel_with_dim_scaled_prior
from botorch_ext.runner.kernels import svgp_ard_kernel
from botorch_ext.runner.methods import register_method
from botorch_ext.runner.svgp import SVGPMethod


def authors_kernel(d: int) -> Kernel:
    r"""The kernel of the EULBO authors' code: an isotropic RBF with an
    outputscale, GPyTorch's defaults, no priors."""
    return ScaleKernel(RBFKernel())


def scaled_ard_kernel(d: int) -> Kernel:
    r"""An ARD RBF with an outputscale, no priors (tells ARD from isotropy)."""
    return ScaleKernel(RBFKernel(ard_num_dims=d))


def iso_prior_kernel(d: int) -> Kernel:
    r"""BoTorch's default kernel with one shared lengthscale and no outputscale."""
    return get_isotropic_rbf_kernel_with_dim_scaled_prior(d, use_outputscale=False)


def iso_prior_scaled_kernel(d: int) -> Kernel:
    r"""``iso_prior_kernel`` with a learned amplitude: ``EULBOModel``'s default."""
    return get_isotropic_rbf_kernel_with_dim_scaled_prior(d)


_LBFGS = EULBOOptions(elbo=ELBOFitOptions(optimizer="lbfgs"))
_ADAM = EULBOOptions(elbo=ELBOFitOptions(optimizer="adam"))

# The ELBO fitted by L-BFGS on the collapsed bound (today's default for n <= 2000).
eulbo_ei_lbfgs = SVGPMethod("ei", options=_LBFGS, kernel=svgp_ard_kernel)
elbo_svgp_lbfgs = SVGPMethod(None, options=_LBFGS, kernel=svgp_ard_kernel)
# The joint phase by full-batch L-BFGS-B instead of minibatch Adam.
eulbo_ei_joint_lbfgs = SVGPMethod(
    "ei",
    options=_LBFGS.replace(joint=JointOptions(optimizer="lbfgs")),
    kernel=svgp_ard_kernel,
)
# TuRBO-EULBO with the Adam ELBO fit, with the utility's weight in the w-steps 0
# (the joint phase still fits the ELBO and moves x, the utility does not shape
# w), and the same pipeline's EULBO and ELBO for reference.
turbo_eulbo_ei_w0 = SVGPMethod(
    "ei",
    turbo=True,
    options=_ADAM,
    objective=EULBO(utility_weight=0.0),
    kernel=svgp_ard_kernel,
)
turbo_eulbo_ei_adam = SVGPMethod(
    "ei", turbo=True, options=_ADAM, kernel=svgp_ard_kernel
)
turbo_elbo_svgp_adam = SVGPMethod(
    None, turbo=True, options=_ADAM, kernel=svgp_ard_kernel
)
# Kernel ablations: the authors' isotropic kernel, its ARD version, and an
# isotropic kernel with BoTorch's dimension-scaled prior (with and without an
# outputscale).
elbo_svgp_iso = SVGPMethod(None, kernel=authors_kernel)
eulbo_ei_iso = SVGPMethod("ei", kernel=authors_kernel)
eulbo_kg_iso = SVGPMethod("kg", kernel=authors_kernel)
elbo_svgp_ard_scaled = SVGPMethod(None, kernel=scaled_ard_kernel)
turbo_elbo_svgp_iso = SVGPMethod(None, turbo=True, kernel=authors_kernel)
elbo_svgp_iso_prior = SVGPMethod(None, kernel=iso_prior_kernel)
eulbo_ei_iso_prior = SVGPMethod("ei", kernel=iso_prior_kernel)
turbo_elbo_svgp_iso_prior = SVGPMethod(None, turbo=True, kernel=iso_prior_kernel)
elbo_svgp_iso_prior_scaled = SVGPMethod(None, kernel=iso_prior_scaled_kernel)
turbo_elbo_svgp_iso_prior_scaled = SVGPMethod(
    None, turbo=True, kernel=iso_prior_scaled_kernel
)
# The 2 x 2 of the authors' loop (the runner's eulbo-ei-authors / elbo-svgp-authors)
# against the package's: eulbo-ei and elbo-svgp with EULBOModel's own default
# kernel (the isotropic RBF with BoTorch's priors), not the runner's ARD kernel.
eulbo_ei_default_kernel = SVGPMethod("ei")
elbo_svgp_default_kernel = SVGPMethod(None)
# The authors' loop in their TuRBO box (failure tolerance 32, a cube): the rover.
turbo_eulbo_ei_authors = SVGPMethod("ei", turbo=True, preset="authors")
turbo_elbo_svgp_authors = SVGPMethod(None, turbo=True, preset="authors")
# The package's two arms in the runner's TuRBO box, with EULBOModel's default kernel
# (the rover's 2 x 2 against the two above).
turbo_eulbo_ei_default_kernel = SVGPMethod("ei", turbo=True)
turbo_elbo_svgp_default_kernel = SVGPMethod(None, turbo=True)
# EULBOOptions.turbo() as it was for the stored *_bounded runs (code a874150): the
# bounded searches, with the carried fit's 100 iterations on the subset too.
BOUNDED = EULBOOptions.turbo(elbo=ELBOFitOptions(lbfgs_max_iter=100))
# The same two arms with the bounded searches (the speed check of the rover: against
# the two above, on the 2 x 2's seeds).
turbo_eulbo_ei_default_kernel_bounded = SVGPMethod("ei", turbo=True, options=BOUNDED)
turbo_elbo_svgp_default_kernel_bounded = SVGPMethod(None, turbo=True, options=BOUNDED)
# The runner's turbo-eulbo-ei and turbo-elbo-svgp (the ARD kernel) with the bounded
# searches: the 20,000-evaluation rover runs.
turbo_eulbo_ei_bounded = SVGPMethod(
    "ei", turbo=True, kernel=svgp_ard_kernel, options=BOUNDED
)
turbo_elbo_svgp_bounded = SVGPMethod(
    None, turbo=True, kernel=svgp_ard_kernel, options=BOUNDED
)
# The bounded searches with the carried ELBO fit's L-BFGS budget at 10 iterations
# instead of 100: above lbfgs_max_n points the fit uses a random subset, and more
# iterations on it lower the bound of all the data (step_cost.py --fit-max-iter).
# The BO check against the *_default_kernel_bounded arms, and the 20,000-evaluation
# runs with the ARD kernel.
FIT10 = EULBOOptions.turbo(elbo=ELBOFitOptions(lbfgs_max_iter=10))
turbo_eulbo_ei_default_kernel_fit10 = SVGPMethod("ei", turbo=True, options=FIT10)
turbo_elbo_svgp_default_kernel_fit10 = SVGPMethod(None, turbo=True, options=FIT10)
turbo_eulbo_ei_fit10 = SVGPMethod(
    "ei", turbo=True, kernel=svgp_ard_kernel, options=FIT10
)
turbo_elbo_svgp_fit10 = SVGPMethod(
    None, turbo=True, kernel=svgp_ard_kernel, options=FIT10
)
# The bounded searches with the budget of 10 for the subset fit only (above
# lbfgs_max_n points; runs to 2,000 evaluations are those of BOUNDED), which
# EULBOOptions.turbo() took after this check: the BO check continues the
# *_default_kernel_bounded runs from 2,000 evaluations (fork_run.py), and the
# 20,000-evaluation run has the ARD kernel.
SUBSET10 = EULBOOptions.turbo(
    elbo=ELBOFitOptions(lbfgs_max_iter=100, subset_max_iter=10)
)
turbo_eulbo_ei_default_kernel_subset10 = SVGPMethod("ei", turbo=True, options=SUBSET10)
turbo_elbo_svgp_default_kernel_subset10 = SVGPMethod(None, turbo=True, options=SUBSET10)
turbo_eulbo_ei_subset10 = SVGPMethod(
    "ei", turbo=True, kernel=svgp_ard_kernel, options=SUBSET10
)
turbo_elbo_svgp_subset10 = SVGPMethod(
    None, turbo=True, kernel=svgp_ard_kernel, options=SUBSET10
)

# The runner's turbo-eulbo-ei and turbo-elbo-svgp as they were before they took
# EULBOOptions.turbo() (EULBOOptions' defaults): the rover results recorded under
# those names before the change.
turbo_eulbo_ei_stored = SVGPMethod("ei", turbo=True, kernel=svgp_ard_kernel)
turbo_elbo_svgp_stored = SVGPMethod(None, turbo=True, kernel=svgp_ard_kernel)

#: The names of the stored results -> the methods.
ABLATIONS = {
    name.replace("_", "-"): method
    for name, method in dict(globals()).items()
    if isinstance(method, SVGPMethod)
}


def register() -> None:
    r"""Register ``ABLATIONS`` under their stored names in this process."""
    for name, method in ABLATIONS.items():
        register_method(name, method, summary=f"EULBO ablation ({name})")
