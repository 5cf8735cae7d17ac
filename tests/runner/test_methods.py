import io
import math
from unittest import mock

import torch
from botorch.models.transforms.outcome import Standardize
from botorch.utils.testing import BotorchTestCase

#: A short SVGP fit for tests of shapes, bounds and state (not of fit quality).
from botorch_ext.eulbo import fit as svgp_fit
from botorch_ext.runner import acquisition, fitting, kernels, methods, svgp
from botorch_ext.runner.fitting import fit_model
from botorch_ext.runner.methods import METHODS, get_method
from botorch_ext.runner.options import MethodOptions
from tests.eulbo.helpers import options_with

SHORT_SVGP_FIT = options_with(max_steps=40, check_every=10)


class TestMethods(BotorchTestCase):
    def test_every_method_proposes_q_points_in_bounds(self):
        torch.manual_seed(0)
        X = torch.rand(8, 3, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(3), torch.ones(3)]).double()
        options = MethodOptions(num_restarts=2, raw_samples=16)
        for name in METHODS:
            for q in (1, 2):
                # Short SGLD and SVGP budgets keep bock-sgmcmc and the SVGP
                # methods fast here (shapes and bounds are what is tested).
                with (
                    mock.patch.object(fitting, "SGMCMC_BUDGET_STEPS", 20),
                    mock.patch.object(svgp, "EULBOOptions", SHORT_SVGP_FIT),
                    mock.patch.object(methods, "JES_NUM_OPTIMA", 4),
                ):
                    run = get_method(name).new_run()
                    cand = run.propose(X, Y, bounds, q, 0, options).candidates
                self.assertEqual(cand.shape, torch.Size([q, 3]), name)
                self.assertTrue(((cand >= 0) & (cand <= 1)).all(), name)
        model_based = {name for name, m in METHODS.items() if m.model_based}
        self.assertEqual(model_based, set(METHODS) - {"random", "sobol"})

    def test_botorch_baselines_use_botorchs_acquisitions(self):
        from botorch.acquisition import (
            qLowerBoundMaxValueEntropy,
            qMaxValueEntropy,
            qProbabilityOfImprovement,
            qUpperConfidenceBound,
        )
        from botorch.acquisition.joint_entropy_search import qJointEntropySearch

        torch.manual_seed(0)
        X = torch.rand(8, 2, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        seen = {}

        def fake_optimize_acqf(acqf, bounds, q, **kwargs):
            seen["acqf"], seen["kwargs"] = acqf, kwargs
            return torch.full((q, 2), 0.5).double(), torch.zeros(())

        expected = {
            "botorch-qucb": (qUpperConfidenceBound, False),
            "botorch-qpi": (qProbabilityOfImprovement, False),
            "qjes": (qJointEntropySearch, False),
            "qmes": (qMaxValueEntropy, True),
            "gibbon": (qLowerBoundMaxValueEntropy, True),
        }
        for name, (acqf_class, sequential) in expected.items():
            with (
                mock.patch.object(acquisition, "optimize_acqf", fake_optimize_acqf),
                mock.patch.object(methods, "JES_NUM_OPTIMA", 3),
            ):
                get_method(name).new_run().propose(X, Y, bounds, 2, 0, MethodOptions())
            acqf = seen["acqf"]
            self.assertIs(type(acqf), acqf_class, name)
            self.assertEqual(seen["kwargs"]["sequential"], sequential, name)
            self.assertEqual(seen["kwargs"]["raw_samples"], 512, name)
            # The same fitted model as qlogei: BoTorch's SingleTaskGP, Standardize.
            self.assertIsInstance(acqf.model.outcome_transform, Standardize, name)
        # BoTorch's Getting-started beta (BoTorch stores sqrt(beta * pi / 2)).
        ucb = get_method("botorch-qucb")
        with mock.patch.object(acquisition, "optimize_acqf", fake_optimize_acqf):
            ucb.new_run().propose(X, Y, bounds, 1, 0, MethodOptions())
        self.assertAlmostEqual(seen["acqf"].beta_prime, math.sqrt(0.1 * math.pi / 2))
        with mock.patch.object(acquisition, "optimize_acqf", fake_optimize_acqf):
            get_method("gibbon").new_run().propose(X, Y, bounds, 1, 0, MethodOptions())
        # 1000 uniform candidates, to which BoTorch's MES adds the 8 observed.
        self.assertEqual(seen["acqf"].candidate_set.shape, torch.Size([1008, 2]))
        with mock.patch.object(acquisition, "optimize_acqf", fake_optimize_acqf):
            with mock.patch.object(methods, "JES_NUM_OPTIMA", 3):
                get_method("qjes").new_run().propose(
                    X, Y, bounds, 1, 0, MethodOptions()
                )
        self.assertEqual(seen["acqf"].optimal_inputs.shape[-2:], torch.Size([1, 2]))
        self.assertEqual(seen["acqf"].optimal_inputs.shape[0], 3)

    def test_outcome_transforms(self):
        X = torch.rand(8, 2, dtype=torch.double)
        Y = -1e4 * (0.1 + X.sum(-1, keepdim=True))  # maximization sign of f > 0
        for name in ("standardize", "bilog", "log"):
            model = fit_model(X, Y, MethodOptions(outcome_transform=name))
            # The posterior is reported on the original scale either way.
            samples = model.posterior(X).rsample(torch.Size([64])).mean(0)
            self.assertLess(((samples - Y).abs() / Y.abs()).max().item(), 0.5)
        with self.assertRaisesRegex(ValueError, "unknown outcome transform 'x'"):
            fit_model(X, Y, MethodOptions(outcome_transform="x"))

    def test_kernels(self):
        from gpytorch.kernels import CylindricalKernel as GPyTorchCylindricalKernel
        from gpytorch.kernels import MaternKernel

        from botorch_ext.kernels import BOCKKernel

        torch.manual_seed(0)
        d = 4
        X = torch.rand(10, d, dtype=torch.double)
        X[-1] = 1.0  # a corner: on the boundary of every kernel's ball
        Y = -((X - 0.5) ** 2).sum(-1, keepdim=True)
        options = MethodOptions()
        bock = fit_model(X, Y, options, kernel="bock")
        self.assertIsInstance(bock.covar_module, BOCKKernel)
        self.assertEqual(bock.covar_module.center_rule, "continuous")
        # The fitted linear weight respects the runner's floor.
        c = bock.covar_module.angular_weights
        self.assertGreaterEqual(c[1].item(), kernels.BOCK_LINEAR_WEIGHT_FLOOR - 1e-9)
        diag = fitting.gp_diagnostics(bock)
        self.assertAllClose(torch.tensor(diag["angular_weights"]).to(c), c)
        self.assertEqual(len(diag["warp"]), 2)
        # The BOCK study's ablation kernels (benchmarks/bock/kernels.py), given
        # to fit_model as functions of the dimension.
        from benchmarks.bock.kernels import ABLATION_KERNELS

        for name, rule in (
            ("bock-continuous", "continuous"),
            ("bock-direction", "direction"),
        ):
            k = fit_model(X, Y, options, kernel=ABLATION_KERNELS[name]).covar_module
            self.assertEqual(k.center_rule, rule)
            self.assertIsNone(k.angular_weights_floor)
        scaled = fit_model(X, Y, options, kernel=ABLATION_KERNELS["bock-scaled"])
        self.assertIsInstance(scaled.covar_module.base_kernel, BOCKKernel)
        # bock_square_kernel: the runner's bock kernel with "square" weights.
        from benchmarks.bock.kernels import bock_square_kernel

        square = fit_model(X, Y, options, kernel=bock_square_kernel).covar_module
        self.assertEqual(square.angular_weights_parameterization, "square")
        self.assertEqual(bock.covar_module.angular_weights_parameterization, "softmax")
        self.assertEqual(square.center_rule, "continuous")
        self.assertEqual(
            square.angular_weights_floor.tolist(),
            bock.covar_module.angular_weights_floor.tolist(),
        )
        # The scaled Matern: the runner's isotropic Matern with a learned amplitude.
        matern_scaled = fit_model(X, Y, options, kernel="matern-scaled")
        self.assertIsInstance(matern_scaled.covar_module.base_kernel, MaternKernel)
        self.assertIsNone(matern_scaled.covar_module.base_kernel.ard_num_dims)
        self.assertIn(
            "outputscale_prior",
            {name for name, *_ in matern_scaled.covar_module.named_priors()},
        )
        self.assertNotIn("angular_weights", fitting.gp_diagnostics(matern_scaled))
        matern = fit_model(X, Y, options, kernel="matern")
        self.assertIsInstance(matern.covar_module, MaternKernel)
        self.assertIsNone(matern.covar_module.ard_num_dims)  # isotropic
        self.assertEqual(matern.covar_module.nu, 2.5)
        gp_cyl = fit_model(X, Y, options, kernel="gpytorch-cylindrical")
        self.assertIsInstance(gp_cyl.covar_module, GPyTorchCylindricalKernel)
        # Its inputs are mapped into its unit ball, corners included.
        Z = gp_cyl.input_transform(X)
        self.assertLessEqual(Z.norm(dim=-1).max().item(), 1.0)
        self.assertGreater(Z.norm(dim=-1).max().item(), 0.999)
        for model in (bock, matern, gp_cyl):
            post = model.posterior(X)
            self.assertTrue(torch.isfinite(post.variance).all())
        with self.assertRaisesRegex(ValueError, "unknown kernel 'x'"):
            fit_model(X, Y, options, kernel="x")
        # A kernel instance is used as is.
        instance = BOCKKernel(angular_degree=1)
        self.assertIs(fit_model(X, Y, options, kernel=instance).covar_module, instance)

    def test_bock_initial_conditions(self):
        from botorch_ext.runner.initial_conditions import bock_initial_conditions

        d, q = 6, 2
        tkwargs = {"device": self.device, "dtype": torch.double}
        X = torch.rand(12, d, **tkwargs)
        Y = torch.randn(12, 1, **tkwargs)
        best = X[Y.argmax()]
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).to(**tkwargs)

        # An acquisition that peaks at the incumbent: the sprays must win.
        def acqf(Xq):
            return -((Xq - best) ** 2).sum(dim=(-1, -2))

        options = MethodOptions(raw_samples=200, num_restarts=5)
        ics = bock_initial_conditions(acqf, bounds, q, X, Y, options, seed=3)
        self.assertEqual(ics.shape, torch.Size([5, q, d]))
        self.assertTrue(((ics >= 0) & (ics <= 1)).all())
        # The closest Sobol point is far from the incumbent in 6-d; sprays at the
        # two smallest scales are within a few hundredths.
        self.assertLess((ics - best).norm(dim=-1).max().item(), 0.1)
        # The returned batches are the top-scoring ones, best first.
        values = acqf(ics)
        self.assertTrue((values[:-1] >= values[1:]).all())
        again = bock_initial_conditions(acqf, bounds, q, X, Y, options, seed=3)
        self.assertTrue(torch.equal(ics, again))
        self.assertEqual(ics.device, bounds.device)
        with self.assertRaisesRegex(ValueError, "unknown initial conditions 'x'"):
            get_method("bock").new_run().propose(
                X, Y, bounds, 1, 0, MethodOptions(initial_conditions="x")
            )

    def test_random_draws_on_the_inputs_device(self):
        # The CPU generator's draws, moved to the device of the bounds.
        tkwargs = {"device": self.device, "dtype": torch.double}
        X = torch.rand(4, 3, **tkwargs)
        Y = torch.randn(4, 1, **tkwargs)
        bounds = torch.tensor([[-1.0, 0.0, 2.0], [1.0, 0.5, 4.0]], **tkwargs)
        run = get_method("random").new_run()
        out = run.propose(X, Y, bounds, 5, 7, MethodOptions()).candidates
        self.assertEqual(out.device, bounds.device)
        self.assertEqual(out.shape, torch.Size([5, 3]))
        self.assertTrue(((out >= bounds[0]) & (out <= bounds[1])).all())
        cpu = run.propose(X.cpu(), Y.cpu(), bounds.cpu(), 5, 7, MethodOptions())
        self.assertTrue(torch.equal(out.cpu(), cpu.candidates))

    def test_bock_sgmcmc(self):
        from botorch_ext.kernels import BOCKKernel
        from botorch_ext.sgmcmc import SGMCMCFullyBayesianSingleTaskGP

        torch.manual_seed(0)
        X = torch.rand(8, 2, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        with mock.patch.object(fitting, "SGMCMC_BUDGET_STEPS", 40):
            model = fit_model(
                X, Y, MethodOptions(), kernel="bock", fully_bayesian=True, seed=1
            )
            again = fit_model(
                X, Y, MethodOptions(), kernel="bock", fully_bayesian=True, seed=1
            )
        self.assertIsInstance(model, SGMCMCFullyBayesianSingleTaskGP)
        self.assertIsInstance(model.covar_module, BOCKKernel)
        self.assertEqual(model.batch_shape, torch.Size([methods.SGMCMC_DRAWS]))
        # The draws differ from one another and are reproducible from the seed.
        alpha = model.covar_module.alpha
        self.assertGreater(alpha.std().item(), 0.0)
        self.assertTrue(torch.equal(alpha, again.covar_module.alpha))

    def test_svgp_methods_keep_state_per_run(self):
        from botorch_ext.runner.loop import RunConfig
        from botorch_ext.runner.svgp import SVGPMethod

        self.assertEqual(
            {name for name, m in METHODS.items() if m.standardizes_outcomes},
            {"eulbo-ei", "eulbo-kg", "elbo-svgp", "turbo-eulbo-ei", "turbo-elbo-svgp"}
            | {"eulbo-ei-authors", "elbo-svgp-authors"},
        )
        method = get_method("turbo-eulbo-ei")
        self.assertIsInstance(method, SVGPMethod)
        run_a, run_b = method.new_run(), method.new_run()
        self.assertIsNot(run_a, run_b)
        torch.manual_seed(0)
        d = 3
        X = torch.rand(8, d, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
        options = MethodOptions(num_restarts=1, raw_samples=8, num_inducing_points=4)
        short_fits = mock.patch.object(svgp, "EULBOOptions", SHORT_SVGP_FIT)
        short_fits.start()
        self.addCleanup(short_fits.stop)
        proposal = run_a.propose(X, Y, bounds, 1, 0, options)
        cand = proposal.candidates
        self.assertEqual(run_a.previous.__class__.__name__, "EULBOModel")
        self.assertFalse(run_a.previous.carried_state)  # first step: fresh
        self.assertIsNone(run_b.previous)
        first = run_a.previous
        diag = proposal.diagnostics
        self.assertEqual(len(diag["lengthscales"]), d)
        self.assertAlmostEqual(diag["noise"], first.likelihood.noise.item())
        # Non-improving batches shrink the trust region after failure_tolerance
        # (= ceil(max(4, 3)) = 4 for q = 1) iterations; proposals stay inside it.
        state = run_a.state
        self.assertEqual(state.length, 0.8)
        for _ in range(state.failure_tolerance):
            X = torch.cat([X, cand])
            Y = torch.cat([Y, Y.min().reshape(1, 1) - 1.0])
            cand = run_a.propose(X, Y, bounds, 1, 0, options).candidates
            # Algorithm 1: every later step starts from the previous step's w.
            self.assertTrue(run_a.previous.carried_state)
        self.assertEqual(run_a.state.length, 0.4)
        region = run_a.last_region
        self.assertLess((region[1] - region[0]).max().item(), 1.0)
        self.assertTrue(((cand >= region[0] - 1e-9) & (cand <= region[1] + 1e-9)).all())
        # SVGP methods standardize themselves; other transforms are rejected.
        bilog = MethodOptions(outcome_transform="bilog")
        bad = RunConfig("branin", "eulbo-ei", budget=12, options=bilog)
        with self.assertRaisesRegex(ValueError, "standardizes its outcomes"):
            bad.validate()

    def test_elbo_svgp_loop_fits_and_explores(self):
        # A short elbo-svgp loop on noise-free Hartmann6 (the issue-12 failure:
        # q(u) reset every step, noise 0.6-0.8 on noise-free data, proposals
        # piling up on the incumbent). The carried, converged fit keeps the
        # noise small and does not keep proposing near-replicates.
        from botorch_ext.runner.loop import initial_design
        from botorch_ext.runner.problems import get_problem

        problem = get_problem("hartmann6")
        X = initial_design(6, 30, seed=0, init="uniform")
        Y = -problem(X).unsqueeze(-1)
        run = get_method("elbo-svgp").new_run()
        options = MethodOptions(num_restarts=2, raw_samples=64, num_inducing_points=30)
        near, noises = 0, []
        for _ in range(10):
            proposal = run.propose(X, Y, problem.bounds, 1, 0, options)
            cand = proposal.candidates
            incumbent = X[Y.squeeze(-1).argmax()]
            near += int((cand - incumbent).norm().item() < 1e-2)
            noises.append(proposal.diagnostics["noise"])
            X = torch.cat([X, cand])
            Y = torch.cat([Y, -problem(cand).unsqueeze(-1)])
        self.assertLess(max(noises[1:]), 0.2, noises)
        self.assertLessEqual(near, 2)
        self.assertTrue(run.previous.carried_state)

    def test_lbfgs_methods_fit_by_the_collapsed_bound(self):
        from benchmarks.eulbo import ablations

        torch.manual_seed(0)
        X = torch.rand(12, 2, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        options = MethodOptions(num_restarts=1, raw_samples=8, num_inducing_points=6)
        calls = []
        real = svgp_fit.fit_elbo_collapsed

        def spy(model, max_iter=500, rows=None):
            calls.append((max_iter, None if rows is None else len(rows)))
            return real(model, max_iter=max_iter, rows=rows)

        with mock.patch.object(svgp_fit, "fit_elbo_collapsed", spy):
            for method, choice, lbfgs_max_n in (
                (ablations.elbo_svgp_lbfgs, "lbfgs", 2000),
                (get_method("elbo-svgp"), "auto", 2000),  # n = 12: L-BFGS too
                (get_method("elbo-svgp"), "auto", 11),  # above: on 11 of 12 points
            ):
                eulbo_options = options_with(lbfgs_max_n=lbfgs_max_n)
                with mock.patch.object(svgp, "EULBOOptions", eulbo_options):
                    run = method.new_run()
                    run.propose(X, Y, bounds, 1, 0, options)
                self.assertEqual(run.options.elbo.optimizer, choice)
                self.assertEqual(run.options.warm_start.num_restarts, 1)
        self.assertEqual(calls, [(500, None), (500, None), (500, 11)])

    def test_turbo_exact_gp(self):
        method = get_method("turbo")
        run = method.new_run()
        torch.manual_seed(1)
        d = 4
        X = torch.rand(10, d, dtype=torch.double)
        Y = -((X - 0.3) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
        options = MethodOptions(num_restarts=2, raw_samples=16)
        for _ in range(4):
            proposal = run.propose(X, Y, bounds, 2, 0, options)
            cand = proposal.candidates
            region = run.last_region
            self.assertEqual(cand.shape, torch.Size([2, d]))
            self.assertTrue(((cand >= region[0] - 1e-9) & (cand <= region[1])).all())
            self.assertEqual(len(proposal.diagnostics["lengthscales"]), d)
            X = torch.cat([X, cand])
            # Never improving: the box halves after ceil(max(4/2, 4/2)) = 2 failures.
            Y = torch.cat([Y, torch.full((2, 1), Y.min().item() - 1.0).double()])
        self.assertLess(run.state.length, 0.8)
        incumbent = X[Y.squeeze(-1).argmax()]
        self.assertTrue(((incumbent >= region[0]) & (incumbent <= region[1])).all())


class TestAuthorsPreset(BotorchTestCase):
    def test_window_incumbent_and_model_choices(self):
        from gpytorch.kernels import RBFKernel, ScaleKernel
        from gpytorch.likelihoods import GaussianLikelihood

        from botorch_ext.runner.transforms import StandardizeOnce

        gen = torch.Generator().manual_seed(0)
        X = torch.rand(104, 2, generator=gen, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        Y[1] = 1.0  # the best point is outside the last 100
        bounds = torch.stack([torch.zeros(2), torch.ones(2)]).double()
        options = MethodOptions(num_inducing_points=100)
        for name, arm in (("eulbo-ei-authors", "ei"), ("elbo-svgp-authors", None)):
            run = get_method(name).new_run()
            run.propose(X[:100], Y[:100], bounds, 1, 0, options)
            # q(u) starts from GPyTorch's prior initialization, as theirs does.
            self.assertEqual(len(run.previous.train_X_full), 100)
            run.propose(X, Y, bounds, 1, 0, options)
            model = run.previous
            # The per-datum ELBO of the last 100 points.
            self.assertEqual(run.objective.elbo_scale, "mean")
            self.assertTrue(torch.equal(model.train_X_full, X[-100:]))
            # Standardized once, by the first 100 points (the initial design).
            tf = model.outcome_transform
            self.assertIsInstance(tf, StandardizeOnce)
            self.assertAllClose(tf.means.squeeze(), Y[:100].mean())
            self.assertAllClose(tf.stdvs.squeeze(), Y[:100].std())
            # The incumbent is the best of all points, on that scale.
            expected = (Y.max() - Y[:100].mean()) / Y[:100].std()
            best_f = run.objective.best_f(model)
            self.assertAllClose(best_f, expected)
            self.assertGreater(best_f.item(), model.train_Y_std.max().item())
            # Their kernel and likelihood, without priors.
            covar = model.model.covar_module
            self.assertIs(type(covar), ScaleKernel)
            self.assertIs(type(covar.base_kernel), RBFKernel)
            self.assertIsNone(covar.base_kernel.ard_num_dims)
            self.assertEqual(len(list(model.model.named_priors())), 0)
            self.assertEqual(len(list(model.likelihood.named_priors())), 0)
            self.assertIs(type(model.likelihood), GaussianLikelihood)
            self.assertEqual(run.options.joint.optimizer, "adam-epochs")
            self.assertEqual(run.options.elbo.epochs, 10 if arm else None)
            if arm:
                self.assertEqual(model.last_optimization["optimizer"], "adam-epochs")
            else:
                self.assertEqual(model.last_optimization, {})

    def test_a_non_finite_incumbent_is_refused(self):
        from botorch_ext.eulbo import EULBO, EULBOModel

        X = torch.rand(6, 2, dtype=torch.double)
        Y = X.sum(-1, keepdim=True)
        for bad in (math.nan, math.inf):
            with self.assertRaisesRegex(ValueError, "`incumbent`"):
                EULBO(incumbent=bad)
        model = EULBOModel(X, Y, num_inducing_points=4)
        expected = (5.0 - Y.mean()) / Y.std()
        self.assertAllClose(EULBO(incumbent=5.0).best_f(model), expected)

    def test_preset_refuses_other_settings(self):
        from botorch_ext.runner.svgp import SVGPMethod

        with self.assertRaisesRegex(ValueError, "`preset`.*'paper'"):
            SVGPMethod("ei", preset="paper")
        with self.assertRaisesRegex(ValueError, "leave out"):
            SVGPMethod("ei", preset="authors", model_kwargs={"utility_weight": 2.0})


class TestAuthorsTurbo(BotorchTestCase):
    def test_failure_tolerance_32_and_a_cube(self):
        from botorch_ext.runner.svgp import AUTHORS_TURBO_FAILURE_TOLERANCE

        self.assertEqual(AUTHORS_TURBO_FAILURE_TOLERANCE, 32)
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(20, 3, generator=gen, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(3), torch.ones(3)]).double()
        options = MethodOptions(num_inducing_points=20)
        # Imported, not looked up by name: `get_method("module:attr")` registers it.
        from benchmarks.eulbo.ablations import turbo_elbo_svgp_authors

        run = turbo_elbo_svgp_authors.new_run()
        run.propose(X, Y, bounds, 2, 0, options)
        self.assertEqual(run.state.failure_tolerance, 32)
        # A cube of side 0.8 about the incumbent (clipped to the box).
        center = X[Y.argmax()]
        lower = (center - 0.4).clamp(0, 1)
        upper = (center + 0.4).clamp(0, 1)
        self.assertAllClose(run.last_region, torch.stack([lower, upper]))
        # The package's own turbo methods keep TuRBO's default tolerance.
        default = get_method("turbo").new_run()
        self.assertIsNone(default.failure_tolerance)


class TestWarmStart(BotorchTestCase):
    def _data(self, n=10, d=3):
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(n, d, generator=gen, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
        return X, Y, bounds

    def test_fit_model_starts_at_the_given_hyperparameters(self):
        X, Y, _ = self._data()
        fitted = fit_model(X, Y, MethodOptions(), kernel="bock")
        start = {n: p.detach().clone() for n, p in fitted.named_parameters()}
        start["not.a.parameter"] = torch.zeros(2)  # ignored
        start["likelihood.noise_covar.raw_noise"] = torch.zeros(5)  # wrong shape
        with mock.patch.object(fitting, "fit_gpytorch_mll") as fit:
            model = fit_model(
                X, Y, MethodOptions(), kernel="bock", initial_hyperparameters=start
            )
        fit.assert_called_once()
        for name, p in model.named_parameters():
            if name == "likelihood.noise_covar.raw_noise":
                self.assertFalse(torch.equal(p, start[name].reshape(-1)[:1]))
                continue
            self.assertTrue(torch.equal(p, start[name]), name)

    def test_warm_started_runs_start_from_their_previous_fit(self):
        import inspect

        from botorch_ext.runner.acquisition import AcquisitionMethod, acquisition_method

        self.assertIs(
            inspect.signature(acquisition_method).parameters["warm_start"].default,
            False,
        )
        # The runner's bock fits every iteration from the kernel's initial values.
        self.assertFalse(get_method("bock").carries_state)
        method = acquisition_method(
            methods.qLogNoisyExpectedImprovement, kernel="bock", warm_start=True
        )
        self.assertIsInstance(method, AcquisitionMethod)
        self.assertTrue(method.carries_state)
        X, Y, bounds = self._data()
        options = MethodOptions(num_restarts=2, raw_samples=16)
        run = method.new_run()
        self.assertIsNone(run.hyperparameters)
        starts = []
        original = acquisition.fit_model

        def spy(*args, **kwargs):
            starts.append(kwargs["initial_hyperparameters"])
            return original(*args, **kwargs)

        with mock.patch.object(acquisition, "fit_model", side_effect=spy):
            run.propose(X[:8], Y[:8], bounds, 1, 0, options)
            first = {n: v.clone() for n, v in run.hyperparameters.items()}
            proposal = run.propose(X, Y, bounds, 1, 0, options)
            # A fresh run starts cold again.
            method.new_run().propose(X, Y, bounds, 1, 0, options)
        self.assertIsNone(starts[0])
        self.assertEqual(set(starts[1]), set(first))
        for name, value in first.items():
            self.assertTrue(torch.equal(starts[1][name], value), name)
        self.assertIsNone(starts[2])
        self.assertGreater(proposal.fit_seconds, 0.0)
        self.assertIn("warp", proposal.diagnostics)
        # The run's state is saved with torch.save on checkpoints.
        buffer = io.BytesIO()
        torch.save(run, buffer)
        buffer.seek(0)
        restored = torch.load(buffer, weights_only=False)
        for name, value in run.hyperparameters.items():
            self.assertTrue(torch.equal(restored.hyperparameters[name], value))
        with self.assertRaisesRegex(ValueError, "warm_start"):
            acquisition_method(
                methods.qLogNoisyExpectedImprovement,
                fully_bayesian=True,
                warm_start=True,
            )


class TestFitOptions(BotorchTestCase):
    def test_fit_options_reach_lbfgsb_and_default_to_none(self):
        import inspect

        from botorch_ext.runner.acquisition import acquisition_method

        gen = torch.Generator().manual_seed(0)
        X = torch.rand(10, 3, generator=gen, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(3), torch.ones(3)]).double()
        for fn in (fit_model, acquisition_method):
            self.assertIsNone(inspect.signature(fn).parameters["fit_options"].default)
        # fit_model: BoTorch's defaults without options, the options as
        # fit_gpytorch_mll's optimizer_kwargs with them.
        with mock.patch.object(fitting, "fit_gpytorch_mll") as fit:
            fit_model(X, Y, MethodOptions(), kernel="bock")
            fit_model(X, Y, MethodOptions(), kernel="bock", fit_options={"ftol": 1e-6})
        self.assertEqual(fit.call_args_list[0].kwargs, {})
        self.assertEqual(
            fit.call_args_list[1].kwargs,
            {"optimizer_kwargs": {"options": {"ftol": 1e-6}}},
        )
        # A looser ftol stops L-BFGS-B earlier than SciPy's default here.
        from gpytorch.mlls import ExactMarginalLogLikelihood

        evaluations = []
        original_forward = ExactMarginalLogLikelihood.forward
        for options in (None, {"ftol": 1e-2}):
            with mock.patch.object(
                ExactMarginalLogLikelihood,
                "forward",
                autospec=True,
                side_effect=original_forward,
            ) as forward:
                fit_model(X, Y, MethodOptions(), kernel="bock", fit_options=options)
            evaluations.append(forward.call_count)
        self.assertLess(evaluations[1], evaluations[0])
        # The method passes its options to each fit.
        method = acquisition_method(
            methods.qLogNoisyExpectedImprovement,
            kernel="bock",
            fit_options={"ftol": 1e-6},
        )
        seen = []
        original = acquisition.fit_model

        def spy_fit(*args, **kwargs):
            seen.append(kwargs["fit_options"])
            return original(*args, **kwargs)

        with mock.patch.object(acquisition, "fit_model", side_effect=spy_fit):
            method.new_run().propose(
                X, Y, bounds, 1, 0, MethodOptions(num_restarts=2, raw_samples=16)
            )
        self.assertEqual(seen, [{"ftol": 1e-6}])
        with self.assertRaisesRegex(ValueError, "fit_options"):
            acquisition_method(
                methods.qLogNoisyExpectedImprovement,
                kernel="bock",
                fully_bayesian=True,
                fit_options={"ftol": 1e-6},
            )
        with self.assertRaisesRegex(ValueError, "fit_options"):
            fit_model(
                X, Y, MethodOptions(), fully_bayesian=True, fit_options={"ftol": 1e-6}
            )

    def test_runner_bock_stops_its_fit_and_acquisition_at_ftol_1e_6(self):
        # The runner's bock (a documented default); the other kernels' methods
        # keep SciPy's default tolerance.
        self.assertEqual(fitting.BOCK_FIT_FTOL, 1e-6)
        self.assertEqual(get_method("bock").spec.fit_options, {"ftol": 1e-6})
        self.assertEqual(acquisition.BOCK_ACQF_FTOL, 1e-6)
        self.assertEqual(
            get_method("bock").spec.acqf_options, {"ftol": 1e-6, "factr": None}
        )
        for name in ("matern", "matern-scaled", "qlogei", "bock-sgmcmc"):
            self.assertIsNone(get_method(name).spec.fit_options, name)
            self.assertIsNone(get_method(name).spec.acqf_options, name)

    def test_acqf_options_reach_optimize_acqf(self):
        import inspect

        from botorch_ext.runner.acquisition import acquisition_method

        self.assertIsNone(
            inspect.signature(acquisition_method).parameters["acqf_options"].default
        )
        gen = torch.Generator().manual_seed(0)
        X = torch.rand(10, 3, generator=gen, dtype=torch.double)
        Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
        bounds = torch.stack([torch.zeros(3), torch.ones(3)]).double()
        options = MethodOptions(num_restarts=2, raw_samples=16)
        acqf_options = {"ftol": 1e-6, "factr": None}
        seen = []
        original = acquisition.optimize_acqf

        def spy(*args, **kwargs):
            seen.append(kwargs.get("options"))
            return original(*args, **kwargs)

        with mock.patch.object(acquisition, "optimize_acqf", side_effect=spy):
            for method in (
                acquisition_method(methods.qLogNoisyExpectedImprovement),
                acquisition_method(
                    methods.qLogNoisyExpectedImprovement, acqf_options=acqf_options
                ),
            ):
                cand = method.new_run().propose(X, Y, bounds, 1, 0, options).candidates
                self.assertEqual(cand.shape, torch.Size([1, 3]))
        self.assertEqual(seen, [None, acqf_options])


class TestTurboMethodsBoundSearches(BotorchTestCase):
    def test_turbo_svgp_methods_use_the_turbo_preset(self):
        # The registered TuRBO SVGP methods run the bounded searches; the others
        # keep EULBOOptions' defaults.
        from botorch_ext.eulbo import EULBOOptions

        for name in ("turbo-eulbo-ei", "turbo-elbo-svgp"):
            with self.subTest(name=name):
                run = get_method(name).new_run()
                self.assertEqual(run.base_options, EULBOOptions.turbo())
                self.assertEqual(run.base_options.warm_start.max_iter, 50)
        for name in ("eulbo-ei", "elbo-svgp"):
            with self.subTest(name=name):
                self.assertEqual(
                    get_method(name).new_run().base_options, EULBOOptions()
                )
        # The earlier settings stay reachable for the results recorded with them.
        from benchmarks.eulbo import ablations

        for method in (
            ablations.turbo_eulbo_ei_stored,
            ablations.turbo_elbo_svgp_stored,
        ):
            self.assertEqual(method.new_run().base_options, EULBOOptions())
            self.assertIs(method.kernel, kernels.svgp_ard_kernel)
            self.assertTrue(method.turbo)
