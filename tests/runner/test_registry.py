r"""The method registry: the curated list, the extension points (``register_method``
and ``module:attribute``), the pinned SVGP kernel and the benchmark ablations."""

import math
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase
from gpytorch.kernels import RBFKernel, ScaleKernel

from benchmarks.eulbo import ablations
from botorch_ext.runner import svgp
from botorch_ext.runner.kernels import svgp_ard_kernel
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.methods import (
    METHOD_SUMMARIES,
    METHODS,
    get_method,
    register_method,
)
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.protocol import FunctionMethod
from tests.eulbo.helpers import options_with

SHORT_SVGP_FIT = options_with(max_steps=40, check_every=10)


def _forget(*names):
    for name in names:
        METHODS.pop(name, None)
        METHOD_SUMMARIES.pop(name, None)


class TestRegistry(BotorchTestCase):
    def test_curated_list(self):
        # At most 25 user-facing methods, each with a one-line summary; no
        # ablation among them.
        self.assertLessEqual(len(METHODS), 25)
        self.assertEqual(set(METHOD_SUMMARIES), set(METHODS))
        for name, summary in METHOD_SUMMARIES.items():
            self.assertTrue(summary, name)
            self.assertNotIn("\n", summary, name)
        for name in METHODS:
            for ablation in ("-iso", "-lbfgs", "-adam", "-w0", "-direction"):
                self.assertNotIn(ablation, name)

    def test_unknown_method(self):
        # A short pointer to the listing, not every name.
        with self.assertRaisesRegex(
            ValueError, "unknown method 'x'; see `botorch-ext methods`"
        ) as cm:
            get_method("x")
        self.assertNotIn("qlogei", str(cm.exception))
        with self.assertRaisesRegex(ValueError, "cannot import module 'no_such_mod'"):
            get_method("no_such_mod:m")
        with self.assertRaisesRegex(ValueError, "has no 'nothing'"):
            get_method("benchmarks.eulbo.ablations:nothing")
        with self.assertRaisesRegex(ValueError, "must be callable"):
            get_method("benchmarks.eulbo.ablations:ABLATIONS")
        self.assertNotIn("benchmarks.eulbo.ablations:ABLATIONS", METHODS)
        # RunConfig.validate reports it the same way.
        with self.assertRaisesRegex(ValueError, "see `botorch-ext methods`"):
            RunConfig("branin", "x", budget=12).validate()

    def test_register_method(self):
        def mine(train_X, train_Y, bounds, q, seed, options):
            r"""My method: the lower corner.

            More text.
            """
            return bounds[:1].expand(q, -1)

        self.addCleanup(_forget, "mine")
        # A plain function is registered as a FunctionMethod.
        registered = register_method("mine", mine)
        self.assertIsInstance(registered, FunctionMethod)
        self.assertIs(registered.function, mine)
        self.assertIs(get_method("mine"), registered)
        self.assertEqual(METHOD_SUMMARIES["mine"], "My method: the lower corner.")
        self.assertTrue(get_method("mine").model_based)
        self.assertIs(register_method("mine", mine), registered)  # the same: fine
        with self.assertRaisesRegex(ValueError, "'mine' is already registered"):
            register_method("mine", get_method("random"))
        register_method("mine", get_method("random"), summary="r", replace=True)
        self.assertFalse(get_method("mine").model_based)  # the flags follow it
        self.assertEqual(METHOD_SUMMARIES["mine"], "r")
        for bad in ("", "a,b", "a b"):
            with self.assertRaisesRegex(ValueError, "method name must be"):
                register_method(bad, mine)
        with self.assertRaisesRegex(ValueError, "'x' must be callable"):
            register_method("x", 3)
        self.assertNotIn("x", METHODS)

    def test_module_attribute(self):
        # module:attribute resolves, registers under that name and keeps the
        # method's flags (SVGP methods standardize their outcomes themselves).
        spec = "benchmarks.eulbo.ablations:eulbo_ei_joint_lbfgs"
        self.addCleanup(_forget, spec)
        method = get_method(spec)
        self.assertIs(method, ablations.eulbo_ei_joint_lbfgs)
        self.assertIs(METHODS[spec], method)
        self.assertTrue(method.standardizes_outcomes)
        self.assertEqual(method.options.joint.optimizer, "lbfgs")
        bad = RunConfig(
            "branin",
            spec,
            budget=12,
            options=MethodOptions(outcome_transform="bilog"),
        )
        with self.assertRaisesRegex(ValueError, "standardizes its outcomes"):
            bad.validate()
        # register() uses the names of the stored results.
        names = set(ablations.ABLATIONS)
        self.addCleanup(_forget, *names)
        ablations.register()
        self.assertIs(get_method("turbo-eulbo-ei-w0"), ablations.turbo_eulbo_ei_w0)
        self.assertTrue(
            {"eulbo-ei-lbfgs", "elbo-svgp-iso-prior-scaled", "eulbo-kg-iso"} <= names
        )

    def test_svgp_methods_pin_botorchs_ard_kernel(self):
        # The kernel the runs were made with: BoTorch's ARD RBF with its
        # dimension-scaled LogNormal(sqrt(2) + log(d) / 2, sqrt(3)) lengthscale
        # prior, started at its mode, the 0.025 floor kept by a softplus.
        for d in (2, 60):
            kernel = svgp_ard_kernel(d)
            mu = math.sqrt(2) + 0.5 * math.log(d)
            self.assertIs(type(kernel), RBFKernel)
            self.assertEqual(kernel.ard_num_dims, d)
            self.assertEqual(kernel.lengthscale.shape, torch.Size([1, d]))
            self.assertAlmostEqual(kernel.lengthscale_prior.loc.item(), mu, places=5)
            self.assertAlmostEqual(
                kernel.lengthscale_prior.scale.item(), math.sqrt(3), places=5
            )
            self.assertAllClose(
                kernel.lengthscale, torch.full((1, d), math.exp(mu - 3.0))
            )
            kernel.raw_lengthscale.data.fill_(-50.0)
            self.assertGreaterEqual(kernel.lengthscale.min().item(), 2.5e-2 - 1e-7)
        self.assertIsNot(svgp_ard_kernel(2), svgp_ard_kernel(2))
        for name in sorted(n for n, m in METHODS.items() if m.standardizes_outcomes):
            if get_method(name).preset == "authors":
                # The authors' loop sets its own kernel (their ScaleKernel(RBF)).
                self.assertIsNone(get_method(name).kernel, name)
                continue
            self.assertIs(get_method(name).kernel, svgp_ard_kernel, name)
        # ... and it is the one the first model gets.
        X = torch.rand(10, 3, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        box = torch.stack([torch.zeros(3), torch.ones(3)]).double()
        opts = MethodOptions(num_restarts=1, raw_samples=8, num_inducing_points=5)
        with mock.patch.object(svgp, "EULBOOptions", SHORT_SVGP_FIT):
            run = get_method("elbo-svgp").new_run()
            run.propose(X, Y, box, 1, 0, opts)
        kernel = run.previous.model.covar_module
        self.assertIs(type(kernel), RBFKernel)
        self.assertEqual(kernel.ard_num_dims, 3)
        # Every non-kernel ablation pins it too.
        for name in ("eulbo-ei-lbfgs", "eulbo-ei-joint-lbfgs", "turbo-eulbo-ei-w0"):
            self.assertIs(ablations.ABLATIONS[name].kernel, svgp_ard_kernel, name)


class TestEULBOAblations(BotorchTestCase):
    def test_ablation_kernels_and_model_arguments(self):
        torch.manual_seed(0)
        Xw = torch.rand(12, 2, dtype=torch.double)
        Yw = -((Xw - 0.4) ** 2).sum(-1, keepdim=True)
        box = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        opts = MethodOptions(num_restarts=2, raw_samples=16, num_inducing_points=6)
        # Model arguments reach the first model and survive carry_over.
        run = ablations.turbo_eulbo_ei_w0.new_run()
        for _ in range(2):
            cand = run.propose(Xw, Yw, box, 2, 0, opts).candidates
            self.assertEqual(run.objective.utility_weight, 0.0)
            self.assertEqual(run.options.elbo.optimizer, "adam")
            Xw = torch.cat([Xw, cand])
            Yw = torch.cat([Yw, -((cand - 0.4) ** 2).sum(-1, keepdim=True)])
        # A method's kernel is made per run: two runs start from the same kernel
        # and propose the same point; the carried model keeps the kernel's type.
        for method, n_lengthscales in (
            (ablations.elbo_svgp_iso, 1),
            (ablations.elbo_svgp_ard_scaled, 2),
        ):
            proposals, kernels = [], []
            for _ in range(2):
                run = method.new_run()
                cand = run.propose(Xw, Yw, box, 1, 0, opts).candidates
                X2, Y2 = torch.cat([Xw, cand]), torch.cat([Yw, Yw[:1]])
                proposal = run.propose(X2, Y2, box, 1, 0, opts)
                kernel = run.previous.model.covar_module
                self.assertIsInstance(kernel, ScaleKernel)
                self.assertTrue(run.previous.carried_state)
                lengthscales = proposal.diagnostics["lengthscales"]
                self.assertEqual(len(lengthscales), n_lengthscales)
                proposals.append(cand)
                kernels.append(kernel)
            self.assertTrue(torch.equal(proposals[0], proposals[1]))
            self.assertIsNot(kernels[0], kernels[1])
        # The isotropic kernel with BoTorch's dimension-scaled prior: one
        # lengthscale, the prior's LogNormal(sqrt(2) + log(d) / 2, sqrt(3)),
        # started at its mode exp(mu - sigma^2), a floor Adam cannot cross.
        for d in (2, 60):
            kernel = ablations.iso_prior_kernel(d)
            mu = math.sqrt(2) + 0.5 * math.log(d)
            self.assertEqual(kernel.lengthscale.numel(), 1)
            self.assertAlmostEqual(kernel.lengthscale_prior.loc.item(), mu, places=5)
            self.assertAlmostEqual(
                kernel.lengthscale_prior.scale.item(), math.sqrt(3), places=5
            )
            self.assertAlmostEqual(
                kernel.lengthscale.item(), math.exp(mu - 3.0), places=4
            )
            kernel.raw_lengthscale.data.fill_(-50.0)
            self.assertGreaterEqual(kernel.lengthscale.item(), 2.5e-2)
        for method, outer in (
            (ablations.elbo_svgp_iso_prior, "RBFKernel"),
            (ablations.elbo_svgp_iso_prior_scaled, "ScaleKernel"),
        ):
            run = method.new_run()
            proposal = run.propose(Xw, Yw, box, 1, 0, opts)
            kernel = run.previous.model.covar_module
            self.assertEqual(type(kernel).__name__, outer)
            self.assertEqual(len(proposal.diagnostics["lengthscales"]), 1)
        # The scaled version keeps the prior on its base kernel's lengthscale.
        self.assertAlmostEqual(
            kernel.base_kernel.lengthscale_prior.scale.item(), math.sqrt(3), places=5
        )
        self.assertAlmostEqual(kernel.outputscale_prior.concentration.item(), 2.0)

    def test_bock_ablations(self):
        from benchmarks.bock import ablations as bock_ablations

        self.assertEqual(
            set(bock_ablations.ABLATIONS),
            {
                "bock-continuous",
                "bock-direction",
                "bock-scaled",
                "bock-warm",
                "bock-ftol",
                "bock-scipy-ftol",
                "bock-acqf-ftol",
            },
        )
        spec = "benchmarks.bock.ablations:bock_direction"
        self.addCleanup(_forget, spec)
        self.assertIs(get_method(spec), bock_ablations.bock_direction)
        self.assertFalse(get_method(spec).standardizes_outcomes)
