import copy
import dataclasses
import math
import warnings
from unittest import mock

import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
from botorch.utils.testing import BotorchTestCase
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.errors import NotPSDError

from botorch_ext.kernels import BOCKKernel
from botorch_ext.sgmcmc.arms import ArmSettings, arm_settings
from botorch_ext.sgmcmc.fully_bayesian import (
    RAW_PRIOR_SCALE,
    HyperparameterPosterior,
    SGMCMCFullyBayesianSingleTaskGP,
    fit_fully_bayesian_model_sgmcmc,
)


def data(n=12, d=2, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=dtype)
    Y = torch.sin(4 * X).sum(-1, keepdim=True)
    return X, Y


def fast_fit(model, **kwargs):
    base = dict(
        num_samples=4,
        budget=30,
        budget_unit="steps",
        step_sizes=(1e-2, 1e-3, 1e-4),
        generator=torch.Generator().manual_seed(0),
    )
    return fit_fully_bayesian_model_sgmcmc(model, **{**base, **kwargs})


def _likelihood_at_fixed_values(model):
    r"""GPyTorch's log marginal likelihood (summed over the 12 points) of a copy
    of ``model`` at noise ``1e-4 + e^-3``, constant 0.2 and lengthscales
    ``0.025 + e^(-0.5, 0.3)``, plus the log-Jacobians of those ``lo + exp(z)``
    maps (``z = -3, -0.5, 0.3``)."""
    ref = copy.deepcopy(model)
    with torch.no_grad():
        ref.likelihood.noise_covar.raw_noise.fill_(1e-4 + math.exp(-3.0))
        ref.mean_module.raw_constant.fill_(0.2)
        ref.covar_module.raw_lengthscale.copy_(
            2.5e-2 + torch.tensor([[-0.5, 0.3]]).exp()
        )
    ref.train()
    mll = ExactMarginalLogLikelihood(ref.likelihood, ref)
    return mll(ref(*ref.train_inputs), ref.train_targets) * 12 + (-3.0 - 0.5 + 0.3)


