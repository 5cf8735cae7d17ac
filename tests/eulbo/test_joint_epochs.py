r"""The authors' loop pieces: ``EULBOOptions.authors``, the ``"failures"`` rule, the
fixed-epoch fit, the ``"adam-epochs"`` joint phase and the noisy-qEI warm start."""

import copy
import dataclasses
import math
import warnings
from unittest import mock

import torch
from botorch.acquisition import qExpectedImprovement, qLogExpectedImprovement
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import initializers
from botorch.utils.testing import BotorchTestCase
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood

from botorch_ext.eulbo import (
    AUTHORS_WINDOW,
    EULBO,
    AdamOptions,
    EULBOModel,
    EULBOOptions,
    JointOptions,
    StoppingOptions,
    WarmStartOptions,
    fit_elbo,
    optimize_eulbo,
    warm_start,
)
from botorch_ext.eulbo import optimize as optimize_module
from botorch_ext.eulbo.adam import FailureCount
from botorch_ext.eulbo.joint import JointProblem
from botorch_ext.eulbo.optimize import ObservationNoisePredictive
from tests.eulbo.helpers import make_data

#: The objective of the authors' loop: the per-datum ELBO.
AUTHORS = EULBO(elbo_scale="mean")


def _authors_model(dtype=torch.double, n=40, arm="eulbo", **changes):
    r"""A model as the authors' loop builds it, and the preset's options."""
    X, Y = make_data(n=n, dtype=dtype)
    options = dataclasses.replace(EULBOOptions.authors(arm), **changes)
    options = dataclasses.replace(
        options, warm_start=dataclasses.replace(options.warm_start, num_restarts=2)
    )
    model = EULBOModel(
        X,
        Y,
        num_inducing_points=10,
        covar_module=ScaleKernel(RBFKernel()),
        likelihood=GaussianLikelihood(),
    ).to(dtype)
    return model, options


class TestAuthorsOptions(BotorchTestCase):
    def test_pins_the_released_settings(self):
        opts = EULBOOptions.authors()
        self.assertEqual(AUTHORS_WINDOW, 100)
        self.assertEqual((opts.elbo.optimizer, opts.elbo.epochs), ("adam", 10))
        self.assertEqual(
            opts.adam, AdamOptions(lr_w=0.01, lr_x=0.001, batch_size=32, grad_clip=2.0)
        )
        self.assertEqual(
            (opts.stopping.convergence, opts.stopping.patience), ("failures", 3)
        )
        self.assertEqual(opts.stopping.max_epochs, 30)
        self.assertEqual(
            opts.warm_start,
            WarmStartOptions(
                num_restarts=10,
                raw_samples=256,
                acquisition="qei-noisy",
                resample_zero=False,
            ),
        )
        self.assertEqual((opts.joint.optimizer, opts.joint.retries), ("adam-epochs", 7))
        self.assertEqual(opts.joint.parameters, "all")
        self.assertEqual(opts.utility.num_quadrature_points, 20)
        self.assertEqual(opts.utility.num_mc_samples, 64)
        # The baseline: the failures rule, not a fixed number of epochs.
        self.assertIsNone(EULBOOptions.authors("elbo").elbo.epochs)
        opts.validate()
        with self.assertRaisesRegex(ValueError, "`arm`.*'kg'"):
            EULBOOptions.authors("kg")

    def test_package_defaults_unchanged(self):
        opts = EULBOOptions()
        self.assertIsNone(opts.elbo.epochs)
        self.assertEqual(opts.warm_start.acquisition, "qlogei")
        self.assertEqual((opts.joint.optimizer, opts.joint.retries), ("lbfgs", 7))


