import ast
import inspect
import math
import textwrap
import warnings

import torch
from botorch.acquisition import input_constructors as botorch_constructors
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.monte_carlo import (
    qProbabilityOfImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.objective import (
    ConstrainedMCObjective,
    GenericMCObjective,
    IdentityMCObjective,
    LinearMCObjective,
)
from botorch.acquisition.utils import get_infeasible_cost
from botorch.exceptions.errors import UnsupportedError
from botorch.sampling.normal import IIDNormalSampler, SobolQMCNormalSampler
from botorch.utils.constraints import get_outcome_constraint_transforms
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.testing import BotorchTestCase, MockModel, MockPosterior

from botorch_ext.acquisition import qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.acquisition.input_constructors import (
    BOTORCH_PASS_THROUGH_KWARGS,
    DEFAULT_BETA,
    construct_inputs_qES,
    construct_inputs_qLogSoftKG,
    construct_inputs_qUCB,
    construct_inputs_soft_pi,
)
from tests.acquisition.helpers import make_gp, make_mock
from tests.acquisition.test_ucb import _brute_force_qucb

DTYPES = (torch.float, torch.double)


def _botorch_pass_through_kwargs() -> set[str]:
    """The ``allowed`` set literal of BoTorch's kwarg filter, read from its source."""
    source = inspect.getsource(botorch_constructors.allow_only_specific_variable_kwargs)
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "allowed" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError("BoTorch's `allowed` set not found")  # pragma: no cover


def _datasets(dtype, device, multi_output=False, n=6):
    """BoTorch's test fixtures ``blockX_blockY`` and ``blockX_multiY``."""
    gen = torch.Generator().manual_seed(7)
    X = torch.rand(n, 2, generator=gen, dtype=torch.double).to(
        dtype=dtype, device=device
    )
    Y = torch.randn(n, 2 if multi_output else 1, generator=gen, dtype=torch.double)
    Y = Y.to(X)
    if not multi_output:
        return SupervisedDataset(X, Y, feature_names=["x0", "x1"], outcome_names=["y"])
    return {
        f"y{i}": SupervisedDataset(
            X, Y[:, i : i + 1], feature_names=["x0", "x1"], outcome_names=[f"y{i}"]
        )
        for i in range(2)
    }


class TestInputConstructors(BotorchTestCase):
    def setUp(self):
        super().setUp()
        self.model = make_gp(device=self.device)
        X = self.model.train_inputs[0]
        # Outcomes on a large scale, so that tau scaling is visible.
        self.Y = 100.0 * self.model.train_targets.unsqueeze(-1)
        self.data = SupervisedDataset(
            X, self.Y, feature_names=["x0", "x1"], outcome_names=["y"]
        )

    def _build(self, cls, **kwargs):
        kw = get_acqf_input_constructor(cls)(
            model=self.model, training_data=self.data, **kwargs
        )
        acqf = cls(**kw)
        self.assertIsInstance(acqf, cls)
        return kw, acqf

    def test_every_class_is_registered_by_exact_class(self):
        from botorch.acquisition.input_constructors import (
            ACQF_INPUT_CONSTRUCTOR_REGISTRY,
        )

        for cls in (qUCB, qSoftPI, qLogSoftPI, qES):
            self.assertIn(cls, ACQF_INPUT_CONSTRUCTOR_REGISTRY)
        # The two soft-PI variants take the same arguments and share one.
        self.assertIs(
            get_acqf_input_constructor(qSoftPI), get_acqf_input_constructor(qLogSoftPI)
        )

    def test_qucb(self):
        kw, acqf = self._build(qUCB)
        self.assertEqual(kw["beta"], math.sqrt(3.0))  # [Wilson2017reparam]'s choice
        kw, acqf = self._build(qUCB, beta=0.5, objective_thresholds=None)
        self.assertEqual(acqf.beta, 0.5)
        X = torch.rand(2, 3, 2, device=self.device, dtype=torch.double)
        self.assertEqual(acqf(X).shape, torch.Size([2]))

    def test_soft_pi(self):
        std = self.Y.std().item()
        for cls in (qSoftPI, qLogSoftPI):
            kw, acqf = self._build(cls)
            self.assertAllClose(kw["best_f"], self.Y.max())
            self.assertAlmostEqual(kw["tau"], 0.01 * std, places=10)
            # Explicit values win; objectives enter best_f and the tau scale.
            weights = torch.tensor([-2.0], device=self.device, dtype=torch.double)
            kw, acqf = self._build(cls, objective=LinearMCObjective(weights), tau=0.3)
            self.assertAllClose(kw["best_f"], (-2.0 * self.Y).max())
            self.assertEqual(kw["tau"], 0.3)
            kw, _ = self._build(cls, objective=LinearMCObjective(weights))
            self.assertAlmostEqual(kw["tau"], 0.01 * 2.0 * std, places=10)

    def test_qes(self):
        # Bounds are d (lower, upper) pairs, as BoTorch's constructors take them.
        bounds = [(0.0, 1.0), (0.5, 2.0)]
        kw, acqf = self._build(qES, bounds=bounds, num_representer_points=16, seed=1)
        R = kw["representer_points"]
        self.assertEqual(R.shape, torch.Size([16, 2]))
        self.assertTrue(((R[:, 1] >= 0.5) & (R[:, 1] <= 2.0)).all())
        self.assertAlmostEqual(kw["tau"], 0.01 * self.Y.std().item(), places=10)
        # A tensor is read as ``2 x d`` (optimize_acqf's convention), even at d = 2.
        tensor_bounds = torch.tensor(bounds, dtype=torch.double).T.to(self.device)
        kw2, _ = self._build(
            qES, bounds=tensor_bounds, num_representer_points=16, seed=1
        )
        self.assertAllClose(kw2["representer_points"], R)
        R = torch.rand(5, 2, device=self.device, dtype=torch.double)
        kw, _ = self._build(qES, representer_points=R, tau=0.2)
        self.assertIs(kw["representer_points"], R)
        with self.assertRaisesRegex(ValueError, "`representer_points` or `bounds`"):
            get_acqf_input_constructor(qES)(model=self.model, training_data=self.data)


class TestBotorchParity(BotorchTestCase):
    r"""Equivalents of BoTorch's own input-constructor tests for qUCB and qPI, with
    the package's documented defaults (``beta = sqrt(3)``, ``tau = 0.01 x`` the
    training objective's standard deviation), and parity of signatures."""

    def test_every_botorch_keyword_is_accepted(self):
        # BoTorch's filter list as this package records it is BoTorch's own.
        self.assertEqual(
            _botorch_pass_through_kwargs(), set(BOTORCH_PASS_THROUGH_KWARGS)
        )
        pairs = (
            (construct_inputs_qUCB, botorch_constructors.construct_inputs_qUCB),
            (construct_inputs_soft_pi, botorch_constructors.construct_inputs_qPI),
        )
        for ours, theirs in pairs:
            ours_params = list(inspect.signature(ours).parameters)
            theirs_params = list(inspect.signature(theirs).parameters)
            missing = set(theirs_params) - set(ours_params)
            self.assertEqual(missing, set(), msg=ours.__name__)
            # ... in BoTorch's order (the extra names come after or between).
            self.assertEqual(
                [p for p in ours_params if p in theirs_params], theirs_params
            )
        # No name that BoTorch's wrapper lets through can vanish: every
        # constructor names them all (and applies them or raises).
        for constructor in (
            construct_inputs_qUCB,
            construct_inputs_soft_pi,
            construct_inputs_qES,
            construct_inputs_qLogSoftKG,
        ):
            params = set(inspect.signature(constructor).parameters)
            self.assertLessEqual(
                set(BOTORCH_PASS_THROUGH_KWARGS), params, msg=constructor.__name__
            )

    def test_construct_inputs_qUCB(self):
        c = get_acqf_input_constructor(qUCB)
        for dtype in DTYPES:
            tkw = {"dtype": dtype, "device": self.device}
            model = make_gp(**tkw)
            data = _datasets(dtype, self.device)
            kwargs = c(model=model, training_data=data)
            self.assertIs(kwargs["model"], model)
            self.assertIsNone(kwargs["objective"])
            self.assertIsNone(kwargs["posterior_transform"])
            self.assertIsNone(kwargs["X_pending"])
            self.assertIsNone(kwargs["sampler"])
            self.assertEqual(kwargs["beta"], math.sqrt(3.0))  # BoTorch: 0.2
            self.assertEqual(DEFAULT_BETA, math.sqrt(3.0))
            X_pending = torch.rand(2, 2, **tkw)
            objective = LinearMCObjective(torch.rand(1, **tkw))
            sampler = IIDNormalSampler(torch.Size([4]))
            kwargs = c(
                model=model,
                training_data=data,
                objective=objective,
                X_pending=X_pending,
                sampler=sampler,
                beta=0.1,
            )
            self.assertIs(kwargs["objective"], objective)
            self.assertTrue(torch.equal(kwargs["X_pending"], X_pending))
            self.assertIs(kwargs["sampler"], sampler)
            self.assertEqual(kwargs["beta"], 0.1)
            self.assertIsInstance(qUCB(**kwargs), qUCB)
            # With constraints.
            upper_bound = data.Y.mean()
            constraints = [lambda samples, u=upper_bound: samples[..., 0] - u]
            with self.assertRaisesRegex(
                ValueError, "Constraints require an X_baseline."
            ):
                c(
                    model=model,
                    training_data=data,
                    objective=objective,
                    constraints=constraints,
                )
            kwargs = c(
                model=model,
                training_data=data,
                objective=objective,
                X_baseline=data.X,
                constraints=constraints,
            )
            obj = kwargs["objective"]
            self.assertIsInstance(obj, ConstrainedMCObjective)
            self.assertIs(obj.objective, objective)
            self.assertIs(obj.constraints, constraints)
            self.assertAllClose(
                obj.infeasible_cost,
                get_infeasible_cost(X=data.X, model=model, objective=objective),
            )
            self.assertAllClose(obj.eta, torch.full_like(obj.eta, 1e-3))
            # Objective None: the constraints wrap the identity objective.
            kwargs = c(
                model=model,
                training_data=data,
                X_baseline=data.X,
                constraints=constraints,
                eta=0.05,
            )
            obj = kwargs["objective"]
            self.assertIsInstance(obj, ConstrainedMCObjective)
            self.assertIsInstance(obj.objective, IdentityMCObjective)
            self.assertAllClose(obj.eta, torch.full_like(obj.eta, 0.05))
            acqf = qUCB(**kwargs)
            self.assertIsInstance(acqf, qUpperConfidenceBound)
            self.assertFalse(acqf.uses_exact_mean)  # non-affine: sample mean

    def test_construct_inputs_qUCB_matches_botorch(self):
        # Every keyword of BoTorch's constructor, set; the same kwargs come back
        # (but the default beta) and the acquisition values agree exactly.
        for dtype in DTYPES:
            tkw = {"dtype": dtype, "device": self.device}
            model = make_gp(**tkw)
            data = _datasets(dtype, self.device)
            X = torch.rand(4, 3, 2, **tkw)
            constraints = [lambda Y: Y[..., 0] - 0.3]
            for extra in ({}, {"constraints": constraints, "X_baseline": data.X}):
                kw = {
                    "model": model,
                    "objective": LinearMCObjective(torch.tensor([1.5], **tkw)),
                    "posterior_transform": None,
                    "X_pending": torch.rand(1, 2, **tkw),
                    "sampler": None,
                    "beta": 0.7,
                    **extra,
                }
                ours = get_acqf_input_constructor(qUCB)(**kw, training_data=data)
                theirs = get_acqf_input_constructor(qUpperConfidenceBound)(
                    **kw, training_data=data
                )
                self.assertEqual(set(ours), set(theirs))
                for key in ("model", "beta", "sampler", "X_pending"):
                    self.assertIs(ours[key], theirs[key])
                self.assertIs(type(ours["objective"]), type(theirs["objective"]))
                if extra:
                    self.assertAllClose(
                        ours["objective"].infeasible_cost,
                        theirs["objective"].infeasible_cost,
                    )
                    ours["sampler"] = SobolQMCNormalSampler(torch.Size([64]), seed=1)
                    theirs["sampler"] = SobolQMCNormalSampler(torch.Size([64]), seed=1)
                    self.assertTrue(
                        torch.equal(qUCB(**ours)(X), qUpperConfidenceBound(**theirs)(X))
                    )

    def test_constrained_qUCB_values(self):
        # The value of the constructed qUCB: BoTorch's constrained q-UCB on the
        # same samples, checked against BoTorch's class with a real GP and fixed
        # base samples, and against the formula of ConstrainedMCObjective on a
        # MockModel's samples.
        c = get_acqf_input_constructor(qUCB)
        for dtype in DTYPES:
            tkw = {"dtype": dtype, "device": self.device}
            model = make_gp(**tkw)
            data = _datasets(dtype, self.device)
            X = torch.rand(5, 2, 2, **tkw)
            threshold = model.posterior(X).mean.median()
            constraints = [lambda Y, t=threshold: Y[..., 0] - t]
            kw = c(
                model=model,
                training_data=data,
                X_baseline=data.X,
                constraints=constraints,
                eta=0.1,
                sampler=SobolQMCNormalSampler(torch.Size([256]), seed=0),
            )
            ours = qUCB(**kw)(X)
            ref = qUpperConfidenceBound(
                model,
                kw["beta"],
                SobolQMCNormalSampler(torch.Size([256]), seed=0),
                ConstrainedMCObjective(
                    objective=IdentityMCObjective(),
                    constraints=constraints,
                    infeasible_cost=get_infeasible_cost(data.X, model),
                    eta=0.1,
                ),
            )(X)
            self.assertTrue(torch.equal(ours, ref))
            unconstrained = qUCB(
                model, kw["beta"], SobolQMCNormalSampler(torch.Size([256]), seed=0)
            )(X)
            self.assertGreater((unconstrained - ours).abs().max().item(), 0.1)

            # By hand on known samples: obj_c = (y + M) * sigmoid(-c(y) / eta) - M.
            n, b, q = 6, 3, 2
            samples = torch.randn(n, b, q, 1, **tkw)
            mean = torch.randn(b, q, 1, **tkw)
            mock = make_mock(samples, mean=mean)
            mock._posterior._variance = torch.ones(b, q, 1, **tkw)
            kw = c(
                model=mock,
                X_baseline=torch.zeros(b, q, 1, **tkw),
                constraints=[lambda Y: Y[..., 0] - 0.2],
                eta=0.3,
                beta=0.9,
                sampler=IIDNormalSampler(torch.Size([n])),
            )
            M = kw["objective"].infeasible_cost
            self.assertGreater(M.item(), 0.0)
            y = samples[..., 0]
            obj_c = (y + M) * torch.sigmoid(-(y - 0.2) / 0.3) - M
            expected = _brute_force_qucb(obj_c.mean(0), obj_c, 0.9)
            val = qUCB(**kw)(torch.zeros(b, q, 1, **tkw))
            self.assertAllClose(val.double().cpu(), expected, rtol=1e-5, atol=1e-5)

    def test_construct_inputs_soft_pi(self):
        # BoTorch's test_construct_inputs_qPI, with tau = 0.01 x the training
        # objective's standard deviation as the default.
        for cls in (qSoftPI, qLogSoftPI):
            c = get_acqf_input_constructor(cls)
            for dtype in DTYPES:
                tkw = {"dtype": dtype, "device": self.device}
                mock_model = MockModel(MockPosterior(mean=None, variance=None))
                block = _datasets(dtype, self.device)
                kwargs = c(model=mock_model, training_data=block)
                self.assertIs(kwargs["model"], mock_model)
                self.assertIsNone(kwargs["objective"])
                self.assertIsNone(kwargs["posterior_transform"])
                self.assertIsNone(kwargs["X_pending"])
                self.assertIsNone(kwargs["sampler"])
                self.assertIsNone(kwargs["constraints"])
                self.assertIsInstance(kwargs["eta"], float)
                self.assertLess(kwargs["eta"], 1)
                self.assertTrue(torch.equal(kwargs["best_f"], block.Y.max()))
                self.assertAlmostEqual(
                    kwargs["tau"], 0.01 * block.Y.std().item(), places=6
                )
                # A multi-output model needs an objective (BoTorch's error) ...
                data = _datasets(dtype, self.device, multi_output=True)
                multi_Y = torch.cat([d.Y for d in data.values()], dim=-1)
                with self.assertRaisesRegex(UnsupportedError, "require an objective"):
                    c(model=mock_model, training_data=data)
                # ... unless best_f is given; the tau scale then averages the
                # outcomes' standard deviations.
                kwargs = c(model=mock_model, training_data=data, best_f=0.0)
                self.assertAlmostEqual(
                    kwargs["tau"], 0.01 * multi_Y.std(dim=0).mean().item(), places=6
                )
                # Explicit values.
                X_pending = torch.rand(2, 2, **tkw)
                objective = LinearMCObjective(torch.rand(2, **tkw))
                kwargs = c(
                    model=mock_model,
                    training_data=data,
                    objective=objective,
                    X_pending=X_pending,
                    tau=1e-2,
                    best_f=0.1,
                )
                self.assertIs(kwargs["objective"], objective)
                self.assertTrue(torch.equal(kwargs["X_pending"], X_pending))
                self.assertEqual(kwargs["tau"], 1e-2)
                self.assertEqual(kwargs["best_f"], 0.1)
                # best_f and the tau scale from the objective.
                kwargs = c(model=mock_model, training_data=data, objective=objective)
                obj_values = objective(multi_Y)
                self.assertAllClose(kwargs["best_f"], obj_values.max())
                self.assertAlmostEqual(
                    kwargs["tau"], 0.01 * obj_values.std().item(), places=6
                )
                # Constraints enter best_f (the best feasible value) and are passed.
                median = multi_Y[:, 0].median()
                constraints = [lambda Y, m=median: Y[..., 0] - m]
                kwargs = c(
                    model=mock_model,
                    training_data=data,
                    objective=objective,
                    constraints=constraints,
                    eta=0.05,
                )
                feasible = multi_Y[:, 0] <= multi_Y[:, 0].median()
                self.assertAllClose(kwargs["best_f"], obj_values[feasible].max())
                self.assertIs(kwargs["constraints"], constraints)
                self.assertEqual(kwargs["eta"], 0.05)

    def test_construct_inputs_soft_pi_matches_botorch(self):
        # Every keyword of BoTorch's qPI constructor, set: the same kwargs, and
        # qSoftPI's value equals qProbabilityOfImprovement's bit for bit.
        for dtype in DTYPES:
            tkw = {"dtype": dtype, "device": self.device}
            model = make_gp(**tkw)
            data = _datasets(dtype, self.device)
            X = torch.rand(4, 2, 2, **tkw)
            for best_f in (None, 0.3):
                kw = {
                    "model": model,
                    "training_data": data,
                    "objective": LinearMCObjective(torch.tensor([0.8], **tkw)),
                    "posterior_transform": None,
                    "X_pending": torch.rand(1, 2, **tkw),
                    "sampler": None,
                    "tau": 0.05,
                    "best_f": best_f,
                    "constraints": [lambda Y: Y[..., 0] - 0.5],
                    "eta": 0.02,
                }
                ours = get_acqf_input_constructor(qSoftPI)(**kw)
                theirs = get_acqf_input_constructor(qProbabilityOfImprovement)(**kw)
                self.assertEqual(set(ours), set(theirs))
                for key, value in theirs.items():
                    if isinstance(value, torch.Tensor):
                        self.assertTrue(torch.equal(ours[key], value), msg=key)
                    else:
                        self.assertIs(ours[key], value, msg=key)
                ours["sampler"] = SobolQMCNormalSampler(torch.Size([64]), seed=2)
                theirs["sampler"] = SobolQMCNormalSampler(torch.Size([64]), seed=2)
                self.assertTrue(
                    torch.equal(
                        qSoftPI(**ours)(X), qProbabilityOfImprovement(**theirs)(X)
                    )
                )

    def test_ax_style_call_applies_constraints(self):
        # Ax hands every constructor training_data, bounds and X_baseline, and
        # for outcome constraints both `constraints` and `constraints_tuple`.
        model = make_gp(device=self.device)
        data = _datasets(torch.double, self.device)
        A = torch.tensor([[1.0]], device=self.device, dtype=torch.double)
        b = torch.tensor([[0.2]], device=self.device, dtype=torch.double)
        ax_kwargs = {
            "model": model,
            "training_data": data,
            "bounds": [(0.0, 1.0), (0.0, 1.0)],
            "X_baseline": data.X,
            "constraints": get_outcome_constraint_transforms((A, b)),
            "constraints_tuple": (A, b),
            "objective": GenericMCObjective(lambda Y, X=None: Y[..., 0]),
        }
        kwargs = get_acqf_input_constructor(qUCB)(**ax_kwargs)
        self.assertIsInstance(kwargs["objective"], ConstrainedMCObjective)
        kwargs = get_acqf_input_constructor(qSoftPI)(**ax_kwargs)
        self.assertIs(kwargs["constraints"], ax_kwargs["constraints"])
        with self.assertRaisesRegex(ValueError, "qES.*`objective`"):
            get_acqf_input_constructor(qES)(**ax_kwargs)
        no_objective = {k: v for k, v in ax_kwargs.items() if k != "objective"}
        with self.assertRaisesRegex(ValueError, "qES.*`constraints`.*does not support"):
            get_acqf_input_constructor(qES)(**no_objective)
        with self.assertRaisesRegex(ValueError, "qLogSoftKG.*`objective`"):
            get_acqf_input_constructor(qLogSoftKG)(**ax_kwargs)
        with self.assertRaisesRegex(
            ValueError, "qLogSoftKG.*`constraints`.*does not support"
        ):
            get_acqf_input_constructor(qLogSoftKG)(**no_objective)

    def test_inapplicable_arguments_raise(self):
        model = make_gp(device=self.device)
        data = _datasets(torch.double, self.device)
        A = torch.tensor([[1.0]], device=self.device, dtype=torch.double)
        b = torch.tensor([[0.2]], device=self.device, dtype=torch.double)
        base = {"model": model, "training_data": data, "bounds": [(0.0, 1.0)] * 2}
        for cls in (qUCB, qSoftPI, qLogSoftPI, qES, qLogSoftKG):
            c = get_acqf_input_constructor(cls)
            for name, value in (
                ("ref_point", [0.0]),
                ("objective_thresholds", torch.zeros(1).to(A)),
                ("constraints_tuple", (A, b)),
                ("constraints", get_outcome_constraint_transforms((A, b))),
            ):
                if name == "constraints" and cls in (qUCB, qSoftPI, qLogSoftPI):
                    continue  # applied
                with self.assertRaisesRegex(ValueError, f"`{name}`"):
                    c(**base, **{name: value})
        with self.assertRaisesRegex(ValueError, "`eta`.*no `constraints`"):
            get_acqf_input_constructor(qUCB)(model=model, eta=0.1)
        # Context arguments pass: the acquisition function does not need them.
        for cls in (qUCB, qSoftPI, qLogSoftPI, qLogSoftKG):
            kwargs = get_acqf_input_constructor(cls)(**base, X_baseline=data.X)
            self.assertIsInstance(cls(**kwargs), cls)


class TestTrainingObjectiveScale(BotorchTestCase):
    def test_posterior_transform_objective_and_fallbacks(self):
        from botorch.acquisition.objective import ScalarizedPosteriorTransform

        from botorch_ext.acquisition.input_constructors import training_objective_scale

        for dtype in (torch.float, torch.double):
            gen = torch.Generator().manual_seed(0)
            X = torch.rand(9, 2, generator=gen).to(dtype)
            Y = 10 * torch.randn(9, 2, generator=gen).to(dtype)
            data = SupervisedDataset(
                X, Y, feature_names=["a", "b"], outcome_names=["y0", "y1"]
            )
            w = torch.tensor([2.0, -1.0], dtype=dtype)
            tol = 64 * torch.finfo(dtype).eps * (Y @ w).std().item()
            # The scalarized outcome's spread, as BoTorch's get_best_f_mc
            # scalarizes it.
            scale = training_objective_scale(
                data, posterior_transform=ScalarizedPosteriorTransform(w)
            )
            self.assertAlmostEqual(scale, (Y @ w).std().item(), delta=tol)
            scale = training_objective_scale(data, objective=LinearMCObjective(w))
            self.assertAlmostEqual(scale, (Y @ w).std().item(), delta=tol)
            # Unscalarized: the outcomes' spreads, averaged.
            self.assertAlmostEqual(
                training_objective_scale(data),
                Y.std(dim=0).mean().item(),
                delta=tol,
            )
            # Undefined or zero spread: 1.
            one = SupervisedDataset(
                X[:1], Y[:1, :1], feature_names=["a", "b"], outcome_names=["y0"]
            )
            flat = SupervisedDataset(
                X,
                torch.ones(9, 1, dtype=dtype),
                feature_names=["a", "b"],
                outcome_names=["y0"],
            )
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no degrees-of-freedom warning
                self.assertEqual(training_objective_scale(one), 1.0)
            self.assertEqual(training_objective_scale(flat), 1.0)