class TestHyperparameterPosterior(BotorchTestCase):
    def test_log_density_against_direct_computation(self):
        X, Y = data()
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y, outcome_transform=Standardize(1))
        post = HyperparameterPosterior(model)
        kinds = {e["name"]: e["kind"] for e in post.entries}
        # BoTorch's noise and lengthscale floors have no transform: lo + exp(z).
        self.assertEqual(kinds["likelihood.noise_covar.raw_noise"], "lower")
        self.assertEqual(kinds["covar_module.raw_lengthscale"], "lower")
        self.assertEqual(kinds["mean_module.raw_constant"], "free")
        z = torch.tensor([-3.0, 0.2, -0.5, 0.3], dtype=torch.float64)
        # Directly: write the raw values into a copy, evaluate GPyTorch's MLL.
        expected = (
            _likelihood_at_fixed_values(model)
            - 0.5 * (0.2 / RAW_PRIOR_SCALE) ** 2  # the mean has no prior
        )
        before = {k: v.detach().clone() for k, v in model.named_parameters()}
        self.assertAllClose(post.log_density(z), expected.detach())
        # The model's own parameters are untouched by the evaluation.
        for name, p in model.named_parameters():
            self.assertIsInstance(p, torch.nn.Parameter)
            self.assertAllClose(p.detach(), before[name])

    def test_a_floor_without_prior_gets_the_gaussian_on_z(self):
        # A lengthscale floor without transform and without prior: lo + exp(z),
        # whose density exp(z) x likelihood is improper without the Gaussian.
        X, Y = data()
        kernel = RBFKernel(
            ard_num_dims=2, lengthscale_constraint=GreaterThan(2.5e-2, transform=None)
        )
        model = SGMCMCFullyBayesianSingleTaskGP(
            X, Y, covar_module=kernel, outcome_transform=Standardize(1)
        )
        post = HyperparameterPosterior(model)
        entry = {e["name"]: e for e in post.entries}["covar_module.raw_lengthscale"]
        self.assertEqual((entry["kind"], entry["has_prior"]), ("lower", False))
        order = [e["name"] for e in post.entries]
        values = {
            "likelihood.noise_covar.raw_noise": [-3.0],
            "mean_module.raw_constant": [0.2],
            "covar_module.raw_lengthscale": [-0.5, 0.3],
        }
        z = torch.tensor(sum((values[n] for n in order), []), dtype=torch.float64)
        expected = (
            _likelihood_at_fixed_values(model)
            - 0.5 * (0.2**2 + 0.5**2 + 0.3**2) / RAW_PRIOR_SCALE**2
        )
        self.assertAllClose(post.log_density(z), expected.detach())

    def test_gradient_against_finite_differences(self):
        X, Y = data()
        for kernel in (None, BOCKKernel()):
            kw = {} if kernel is None else {"covar_module": kernel}
            model = SGMCMCFullyBayesianSingleTaskGP(
                X, Y, outcome_transform=Standardize(1), **kw
            )
            post = HyperparameterPosterior(model)
            gen = torch.Generator().manual_seed(1)
            z = post.initial_point() + 0.1 * torch.randn(
                post.dim, generator=gen, dtype=torch.float64
            )
            g = post.gradient(z)
            eps = 1e-6
            fd = torch.stack(
                [
                    (post.log_density(z + eps * e) - post.log_density(z - eps * e))
                    / (2 * eps)
                    for e in torch.eye(post.dim, dtype=torch.float64)
                ]
            ).detach()
            self.assertAllClose(g, fd, rtol=1e-4, atol=1e-5)
            # Batches of z are scored one by one.
            self.assertAllClose(post.gradient(torch.stack([z, z]))[1], g)

    def test_box_parameters_round_trip(self):
        X, Y = data()
        kernel = BOCKKernel()
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y, covar_module=kernel)
        post = HyperparameterPosterior(model)
        kinds = {e["name"]: e["kind"] for e in post.entries}
        self.assertEqual(kinds["covar_module.raw_alpha"], "box")
        self.assertEqual(kinds["covar_module.raw_beta"], "box")
        self.assertEqual(kinds["covar_module.raw_angular_weights"], "free")
        z = post.initial_point()
        raw = post.unpack(z.unsqueeze(0))
        for name, p in model.named_parameters():
            self.assertAllClose(raw[name][0], p.detach(), atol=1e-5)
        # Any z maps inside the warp box.
        far = post.unpack(torch.full((1, post.dim), 40.0, dtype=torch.float64))
        alpha = far["covar_module.raw_alpha"]
        self.assertTrue(bool(((alpha >= 0.5) & (alpha <= 1.0)).all()))

    def test_a_prior_on_a_transformed_parameter_takes_the_jacobian(self):
        # ScaleKernel's outputscale: softplus-transformed, with a Gamma prior on
        # the outputscale itself, so z is the raw value and the density gains
        # log softplus'(raw) = log sigmoid(raw).
        from gpytorch.kernels import RBFKernel, ScaleKernel
        from gpytorch.priors import GammaPrior

        X, Y = data()
        kernel = ScaleKernel(RBFKernel(), outputscale_prior=GammaPrior(2.0, 0.15))
        model = SGMCMCFullyBayesianSingleTaskGP(
            X, Y, covar_module=kernel, outcome_transform=Standardize(1)
        )
        post = HyperparameterPosterior(model)
        entries = {e["name"]: e for e in post.entries}
        scale = entries["covar_module.raw_outputscale"]
        self.assertEqual((scale["kind"], scale["has_prior"]), ("free", True))
        gen = torch.Generator().manual_seed(3)
        z = post.initial_point() + 0.3 * torch.randn(
            post.dim, generator=gen, dtype=torch.float64
        )
        raw = {k: v[0] for k, v in post.unpack(z.unsqueeze(0)).items()}
        ref = copy.deepcopy(model)
        with torch.no_grad():
            for name, p in ref.named_parameters():
                p.copy_(raw[name])
        ref.train()
        mll = ExactMarginalLogLikelihood(ref.likelihood, ref)
        expected = mll(ref(*ref.train_inputs), ref.train_targets) * 12
        start = 0
        for e in post.entries:
            chunk = z[start : start + e["numel"]]
            start += e["numel"]
            if e["kind"] == "lower":  # lo + exp(z)
                expected = expected + chunk.sum()
            elif e["has_prior"]:  # the outputscale: softplus' = sigmoid
                expected = expected + torch.sigmoid(raw[e["name"]]).log().sum()
            else:  # the constant mean: no prior of its own
                expected = expected - 0.5 * (chunk / RAW_PRIOR_SCALE).pow(2).sum()
        self.assertAllClose(post.log_density(z), expected.detach(), rtol=1e-12)

    def test_a_ceiling_maps_below_it(self):
        # A parameter with only an upper end (a ReflectedInterval ceiling):
        # raw = hi - exp(z), log|d raw / d z| = z; the starting point round-trips.
        from gpytorch.means import ConstantMean

        from botorch_ext.constraints import ReflectedInterval

        X, Y = data()
        mean = ConstantMean(constant_constraint=ReflectedInterval(-math.inf, 2.0))
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y, mean_module=mean)
        with torch.no_grad():
            model.mean_module.raw_constant.fill_(0.5)
        post = HyperparameterPosterior(model)
        entry = next(e for e in post.entries if e["name"] == "mean_module.raw_constant")
        self.assertEqual(entry["kind"], "upper")
        z0 = post.initial_point()
        raw = post.unpack(z0.unsqueeze(0))
        self.assertAllClose(
            raw["mean_module.raw_constant"][0], torch.tensor(0.5).double()
        )
        i = [e["name"] for e in post.entries].index("mean_module.raw_constant")
        for value in (-30.0, 0.0, 5.0):
            z = z0.clone()
            z[i] = value
            got = post.unpack(z.unsqueeze(0))["mean_module.raw_constant"]
            self.assertAllClose(got, torch.tensor([2.0 - math.exp(value)]).double())
            self.assertLessEqual(got.item(), 2.0)
        # The density's change in z_i is the likelihood's, plus the Jacobian's
        # z_i, plus the Gaussian on z_i (the constant has no prior).
        z1 = z0.clone()
        z1[i] = z0[i] + 0.25
        ref = copy.deepcopy(model)
        ref.train()
        mll = ExactMarginalLogLikelihood(ref.likelihood, ref)

        def loglik(constant):
            with torch.no_grad():
                ref.mean_module.raw_constant.fill_(constant)
            return (mll(ref(*ref.train_inputs), ref.train_targets) * 12).item()

        c0, c1 = 2.0 - math.exp(z0[i].item()), 2.0 - math.exp(z1[i].item())
        gauss = -0.5 * (z1[i].item() ** 2 - z0[i].item() ** 2) / RAW_PRIOR_SCALE**2
        want = loglik(c1) - loglik(c0) + 0.25 + gauss
        got = (post.log_density(z1) - post.log_density(z0)).item()
        # Float64 (the data's dtype); differences of log densities of about 10.
        eps = torch.finfo(z0.dtype).eps
        self.assertAlmostEqual(got, want, delta=4096 * eps * max(1.0, abs(want)))

    def test_not_psd_gives_nan_gradient(self):
        X, Y = data()
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y)
        post = HyperparameterPosterior(model)
        z = post.initial_point()
        with mock.patch.object(
            post, "log_density", side_effect=NotPSDError("singular")
        ):
            g = post.gradient(z)
        self.assertEqual(g.shape, z.shape)
        self.assertTrue(bool(torch.isnan(g).all()))