class TestFailureCount(BotorchTestCase):
    def test_counts_failures_in_total(self):
        # Against a direct count: a failure is a value not below every earlier one.
        seq = [5.0, 4.0, 4.5, 3.0, 3.0, 2.0, 2.5]
        rule = FailureCount(patience=3)
        stops = [rule.update(v) for v in seq]
        failures = [i > 0 and v >= min(seq[:i]) for i, v in enumerate(seq)]
        expected = [sum(failures[: i + 1]) >= 3 for i in range(len(seq))]
        self.assertEqual(stops, expected)
        self.assertEqual(stops.index(True), 6)  # not reset by the 3.0 and 2.0


class TestCountedEpochFits(BotorchTestCase):
    def test_fixed_epochs_and_failures_rule(self):
        for dtype in (torch.float, torch.double):
            model, opts = _authors_model(dtype)
            fit_elbo(model, opts, AUTHORS, seed=0)
            # 40 points in minibatches of 32: 2 steps an epoch, 10 epochs.
            self.assertEqual(model.last_fit["steps"], 20)
            self.assertFalse(model.last_fit["converged"])
            # The baseline stops at the 3rd failing epoch, counted in total:
            # scripted epoch losses 2, 3 (fails), 1, 1.5 (fails), 0.5, 0.7 (fails).
            losses = [2.0, 3.0, 1.0, 1.5, 0.5, 0.7] + [0.1] * 40
            model, opts = _authors_model(dtype, arm="elbo")
            values = [-loss / 2 for loss in losses for _ in range(2)]
            with mock.patch("botorch_ext.eulbo.fit.w_step", side_effect=values):
                fit_elbo(model, opts, AUTHORS, seed=0)
            self.assertEqual(model.last_fit["steps"], 2 * 6)
            self.assertTrue(model.last_fit["converged"])

    def test_failures_rule_is_capped_at_max_epochs_plus_one(self):
        model, opts = _authors_model(arm="elbo")
        values = [float(k) for k in range(1, 500)]  # the loss always falls
        with mock.patch("botorch_ext.eulbo.fit.w_step", side_effect=values):
            fit_elbo(model, opts, AUTHORS, seed=0)
        self.assertEqual(model.last_fit["steps"], 2 * 31)
        self.assertFalse(model.last_fit["converged"])


class TestEpochJointPhase(BotorchTestCase):
    def _step(self, case, **stopping):
        model, opts = case
        fit_elbo(model, opts, AUTHORS, seed=0)
        # The joint phase's own stopping (max_epochs=0: one epoch, which the
        # validation of the settings refuses, so it is bypassed here).
        opts = dataclasses.replace(
            opts, stopping=dataclasses.replace(opts.stopping, **stopping)
        )
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=model.train_Y_std.dtype)
        start = copy.deepcopy(model.state_dict())
        with mock.patch("botorch_ext.eulbo.optimize.check_settings"):
            cand, value = optimize_eulbo(
                model, bounds, q=1, refit=False, seed=0, options=opts, objective=AUTHORS
            )
        return start, cand, value, model.last_optimization

    def test_alternates_whole_epochs_starting_with_w(self):
        for dtype in (torch.float, torch.double):
            # One epoch (max_epochs=0): only w moved; two: x moved too.
            model, opts = _authors_model(dtype)
            start, cand, _, info = self._step((model, opts), max_epochs=0)
            self.assertEqual(info["steps"], 1)
            self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
            moved = [
                not torch.equal(v, start[k]) for k, v in model.state_dict().items()
            ]
            self.assertTrue(any(moved))
            model, opts = _authors_model(dtype)
            start, cand, _, info = self._step((model, opts), max_epochs=1)
            self.assertEqual(info["steps"], 2)
            self.assertFalse(torch.equal(cand, info["warm_start_candidates"]))
            # An x-step of Adam moves each coordinate by at most about lr_x.
            step = (cand - info["warm_start_candidates"]).abs().max().item()
            self.assertLessEqual(step, 2 * 0.001 * 1.01)

    def test_no_rollback(self):
        # The final EULBO is made to read 10 nats below the warm start's: the
        # phase still returns the state and candidates it ends in.
        real, calls = JointProblem.eulbo, []

        def lower_after_start(problem, X):
            calls.append(1)
            out = real(problem, X)
            return out if len(calls) == 1 else out - 10.0

        model, opts = _authors_model()
        with mock.patch.object(JointProblem, "eulbo", lower_after_start):
            start, cand, value, info = self._step((model, opts), max_epochs=3)
        self.assertLess(value.item(), info["warm_start_value"])
        self.assertFalse(info["rolled_back"])
        self.assertFalse(torch.equal(cand, info["warm_start_candidates"]))
        self.assertFalse(
            all(torch.equal(v, start[k]) for k, v in model.state_dict().items())
        )

    def test_retries_with_smaller_steps_then_warns(self):
        model, opts = _authors_model()
        real = EULBO.expected_log_utility
        lrs, nan_left = [], [1]

        def nan_first(self_, model_, X, *args, **kwargs):
            out = real(self_, model_, X, *args, **kwargs)
            if X.requires_grad and nan_left[0] > 0:
                nan_left[0] -= 1
                return out * math.nan
            return out

        real_adam = torch.optim.Adam

        def adam(params, lr):
            lrs.append(lr)
            return real_adam(params, lr=lr)

        with (
            mock.patch.object(EULBO, "expected_log_utility", nan_first),
            mock.patch("torch.optim.Adam", side_effect=adam),
        ):
            self._step((model, opts), max_epochs=1)
        info = model.last_optimization
        self.assertEqual(info["attempts"], 2)
        self.assertFalse(info["diverged"])
        # w and x optimizers of attempt 1, then of attempt 2 with steps / 10.
        self.assertEqual(lrs[-4:], [0.01, 0.001, 0.001, 0.0001])
        # Every attempt failing: the warm start comes back, with a warning.
        model, opts = _authors_model(
            joint=JointOptions(optimizer="adam-epochs", retries=2)
        )

        def always_nan(self_, model_, X, *args, **kwargs):
            out = real(self_, model_, X, *args, **kwargs)
            return out * math.nan if X.requires_grad else out

        with mock.patch.object(EULBO, "expected_log_utility", always_nan):
            with self.assertWarnsRegex(OptimizationWarning, "all 3 attempts"):
                start, cand, _, info = self._step((model, opts), max_epochs=1)
        self.assertTrue(info["diverged"])
        self.assertTrue(torch.equal(cand, info["warm_start_candidates"]))
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, start[k]), k)


class TestNoisyWarmStart(BotorchTestCase):
    def test_predictive_adds_the_noise_variance(self):
        for dtype in (torch.float, torch.double):
            model, opts = _authors_model(dtype)
            fit_elbo(model, opts, AUTHORS, seed=0)
            X = torch.rand(5, 2, dtype=dtype)
            latent = model.posterior(X)
            noisy = ObservationNoisePredictive(model).posterior(X)
            noise = model.likelihood.noise * model.outcome_transform.stdvs.pow(2)
            tol = 100 * torch.finfo(dtype).eps
            self.assertAllClose(noisy.mean, latent.mean, atol=tol, rtol=tol)
            self.assertAllClose(
                noisy.variance, latent.variance + noise, atol=tol, rtol=100 * tol
            )
            self.assertEqual(ObservationNoisePredictive(model).num_outputs, 1)

    def test_acquisition_by_option(self):
        seen = []

        def fake(acqf, bounds, q, **kwargs):
            seen.append(acqf)
            return bounds[:1].clone(), torch.zeros(())

        for acquisition, cls in (
            ("qei-noisy", qExpectedImprovement),
            ("qlogei", qLogExpectedImprovement),
        ):
            model, opts = _authors_model()
            opts = dataclasses.replace(
                opts,
                warm_start=WarmStartOptions(num_restarts=2, acquisition=acquisition),
            )
            # The incumbent is the objective's (over all data in the authors'
            # loop, whose model sees a window).
            objective = EULBO("mean", incumbent=float(model.train_Y_std.max()) + 1)
            bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
            with mock.patch.object(optimize_module, "optimize_acqf", fake):
                warm_start(model, bounds, 1, 0, options=opts, objective=objective)
            self.assertIsInstance(seen[-1], cls)
            wrapped = isinstance(seen[-1].model, ObservationNoisePredictive)
            self.assertEqual(wrapped, acquisition == "qei-noisy")
            y_best = objective.best_f(model).reshape(1, 1)
            best = model.outcome_transform.untransform(y_best)
            self.assertAllClose(seen[-1].best_f, best[0].squeeze())
            self.assertAllClose(
                seen[-1].best_f, torch.tensor(objective.incumbent).double()
            )