class TestFullyBayesianModel(BotorchTestCase):
    def test_fit_posterior_and_acquisition(self):
        for dtype in (torch.float32, torch.float64):
            X, Y = data(dtype=dtype)
            for kernel in (None, BOCKKernel()):
                kw = {} if kernel is None else {"covar_module": kernel}
                model = SGMCMCFullyBayesianSingleTaskGP(
                    X, Y, outcome_transform=Standardize(1), **kw
                )
                result = fast_fit(model)
                self.assertEqual(model.batch_shape, torch.Size([4]))
                self.assertEqual(model.num_mcmc_samples, 4)
                self.assertEqual(len(result.history), 1)  # 3 arms, eta 3
                post = model.posterior(torch.rand(5, 3, 2, dtype=dtype))
                self.assertIsInstance(post, GaussianMixturePosterior)
                self.assertEqual(post.mean.shape, torch.Size([5, 4, 3, 1]))
                self.assertEqual(post.mixture_mean.shape, torch.Size([5, 3, 1]))
                acqf = qLogNoisyExpectedImprovement(model, X_baseline=X)
                values = acqf(torch.rand(6, 2, 2, dtype=dtype))
                self.assertEqual(values.shape, torch.Size([6]))
                self.assertTrue(bool(torch.isfinite(values).all()))
                bounds = torch.stack([torch.zeros(2), torch.ones(2)]).to(dtype)
                cand, _ = optimize_acqf(
                    acqf, bounds, q=1, num_restarts=2, raw_samples=16
                )
                self.assertEqual(cand.shape, torch.Size([1, 2]))
                self.assertTrue(bool(((cand >= 0) & (cand <= 1)).all()))

    def test_each_draw_is_the_gp_with_its_hyperparameters(self):
        X, Y = data()
        model = SGMCMCFullyBayesianSingleTaskGP(
            X, Y, outcome_transform=Standardize(1), covar_module=BOCKKernel()
        )
        template = copy.deepcopy(model)
        fast_fit(model)
        Xt = torch.rand(4, 2, dtype=torch.float64)
        post = model.posterior(Xt)
        for j in range(model.num_mcmc_samples):
            single = copy.deepcopy(template)
            with torch.no_grad():
                for name, p in model.named_parameters():
                    dict(single.named_parameters())[name].copy_(p[j])
            single.eval()
            # An unbatched model is a mixture of one: MCMC_DIM of size 1.
            ref = single.posterior(Xt)
            self.assertEqual(ref.mean.shape, torch.Size([1, 4, 1]))
            self.assertAllClose(post.mean[j], ref.mean[0], rtol=1e-6, atol=1e-8)
            self.assertAllClose(post.variance[j], ref.variance[0], rtol=1e-6, atol=1e-8)

    def test_nonlinear_outcome_transform(self):
        # Bilog (as the runner's "bilog" uses) makes BoTorch return a
        # TransformedPosterior; its base must stay the mixture over the draws,
        # and each draw's samples must be those of the GP with that draw's
        # hyperparameters, mapped back through Bilog.
        from botorch.acquisition import qLogNoisyExpectedImprovement
        from botorch.models.transforms.outcome import Bilog, ChainedOutcomeTransform
        from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
        from botorch.posteriors.transformed import TransformedPosterior

        X, Y = data()
        tf = ChainedOutcomeTransform(bilog=Bilog(), standardize=Standardize(1))
        model = SGMCMCFullyBayesianSingleTaskGP(
            X, 50 * Y, outcome_transform=tf, covar_module=BOCKKernel()
        )
        fast_fit(model)
        Xt = torch.rand(4, 2, dtype=torch.float64)
        post = model.posterior(Xt)
        self.assertIsInstance(post, TransformedPosterior)
        self.assertIsInstance(post._posterior, GaussianMixturePosterior)
        k = model.num_mcmc_samples
        self.assertEqual(post.base_sample_shape, torch.Size([k, 4]))
        base = torch.randn(256, k, 4, dtype=torch.float64)
        samples = post.rsample_from_base_samples(torch.Size([256]), base)
        self.assertEqual(samples.shape, torch.Size([256, k, 4, 1]))
        # Draw-wise reference: the base mvn of each draw (BoTorch has already
        # undone the affine standardization there), mapped back through the
        # inverse Bilog, sign(z) (exp|z| - 1).
        mvn = post._posterior.distribution
        L = torch.linalg.cholesky(mvn.covariance_matrix)
        z = mvn.mean.unsqueeze(0) + (L.unsqueeze(0) @ base.unsqueeze(-1)).squeeze(-1)
        ref = (z.sign() * z.abs().expm1()).unsqueeze(-1)
        self.assertAllClose(samples, ref, rtol=1e-6, atol=1e-6)
        # The draws are kept apart (MCMC_DIM), not averaged away.
        self.assertGreater((mvn.mean[0] - mvn.mean[1]).abs().max().item(), 0.0)
        acqf = qLogNoisyExpectedImprovement(model, X_baseline=X)
        values = acqf(torch.rand(3, 1, 2, dtype=torch.float64))
        self.assertEqual(values.shape, torch.Size([3]))
        self.assertTrue(bool(torch.isfinite(values).all()))

    def test_draws_differ_and_start_at_the_map(self):
        X, Y = data(n=20)
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y, outcome_transform=Standardize(1))
        result = fast_fit(model, num_samples=6, budget=60)
        ls = model.covar_module.lengthscale
        self.assertEqual(ls.shape, torch.Size([6, 1, 2]))
        self.assertGreater(float(ls.std(0).max()), 0.0)
        self.assertTrue(math.isfinite(result.metric))

    def test_fewer_draws_than_samples_warns(self):
        # budget 30 steps, thinned by 10 (three rounds): the winner keeps fewer
        # draws than the 16 asked for, which are then repeated.
        X, Y = data(n=20)
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y, outcome_transform=Standardize(1))
        with self.assertWarnsRegex(RuntimeWarning, "as 16 samples repeats some"):
            result = fast_fit(model, num_samples=16, budget=30)
        self.assertLess(result.samples.shape[0], 16)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            model = SGMCMCFullyBayesianSingleTaskGP(
                X, Y, outcome_transform=Standardize(1)
            )
            fast_fit(model, num_samples=result.samples.shape[0], budget=30)

    def test_every_arm_diverged_loads_the_map_as_the_only_draw(self):
        # MAMBA returning no samples (every arm diverged): a warning, and every
        # one of the requested draws is the MAP fit the chains started from.
        import dataclasses

        from botorch_ext.sgmcmc import fully_bayesian

        X, Y = data()
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y)
        real = fully_bayesian.mamba
        starts = {}

        def no_samples(gradient, z0, **kwargs):
            starts["z0"] = z0.clone()
            result = real(gradient, z0, **kwargs)
            return dataclasses.replace(result, samples=z0.new_zeros(0, z0.shape[0]))

        with mock.patch.object(fully_bayesian, "mamba", no_samples):
            with self.assertWarnsRegex(RuntimeWarning, "Every MAMBA arm diverged"):
                fast_fit(model, num_samples=4)
        self.assertEqual(model.num_mcmc_samples, 4)
        mapped = HyperparameterPosterior(SGMCMCFullyBayesianSingleTaskGP(X, Y)).unpack(
            starts["z0"].unsqueeze(0)
        )
        for name, p in model.named_parameters():
            self.assertEqual(p.shape[0], 4, name)
            expected = mapped[name].expand(p.shape)
            self.assertAllClose(p.detach(), expected, atol=1e-12)

    def test_settings_hold_unless_sampler_or_budget_unit_is_given(self):
        # The sampler and budget unit of `settings` used to be replaced by the
        # function's own defaults ("sgld", "seconds") in every call.
        from botorch_ext.sgmcmc import fully_bayesian

        real = fully_bayesian.mamba
        seen = []

        def recording_mamba(*args, **kwargs):
            fields = {f.name for f in dataclasses.fields(ArmSettings)}
            overrides = {k: v for k, v in kwargs.items() if k in fields}
            seen.append(arm_settings(kwargs.get("settings"), **overrides))
            return real(*args, **kwargs)

        X, Y = data(dtype=torch.double)
        X, Y = X.to(self.device), Y.to(self.device)
        sghmc_steps = ArmSettings(sampler="sghmc", budget_unit="steps", thin=2)
        cases = (
            ({}, ("sgld", "seconds")),  # the documented defaults
            ({"settings": sghmc_steps}, ("sghmc", "steps")),
            ({"settings": sghmc_steps, "sampler": "sgld"}, ("sgld", "steps")),
            ({"settings": sghmc_steps, "budget_unit": "seconds"}, ("sghmc", "seconds")),
        )
        with mock.patch.object(fully_bayesian, "mamba", recording_mamba):
            for kwargs, (sampler, unit) in cases:
                with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                    model = SGMCMCFullyBayesianSingleTaskGP(X, Y)
                    base = dict(
                        num_samples=2,
                        budget=0.05 if unit == "seconds" else 12,
                        step_sizes=(1e-3,),
                        num_leapfrog_steps=(2,) if sampler == "sghmc" else None,
                        fit_map=False,
                        generator=torch.Generator().manual_seed(0),
                    )
                    result = fit_fully_bayesian_model_sgmcmc(model, **base, **kwargs)
                    self.assertEqual(
                        (seen[-1].sampler, seen[-1].budget_unit), (sampler, unit)
                    )
                    leapfrog = result.best_arm.num_leapfrog_steps
                    self.assertEqual(leapfrog is not None, sampler == "sghmc")

    def test_bad_input(self):
        X, Y = data()
        with self.assertRaisesRegex(ValueError, "SGMCMCFullyBayesianSingleTaskGP"):
            fit_fully_bayesian_model_sgmcmc(SingleTaskGP(X, Y))
        model = SGMCMCFullyBayesianSingleTaskGP(X, Y)
        with self.assertRaisesRegex(ValueError, "num_samples"):
            fit_fully_bayesian_model_sgmcmc(model, num_samples=0)
        with self.assertRaisesRegex(ValueError, "budget"):
            fit_fully_bayesian_model_sgmcmc(model, budget=0.0)
        with self.assertRaisesRegex(ValueError, "step_sizes|empty"):
            fit_fully_bayesian_model_sgmcmc(model, step_sizes=())
        with self.assertRaisesRegex(ValueError, "every parameter"):
            model.load_hyperparameter_samples({})
        names = dict(model.named_parameters())
        bad = {k: v.detach().unsqueeze(0).expand(2, *v.shape) for k, v in names.items()}
        bad["mean_module.raw_constant"] = torch.zeros(2, 3, dtype=torch.float64)
        with self.assertRaisesRegex(ValueError, "raw_constant"):
            model.load_hyperparameter_samples(bad)
        fast_fit(model)
        with self.assertRaisesRegex(RuntimeError, "already"):
            fast_fit(model)
        with self.assertRaisesRegex(RuntimeError, "already loaded"):
            model.load_hyperparameter_samples(
                {k: v.detach()[:1] for k, v in model.named_parameters()}
            )
        fresh = SGMCMCFullyBayesianSingleTaskGP(X, Y)
        uneven = {
            k: v.detach().unsqueeze(0).expand(2 + (i == 0), *v.shape)
            for i, (k, v) in enumerate(fresh.named_parameters())
        }
        with self.assertRaisesRegex(ValueError, "same leading size, got"):
            fresh.load_hyperparameter_samples(uneven)
        batched = SGMCMCFullyBayesianSingleTaskGP(
            X.expand(2, *X.shape), Y.expand(2, *Y.shape)
        )
        with self.assertRaisesRegex(ValueError, "Batched training data"):
            fast_fit(batched)