class TestStoppingOptionsFailures(BotorchTestCase):
    def test_failures_is_a_convergence_rule(self):
        StoppingOptions(convergence="failures").validate()


class TestGlobalRandomStream(BotorchTestCase):
    def test_fits_and_the_joint_step_leave_it_alone(self):
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
        kw = {"objective": AUTHORS}
        cases = (
            ("authors", lambda m, o: fit_elbo(m, o, AUTHORS, seed=3)),
            ("authors", lambda m, o: warm_start(m, bounds, 1, 3, options=o, **kw)),
            (
                "authors",
                lambda m, o: optimize_eulbo(m, bounds, q=1, seed=3, options=o, **kw),
            ),
            ("default", lambda m, o: fit_elbo(m, seed=3)),
            ("default", lambda m, o: optimize_eulbo(m, bounds, q=2, seed=3)),
        )
        for kind, call in cases:
            options = None
            if kind == "authors":
                model, options = _authors_model(
                    stopping=StoppingOptions(convergence="failures", max_epochs=2)
                )
                # A fresh q(u): GPyTorch draws its initial noise at the first fit.
                model.model.variational_strategy.variational_params_initialized.fill_(0)
            else:
                X, Y = make_data()
                model = EULBOModel(X, Y, num_inducing_points=8)
            torch.manual_seed(123)
            before = torch.get_rng_state()
            call(model, options)
            self.assertTrue(torch.equal(torch.get_rng_state(), before), kind)


class TestWarmStartResampling(BotorchTestCase):
    def test_resample_zero_decides_and_not_the_callers_filter(self):
        # With an incumbent far above the data, qEI is zero at every raw sample:
        # BoTorch draws again (up to 5x) only if it records its warning.
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
        objective = EULBO(incumbent=1e6)
        draws = {}
        for resample in (True, False):
            for caller_filter in ("ignore", "always", "default"):
                model, options = _authors_model(
                    warm_start=WarmStartOptions(
                        num_restarts=2,
                        raw_samples=8,
                        acquisition="qei-noisy",
                        resample_zero=resample,
                    )
                )
                spy = mock.Mock(wraps=initializers.draw_sobol_samples)
                with (
                    warnings.catch_warnings(),
                    mock.patch.object(initializers, "draw_sobol_samples", spy),
                ):
                    warnings.simplefilter(caller_filter)
                    x = warm_start(
                        model, bounds, 1, 0, options=options, objective=objective
                    )
                draws[resample, caller_filter] = (spy.call_count, x)
            for f in ("always", "default"):
                self.assertEqual(draws[resample, f][0], draws[resample, "ignore"][0])
                self.assertTrue(
                    torch.equal(draws[resample, f][1], draws[resample, "ignore"][1])
                )
        self.assertGreater(draws[True, "ignore"][0], 1)
        self.assertEqual(draws[False, "ignore"][0], 1)
        # The authors' preset keeps the first draw; BoTorch's default draws again.
        self.assertFalse(EULBOOptions.authors().warm_start.resample_zero)
        self.assertTrue(WarmStartOptions().resample_zero)
