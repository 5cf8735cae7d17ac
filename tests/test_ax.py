import json
import sys
import tempfile
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from botorch.models import SingleTaskVariationalGP
from botorch.utils.testing import BotorchTestCase

import botorch_ext.ax
from botorch_ext.acquisition import qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.eulbo import (
    EULBO,
    EULBOModel,
    EULBOOptions,
    JointOptions,
    StoppingOptions,
    WarmStartOptions,
)
from botorch_ext.kernels import BOCKKernel

DIM = 6
#: BOCK's kernel options in the stored client: a non-default parameterization.
SQUARE_WEIGHTS = {"angular_weights_parameterization": "square"}
# Small fits and acquisition budgets: these tests check the Ax integration,
# not BO quality.
OPTIONS = EULBOOptions(
    stopping=StoppingOptions(max_steps=60),
    warm_start=WarmStartOptions(num_restarts=2, raw_samples=32),
)
#: The fit's settings where Ax keeps a fit's settings (``mll_options``).
MLL_OPTIONS = {"options": OPTIONS, "objective": EULBO(utility_weight=0.5)}
SMALL_ACQF = {
    "model_gen_options": {"optimizer_kwargs": {"num_restarts": 2, "raw_samples": 32}}
}


def _client():
    from ax import Client, RangeParameterConfig
    from ax.adapter.registry import Generators
    from ax.generation_strategy.generation_node import GenerationStep
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import (
        ModelConfig,
        SurrogateSpec,
    )

    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0, 1))
            for i in range(DIM)
        ]
    )
    client.configure_optimization(objective="-hartmann6")
    bo = GenerationStep(
        generator=Generators.BOTORCH_MODULAR,
        num_trials=-1,
        generator_kwargs={
            "botorch_acqf_class": qUCB,
            "surrogate_spec": SurrogateSpec(
                model_configs=[
                    ModelConfig(
                        covar_module_class=BOCKKernel,
                        covar_module_options=SQUARE_WEIGHTS,
                    )
                ]
            ),
        },
        # Small acquisition optimization: this tests storage, not BO quality.
        generator_gen_kwargs={
            "model_gen_options": {
                "optimizer_kwargs": {"num_restarts": 2, "raw_samples": 32}
            }
        },
    )
    sobol = GenerationStep(generator=Generators.SOBOL, num_trials=5)
    client.set_generation_strategy(
        GenerationStrategy(name="sobol+qucb-bock", nodes=[sobol, bo])
    )
    return client


def _run_trials(client, n):
    from botorch.test_functions import Hartmann

    hartmann = Hartmann(dim=DIM)
    for _ in range(n):
        for index, params in client.get_next_trials(max_trials=1).items():
            x = torch.tensor([[params[f"x{i}"] for i in range(DIM)]]).double()
            client.complete_trial(index, raw_data={"hartmann6": hartmann(x).item()})


class TestAx(BotorchTestCase):
    def test_register_covers_every_public_class(self):
        from ax.storage.botorch_modular_registry import (
            CLASS_TO_REGISTRY,
            CLASS_TO_REVERSE_REGISTRY,
        )
        from botorch.acquisition import AcquisitionFunction
        from gpytorch.kernels import Kernel

        self.assertEqual(
            set(botorch_ext.ax.acquisition_functions()),
            {qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB},
        )
        self.assertEqual(botorch_ext.ax.kernel_classes(), (BOCKKernel,))
        botorch_ext.ax.register()
        botorch_ext.ax.register()  # idempotent
        for base, classes in (
            (AcquisitionFunction, (qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB)),
            (Kernel, (BOCKKernel,)),
        ):
            for cls in classes:
                self.assertEqual(CLASS_TO_REGISTRY[base][cls], cls.__name__)
                self.assertIs(CLASS_TO_REVERSE_REGISTRY[base][cls.__name__], cls)

    def test_register_covers_models_bounds_and_acquisition(self):
        from ax.generators.torch.botorch_modular.acquisition import Acquisition
        from ax.generators.torch.botorch_modular.surrogate import (
            submodel_input_constructor,
        )
        from ax.generators.torch.botorch_modular.utils import fit_botorch_model
        from ax.storage.botorch_modular_registry import (
            CLASS_TO_REGISTRY,
            CLASS_TO_REVERSE_REGISTRY,
        )
        from ax.storage.json_store.registry import CORE_DECODER_REGISTRY
        from botorch.models.model import Model
        from gpytorch.mlls import (
            GammaRobustVariationalELBO,
            MarginalLogLikelihood,
            PredictiveLogLikelihood,
            VariationalELBO,
        )

        from botorch_ext.ax import EULBOAcquisition, storage, surrogate

        botorch_ext.ax.register()
        for base, classes in (
            (Model, (EULBOModel, SingleTaskVariationalGP)),
            (
                MarginalLogLikelihood,
                (VariationalELBO, PredictiveLogLikelihood, GammaRobustVariationalELBO),
            ),
            (Acquisition, (EULBOAcquisition,)),
        ):
            for cls in classes:
                self.assertEqual(CLASS_TO_REGISTRY[base][cls], cls.__name__)
                self.assertIs(CLASS_TO_REVERSE_REGISTRY[base][cls.__name__], cls)
        self.assertIs(
            CORE_DECODER_REGISTRY["EULBOOptions"], storage.eulbo_options_from_json
        )
        self.assertIs(
            submodel_input_constructor.dispatch(EULBOModel),
            surrogate.construct_eulbo_inputs,
        )
        self.assertIs(
            submodel_input_constructor.dispatch(SingleTaskVariationalGP),
            surrogate.construct_variational_gp_inputs,
        )
        for model_class in (EULBOModel, SingleTaskVariationalGP):
            self.assertIs(
                fit_botorch_model.dispatch(model_class), surrogate.fit_variational_gp
            )

    def test_without_ax_the_error_says_what_to_install(self):
        with mock.patch.dict(
            sys.modules, {"ax.storage.botorch_modular_registry": None}
        ):
            with self.assertRaisesRegex(ImportError, r"botorch-ext\[ax\]"):
                botorch_ext.ax.register()

    def test_client_json_round_trip_with_qucb_and_bock(self):
        from ax import Client

        botorch_ext.ax.register()
        client = _client()
        _run_trials(client, 8)  # 5 Sobol, then 3 from qUCB on BOCK
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "client.json"
            client.save_to_json_file(str(path))
            text = path.read_text()
            json.loads(text)  # a complete file
            self.assertIn('"qUCB"', text)
            self.assertIn('"BOCKKernel"', text)
            loaded = Client.load_from_json_file(str(path))
            # A file stored under the kernel's name before 0.2.0 still loads.
            path.write_text(text.replace('"BOCKKernel"', '"CylindricalKernel"'))
            old = Client.load_from_json_file(str(path))
        old_node = old._generation_strategy._curr
        old_config = old_node.generator_specs[0].generator_kwargs["surrogate_spec"]
        self.assertIs(old_config.model_configs[0].covar_module_class, BOCKKernel)
        node = loaded._generation_strategy._curr
        kwargs = node.generator_specs[0].generator_kwargs
        self.assertIs(kwargs["botorch_acqf_class"], qUCB)
        model_config = kwargs["surrogate_spec"].model_configs[0]
        self.assertIs(model_config.covar_module_class, BOCKKernel)
        # The kernel's options are stored, and the continued fits use them.
        self.assertEqual(model_config.covar_module_options, SQUARE_WEIGHTS)
        _run_trials(loaded, 2)
        trials = loaded._experiment.trials
        self.assertEqual(len(trials), 10)
        self.assertTrue(all(t.status.is_completed for t in trials.values()))
        # The continued trials come from the stored BoTorch node, not from Sobol.
        for index in (8, 9):
            run = trials[index].generator_runs[0]
            self.assertEqual(run._generation_node_name, node.name)
        fitted = node.generator_specs[0].fitted_adapter.generator.surrogate.model
        self.assertIsInstance(fitted.covar_module, BOCKKernel)
        self.assertEqual(fitted.covar_module.angular_weights_parameterization, "square")


def _eulbo_client(
    model_config=None,
    generator_kwargs=None,
    num_sobol=12,
    storage_config=None,
    name="hartmann6",
):
    r"""Hartmann6 (minimized) with Sobol, then BoTorch on an EULBOModel."""
    from ax import Client, RangeParameterConfig
    from ax.adapter.registry import Generators
    from ax.generation_strategy.generation_node import GenerationStep
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import (
        ModelConfig,
        SurrogateSpec,
    )

    botorch_ext.ax.register()
    if model_config is None:
        model_config = ModelConfig(
            botorch_model_class=EULBOModel,
            model_options={"num_inducing_points": 8},
            mll_options=MLL_OPTIONS,
        )
    client = Client(random_seed=0, storage_config=storage_config)
    client.configure_experiment(
        name=name,
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0, 1))
            for i in range(DIM)
        ],
    )
    client.configure_optimization(objective="-hartmann6")
    bo = GenerationStep(
        generator=Generators.BOTORCH_MODULAR,
        num_trials=-1,
        generator_kwargs={
            "surrogate_spec": SurrogateSpec(model_configs=[model_config]),
            **(generator_kwargs or {}),
        },
        generator_gen_kwargs=SMALL_ACQF,
    )
    sobol = GenerationStep(generator=Generators.SOBOL, num_trials=num_sobol)
    client.set_generation_strategy(
        GenerationStrategy(name="sobol+eulbo", nodes=[sobol, bo])
    )
    return client


def _generator(client):
    r"""The fitted BoTorchGenerator of the client's current node."""
    node = client._generation_strategy._curr
    return node.generator_specs[0].fitted_adapter.generator


def _check_trials(test, client, count, bo_from):
    trials = client._experiment.trials
    test.assertEqual(len(trials), count)
    test.assertTrue(all(t.status.is_completed for t in trials.values()))
    node = client._generation_strategy._curr.name
    for index in range(bo_from, count):
        test.assertEqual(trials[index].generator_runs[0]._generation_node_name, node)


class TestEULBOModelInAx(BotorchTestCase):
    def test_client_fits_eulbo_model_then_json_round_trip(self):
        from ax import Client

        client = _eulbo_client()
        _run_trials(client, 12)
        previous = None
        for _ in range(4):
            _run_trials(client, 1)
            model = _generator(client).surrogate.model
            self.assertIsInstance(model, EULBOModel)
            self.assertIsNot(model, previous)
            # Fitted by Ax's fit_botorch_model -> botorch_ext.eulbo.fit_elbo.
            self.assertGreater(model.last_fit["steps"], 0)
            self.assertEqual(model.num_inducing_points, 8)
            # Built from Ax's training data: 12 + trials so far.
            n = len(client._experiment.trials) - 1
            self.assertEqual(model.train_X_full.shape, torch.Size([n, DIM]))
            # Algorithm 1: the model of the previous trial started this one.
            self.assertEqual(model.carried_state, previous is not None)
            previous = model
        _check_trials(self, client, 16, bo_from=12)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "client.json"
            client.save_to_json_file(str(path))
            text = path.read_text()
            json.loads(text)
            self.assertIn('"EULBOModel"', text)
            self.assertIn('"EULBOOptions"', text)
            self.assertIn('"EULBO"', text)
            self.assertNotIn('"max_steps": 60, "num_restarts"', text)  # grouped
            loaded = Client.load_from_json_file(str(path))
        node = loaded._generation_strategy._curr
        config = node.generator_specs[0].generator_kwargs["surrogate_spec"]
        config = config.model_configs[0]
        self.assertIs(config.botorch_model_class, EULBOModel)
        self.assertEqual(config.mll_options, MLL_OPTIONS)
        _run_trials(loaded, 2)
        _check_trials(self, loaded, 18, bo_from=12)
        model = _generator(loaded).surrogate.model
        self.assertIsInstance(model, EULBOModel)
        self.assertEqual(model.train_X_full.shape, torch.Size([17, DIM]))

    def test_one_line_config_q_batch(self):
        from ax.generators.torch.botorch_modular.surrogate import ModelConfig

        # The one-line configuration, EULBOModel's defaults, a q = 3 batch
        # from Ax's default acquisition function in one optimization.
        client = _eulbo_client(
            model_config=ModelConfig(botorch_model_class=EULBOModel), num_sobol=8
        )
        _run_trials(client, 8)
        gs = client._generation_strategy
        run = gs.gen_single_trial(experiment=client._experiment, n=3)
        self.assertEqual(len(run.arms), 3)
        X = torch.tensor(
            [[arm.parameters[f"x{i}"] for i in range(DIM)] for arm in run.arms]
        )
        self.assertTrue(((X >= 0) & (X <= 1)).all())
        self.assertEqual(len({tuple(x.tolist()) for x in X}), 3)
        generator = _generator(client)
        self.assertIsInstance(generator.surrogate.model, EULBOModel)
        self.assertGreater(generator.surrogate.model.last_fit["steps"], 0)
        # The batch continues the Client's experiment as ordinary trials.
        from botorch.test_functions import Hartmann

        hartmann = Hartmann(dim=DIM)
        for x in X:
            index = client.attach_trial(
                parameters={f"x{i}": x[i].item() for i in range(DIM)}
            )
            client.complete_trial(index, raw_data={"hartmann6": hartmann(x).item()})
        _check_trials(self, client, 11, bo_from=11)

    def test_cross_validation_with_fewer_data_than_inducing_points(self):
        from ax.adapter.cross_validation import cross_validate
        from ax.generators.torch.botorch_modular.surrogate import ModelConfig

        # EULBOModel's default m = 100 on 8 trials: every leave-one-out fold has
        # 7 points, fewer than the full model's 8 inducing points, and takes
        # its state (Ax's refit_on_cv is False).
        client = _eulbo_client(
            model_config=ModelConfig(botorch_model_class=EULBOModel), num_sobol=8
        )
        _run_trials(client, 9)
        model = _generator(client).surrogate.model
        self.assertEqual(model.num_inducing_points, 8)
        results = cross_validate(client._generation_strategy.adapter)
        self.assertEqual(len(results), 8)
        for result in results:
            self.assertTrue(np.isfinite(result.predicted.means).all())
            self.assertTrue((np.diag(result.predicted.covariance) > 0).all())
        # refit_on_cv: each fold is fitted (from the loaded state) on its own
        # data, so its prediction no longer comes from a q(u) that saw the point.
        client = _eulbo_client(
            model_config=ModelConfig(botorch_model_class=EULBOModel),
            generator_kwargs={"refit_on_cv": True},
            num_sobol=8,
        )
        _run_trials(client, 9)
        refitted = cross_validate(client._generation_strategy.adapter)
        self.assertEqual(len(refitted), 8)
        means = [r.predicted.means[0] for r in results]
        refit_means = [r.predicted.means[0] for r in refitted]
        self.assertTrue(np.isfinite(refit_means).all())
        self.assertFalse(np.allclose(means, refit_means))

    def test_sql_round_trip(self):
        from ax import Client
        from ax.api.configs import StorageConfig
        from ax.storage.sqa_store.db import (
            create_all_tables,
            get_engine,
            init_engine_and_session_factory,
        )

        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'ax.db'}"
            init_engine_and_session_factory(url=url, force_init=True)
            create_all_tables(get_engine())
            storage = StorageConfig(url=url)
            client = _eulbo_client(
                num_sobol=6, storage_config=storage, name="eulbo_sql"
            )
            _run_trials(client, 7)  # saved to the database as it goes
            loaded = Client.load_from_database("eulbo_sql", storage_config=storage)
            node = loaded._generation_strategy._curr
            config = node.generator_specs[0].generator_kwargs["surrogate_spec"]
            config = config.model_configs[0]
            self.assertIs(config.botorch_model_class, EULBOModel)
            self.assertEqual(config.mll_options, MLL_OPTIONS)
            _run_trials(loaded, 1)
            _check_trials(self, loaded, 8, bo_from=6)
            self.assertIsInstance(_generator(loaded).surrogate.model, EULBOModel)
            again = Client.load_from_database("eulbo_sql", storage_config=storage)
            self.assertEqual(len(again._experiment.trials), 8)

    def test_joint_step_acquisition_q_batch(self):
        from botorch_ext.ax import EULBOAcquisition

        client = _eulbo_client(
            num_sobol=8,
            generator_kwargs={
                "acquisition_class": EULBOAcquisition,
                "acquisition_options": {"utility": "ei", "seed": 1},
            },
        )
        _run_trials(client, 8)
        gs = client._generation_strategy
        run = gs.gen_single_trial(experiment=client._experiment, n=2)
        self.assertEqual(len(run.arms), 2)
        generator = _generator(client)
        acquisition = generator._acquisition
        self.assertIsInstance(acquisition, EULBOAcquisition)
        surrogate_model = generator.surrogate.model
        joint = acquisition.eulbo_model
        # Minimized objective: the joint step ran on a model of -Y (Standardize
        # is odd, so its standardized outcomes are exactly the negated ones).
        self.assertIsNot(joint, surrogate_model)
        self.assertAllClose(joint.train_Y_std, -surrogate_model.train_Y_std)
        self.assertIsNotNone(joint.last_optimization.get("utility"))
        X = torch.tensor(
            [[arm.parameters[f"x{i}"] for i in range(DIM)] for arm in run.arms]
        )
        self.assertTrue(((X >= 0) & (X <= 1)).all())
        self.assertEqual(len({tuple(x.tolist()) for x in X}), 2)
        # The choice is stored with the generation strategy.
        from ax import Client

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "client.json"
            client.save_to_json_file(str(path))
            self.assertIn('"EULBOAcquisition"', path.read_text())
            loaded = Client.load_from_json_file(str(path))
        kwargs = loaded._generation_strategy._curr.generator_specs[0].generator_kwargs
        self.assertIs(kwargs["acquisition_class"], EULBOAcquisition)
        self.assertEqual(kwargs["acquisition_options"], {"utility": "ei", "seed": 1})


def _digest(d=2, **kwargs):
    from ax.core.search_space import SearchSpaceDigest

    return SearchSpaceDigest(
        feature_names=[f"x{i}" for i in range(d)], bounds=[(0.0, 1.0)] * d, **kwargs
    )


def _dataset(X, Y, Yvar=None):
    from botorch.utils.datasets import SupervisedDataset

    return SupervisedDataset(
        X=X,
        Y=Y,
        Yvar=Yvar,
        feature_names=[f"x{i}" for i in range(X.shape[-1])],
        outcome_names=["y"],
    )


def _branin_like(n, dtype=torch.double, seed=0):
    X = torch.rand(n, 2, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    Y = (torch.sin(6 * X[:, :1]) + X[:, 1:] ** 2).to(dtype)
    return X, Y


def _surrogate(model_options=None, model_class=EULBOModel, **config):
    from ax.generators.torch.botorch_modular.surrogate import (
        ModelConfig,
        Surrogate,
        SurrogateSpec,
    )

    botorch_ext.ax.register()
    if model_options is None and model_class is EULBOModel:
        model_options = {"num_inducing_points": 6}
        config.setdefault("mll_options", MLL_OPTIONS)
    model_config = ModelConfig(
        botorch_model_class=model_class, model_options=model_options or {}, **config
    )
    return Surrogate(surrogate_spec=SurrogateSpec(model_configs=[model_config]))


class TestSurrogateHooks(BotorchTestCase):
    def test_eulbo_model_built_from_training_data_and_carried(self):
        from ax.exceptions.core import UserInputError

        from botorch_ext.ax.surrogate import construct_eulbo_inputs

        for dtype in (torch.float, torch.double):
            surrogate = _surrogate()
            X, Y = _branin_like(10, dtype)
            surrogate.fit([_dataset(X[:8], Y[:8])], _digest())
            first = surrogate.model
            self.assertIsInstance(first, EULBOModel)
            self.assertFalse(first.carried_state)
            self.assertEqual(first.train_X_full.dtype, dtype)
            self.assertAllClose(first.train_X_full, X[:8])
            config = surrogate.surrogate_spec.model_configs[0]

            def inputs(X, Y, config=config, surrogate=surrogate):
                return construct_eulbo_inputs(
                    EULBOModel, config, _dataset(X, Y), _digest(), surrogate
                )

            # New rows after the old ones: the previous model starts the next.
            self.assertIs(inputs(X, Y)["previous_model"], first)
            # Not an extension (a reordered or smaller data set): from scratch.
            self.assertNotIn("previous_model", inputs(X.flip(0), Y.flip(0)))
            self.assertNotIn("previous_model", inputs(X[:7], Y[:7]))
            self.assertNotIn("previous_model", inputs(X[1:9], Y[1:9]))
            # Ax's refit continues from it (same number of inducing points).
            surrogate.fit([_dataset(X, Y)], _digest())
            self.assertIsNot(surrogate.model, first)
            self.assertTrue(surrogate.model.carried_state)
            self.assertEqual(surrogate.model.train_X_full.shape[-2], 10)
            # model_options: EULBOModel's arguments only.
            built = inputs(X, Y, config=_config({"carry_state": False}))
            self.assertLessEqual(
                {"train_X", "train_Y", "carry_state", "outcome_transform"}, set(built)
            )
            # The form of 0.1.0: settings in model_options (options as a dict of
            # flat names too) go to this call's mll_options, with a warning.
            legacy = _config({"options": {"max_steps": 7}, "elbo_scale": "mean"})
            with self.assertWarnsRegex(DeprecationWarning, "mll_options"):
                built = inputs(X, Y, config=legacy)
            self.assertNotIn("options", built)
            self.assertNotIn("elbo_scale", built)
            self.assertEqual(
                legacy.mll_options,
                {
                    "options": EULBOOptions(stopping=StoppingOptions(max_steps=7)),
                    "objective": EULBO(elbo_scale="mean"),
                },
            )
            self.assertNotIn("warm_start", built)
            off = _config({"warm_start": False})
            self.assertNotIn("previous_model", inputs(X, Y, config=off))
            with self.assertRaisesRegex(UserInputError, "warm_start"):
                inputs(X, Y, config=_config({"warm_start": "yes"}))
            with self.assertRaisesRegex(UserInputError, "'num_inducing'"):
                inputs(X, Y, config=_config({"num_inducing": 5}))

    def test_carried_through_an_input_transform(self):
        # With an input transform (Normalize on a box other than the unit
        # square) the previous model holds its inputs in model space; the new
        # data extend them when their first rows map onto those.
        from botorch.models.transforms.input import InputStandardize, Normalize

        from botorch_ext.ax.surrogate import construct_eulbo_inputs

        bounds = torch.tensor([[-1.0, 0.0], [1.0, 4.0]], dtype=torch.double)
        surrogate = _surrogate(
            input_transform_classes=[Normalize],
            input_transform_options={"Normalize": {"d": 2, "bounds": bounds}},
        )
        X, Y = _branin_like(10)
        X = bounds[0] + (bounds[1] - bounds[0]) * X
        surrogate.fit([_dataset(X[:8], Y[:8])], _digest())
        first = surrogate.model
        self.assertAllClose(
            first.train_X_full, (X[:8] - bounds[0]) / (bounds[1] - bounds[0])
        )
        config = surrogate.surrogate_spec.model_configs[0]

        def inputs(X, Y):
            return construct_eulbo_inputs(
                EULBOModel, config, _dataset(X, Y), _digest(), surrogate
            )

        self.assertIs(inputs(X, Y)["previous_model"], first)
        moved = X.clone()
        moved[3, 1] += 0.5
        self.assertNotIn("previous_model", inputs(moved, Y))
        surrogate.fit([_dataset(X, Y)], _digest())
        self.assertTrue(surrogate.model.carried_state)
        # A transform that learns in train mode (InputStandardize; EULBOModel
        # uses it in eval mode), with the previous model left in train mode:
        # the check neither re-learns it nor misses the extension.
        surrogate = _surrogate(
            input_transform_classes=[InputStandardize],
            input_transform_options={"InputStandardize": {"d": 2}},
        )
        surrogate.fit([_dataset(X[:8], Y[:8])], _digest())
        first = surrogate.model.train()
        learned = first.input_transform.state_dict()
        config = surrogate.surrogate_spec.model_configs[0]
        self.assertIs(inputs(X, Y)["previous_model"], first)
        for k, v in first.input_transform.state_dict().items():
            self.assertTrue(torch.equal(v, learned[k]), k)
        self.assertTrue(first.input_transform.training)  # nor switches its mode

    def test_last_eulbo_model_by_outcome(self):
        # A ModelList (one model per outcome, as Ax builds for several
        # outcomes) gives the outcome's own model; anything else gives None.
        from ax.exceptions.model import ModelError
        from botorch.models import ModelListGP, SingleTaskGP

        from botorch_ext.ax.surrogate import last_eulbo_model

        X, Y = _branin_like(8)
        a, b = EULBOModel(X, Y, num_inducing_points=4), EULBOModel(X, -Y)
        exact = SingleTaskGP(X, Y)

        class Fitted:
            def __init__(self, model, outcomes):
                self.model, self.outcomes = model, outcomes

        class Unfitted:
            outcomes = ["y"]

            @property
            def model(self):
                raise ModelError("not fitted")

        listed = Fitted(ModelListGP(a, b), ["y", "z"])
        self.assertIs(last_eulbo_model(listed, ["y"]), a)
        self.assertIs(last_eulbo_model(listed, ["z"]), b)
        self.assertIsNone(last_eulbo_model(listed, ["w"]))
        self.assertIsNone(last_eulbo_model(listed, ["y", "z"]))
        self.assertIsNone(
            last_eulbo_model(Fitted(ModelListGP(exact, b), ["y", "z"]), ["y"])
        )
        self.assertIs(last_eulbo_model(Fitted(a, ["y"]), ["y"]), a)
        self.assertIsNone(last_eulbo_model(Fitted(a, ["y"]), ["z"]))
        self.assertIsNone(last_eulbo_model(Fitted(exact, ["y"]), ["y"]))
        self.assertIsNone(last_eulbo_model(Unfitted(), ["y"]))

    def test_known_noise_is_dropped_with_a_warning(self):
        from botorch.exceptions.warnings import InputDataWarning

        from botorch_ext.ax.surrogate import (
            construct_eulbo_inputs,
            construct_variational_gp_inputs,
        )

        X, Y = _branin_like(6)
        dataset = _dataset(X, Y, Yvar=torch.full_like(Y, 0.1))
        for model_class, construct in (
            (EULBOModel, construct_eulbo_inputs),
            (SingleTaskVariationalGP, construct_variational_gp_inputs),
        ):
            surrogate = _surrogate(model_class=model_class, model_options={})
            config = surrogate.surrogate_spec.model_configs[0]
            with self.assertWarnsRegex(InputDataWarning, model_class.__name__):
                built = construct(model_class, config, dataset, _digest(), surrogate)
            self.assertNotIn("train_Yvar", built)
            self.assertIs(built["train_Y"], dataset.Y)

    def test_task_and_fidelity_features_are_refused(self):
        from ax.exceptions.core import UnsupportedError

        from botorch_ext.ax.surrogate import construct_eulbo_inputs

        X, Y = _branin_like(6)
        surrogate = _surrogate()
        config = surrogate.surrogate_spec.model_configs[0]
        for kind in ("task_features", "fidelity_features"):
            with self.assertRaisesRegex(UnsupportedError, kind):
                construct_eulbo_inputs(
                    EULBOModel,
                    config,
                    _dataset(X, Y),
                    _digest(**{kind: [1]}, target_values={1: 1.0}),
                    surrogate,
                )

    def test_fit_builds_the_bound_with_num_data(self):
        from ax.exceptions.core import UnsupportedError
        from gpytorch.mlls import (
            ExactMarginalLogLikelihood,
            LeaveOneOutPseudoLikelihood,
            PredictiveLogLikelihood,
            VariationalELBO,
        )

        from botorch_ext.ax import surrogate as hooks

        X, Y = _branin_like(9)
        for mll_class in (ExactMarginalLogLikelihood, None, PredictiveLogLikelihood):
            model = SingleTaskVariationalGP(X, Y, inducing_points=4)
            with mock.patch.object(hooks, "fit_gpytorch_mll") as fit:
                hooks.fit_variational_gp(model, mll_class, {"beta": 0.5})
            (mll,), _ = fit.call_args
            expected = mll_class or VariationalELBO
            if mll_class is ExactMarginalLogLikelihood:
                expected = VariationalELBO
            self.assertIs(type(mll), expected)
            self.assertEqual(mll.num_data, 9)
            self.assertEqual(mll.beta, 0.5)
            self.assertIs(mll.model, model.model)
        with self.assertRaisesRegex(UnsupportedError, "LeaveOneOutPseudoLikelihood"):
            hooks.fit_variational_gp(model, LeaveOneOutPseudoLikelihood)
        eulbo = EULBOModel(X, Y, num_inducing_points=4)
        for mll_class, options in ((PredictiveLogLikelihood, {}), (None, {"beta": 2})):
            with self.assertRaisesRegex(UnsupportedError, "EULBOModel"):
                hooks.fit_variational_gp(eulbo, mll_class, options)
        with mock.patch("botorch_ext.ax.surrogate.fit_elbo") as fit_elbo:
            hooks.fit_variational_gp(eulbo, ExactMarginalLogLikelihood)
        fit_elbo.assert_called_once_with(eulbo, EULBOOptions(), EULBO())
        # The settings come from mll_options.
        with mock.patch("botorch_ext.ax.surrogate.fit_elbo") as fit_elbo:
            hooks.fit_variational_gp(eulbo, None, MLL_OPTIONS)
        fit_elbo.assert_called_once_with(eulbo, OPTIONS, MLL_OPTIONS["objective"])

    def test_fit_raises_the_variational_bound(self):
        from functools import partial

        from botorch.fit import fit_gpytorch_mll
        from gpytorch.mlls import VariationalELBO

        from botorch_ext.ax import surrogate as hooks

        X, Y = _branin_like(12)
        for dtype in (torch.float, torch.double):
            model = SingleTaskVariationalGP(X.to(dtype), Y.to(dtype), inducing_points=5)
            mll = VariationalELBO(model.likelihood, model.model, num_data=12)

            def elbo(model=model, mll=mll, dtype=dtype):
                model.train()
                with torch.no_grad():
                    return mll(model.model(X.to(dtype)), Y.to(dtype).squeeze(-1))

            before = elbo()
            # BoTorch's own fit, with a short L-BFGS budget (the test's time).
            short = partial(
                fit_gpytorch_mll, optimizer_kwargs={"options": {"maxiter": 30}}
            )
            with mock.patch.object(hooks, "fit_gpytorch_mll", short):
                hooks.fit_variational_gp(model, None)
            self.assertGreater(elbo().item(), before.item() + 0.1)

    def test_single_task_variational_gp_in_a_client(self):
        from ax.generators.torch.botorch_modular.surrogate import ModelConfig
        from gpytorch.mlls import PredictiveLogLikelihood

        config = ModelConfig(
            botorch_model_class=SingleTaskVariationalGP,
            model_options={"inducing_points": 6},
            mll_class=PredictiveLogLikelihood,
        )
        from functools import partial

        from botorch.fit import fit_gpytorch_mll

        from botorch_ext.ax import surrogate as hooks

        client = _eulbo_client(model_config=config, num_sobol=6)
        # BoTorch's fit with a short L-BFGS budget (the test's time).
        short = partial(fit_gpytorch_mll, optimizer_kwargs={"options": {"maxiter": 30}})
        with mock.patch.object(hooks, "fit_gpytorch_mll", wraps=short) as fit:
            _run_trials(client, 7)
        (mll,), _ = fit.call_args
        self.assertIsInstance(mll, PredictiveLogLikelihood)
        self.assertEqual(mll.num_data, 6)
        _check_trials(self, client, 7, bo_from=6)
        model = _generator(client).surrogate.model
        self.assertIs(type(model), SingleTaskVariationalGP)
        inducing = model.model.variational_strategy.inducing_points
        self.assertEqual(inducing.shape, torch.Size([6, DIM]))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "client.json"
            client.save_to_json_file(str(path))
            from ax import Client

            loaded = Client.load_from_json_file(str(path))
        node = loaded._generation_strategy._curr
        spec = node.generator_specs[0].generator_kwargs["surrogate_spec"]
        self.assertIs(spec.model_configs[0].mll_class, PredictiveLogLikelihood)
        with mock.patch.object(hooks, "fit_gpytorch_mll", short):
            _run_trials(loaded, 1)
        _check_trials(self, loaded, 8, bo_from=6)


def _config(model_options):
    from ax.generators.torch.botorch_modular.surrogate import ModelConfig

    return ModelConfig(botorch_model_class=EULBOModel, model_options=model_options)


class TestStorage(BotorchTestCase):
    def test_eulbo_options_json_round_trip(self):
        from ax.storage.json_store.decoder import object_from_json
        from ax.storage.json_store.encoder import object_to_json

        from botorch_ext.ax.storage import eulbo_options_from_json

        botorch_ext.ax.register()
        options = EULBOOptions(
            stopping=StoppingOptions(max_steps=17, convergence="epochs"),
            joint=JointOptions(parameters=("variational",)),
        )
        encoded = json.loads(json.dumps(object_to_json(options)))
        self.assertEqual(encoded["__type"], "EULBOOptions")
        self.assertEqual(encoded["joint"]["__type"], "JointOptions")
        self.assertEqual(object_from_json(encoded), options)
        # An experiment stored by botorch_ext 0.1.0 holds the flat fields; it
        # loads without a warning.
        with self.assertWarns(DeprecationWarning):
            fields = options.flat()
        flat = {"__type": "EULBOOptions"} | json.loads(json.dumps(fields))
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            self.assertEqual(object_from_json(dict(flat)), options)
        # ... and one of 0.1.0 without the grouped joint settings added since.
        del flat["alternation"], flat["joint_retries"]
        self.assertEqual(object_from_json(flat), options)
        # The objective round-trips too.
        objective = EULBO(elbo_scale="mean", utility_weight=2.0, incumbent=1.5)
        encoded = json.loads(json.dumps(object_to_json(objective)))
        self.assertEqual(object_from_json(encoded), objective)
        with self.assertRaisesRegex(ValueError, "'lr_z'"):
            eulbo_options_from_json(lr_z=0.1)
        with self.assertRaisesRegex(ValueError, "JointOptions.*'lr_z'"):
            object_from_json({"__type": "JointOptions", "lr_z": 0.1})

    def test_the_authors_preset_round_trips_and_runs_in_ax(self):
        # EULBOOptions.authors() (every group and the settings it adds) survives
        # Ax's JSON storage, and an Ax surrogate with it runs the authors' joint
        # phase ("adam-epochs", per-datum ELBO) in EULBOAcquisition.
        from ax.generators.torch_base import TorchOptConfig
        from ax.storage.json_store.decoder import object_from_json
        from ax.storage.json_store.encoder import object_to_json
        from botorch.acquisition import qLogExpectedImprovement

        from botorch_ext.ax import EULBOAcquisition

        botorch_ext.ax.register()
        for arm in ("eulbo", "elbo"):
            options = EULBOOptions.authors(arm)
            encoded = json.loads(json.dumps(object_to_json(options)))
            self.assertEqual(object_from_json(encoded), options)
        authors = {
            "options": EULBOOptions.authors(),
            "objective": EULBO(elbo_scale="mean"),
        }
        surrogate = _surrogate(
            model_options={"num_inducing_points": 6}, mll_options=authors
        )
        X, Y = _branin_like(10)
        surrogate.fit([_dataset(X, Y)], _digest())
        config = TorchOptConfig(
            objective_weights=torch.tensor([[1.0]], dtype=torch.double)
        )
        acquisition = EULBOAcquisition(
            surrogate=surrogate,
            search_space_digest=_digest(),
            torch_opt_config=config,
            botorch_acqf_class=qLogExpectedImprovement,
            options={"utility": "ei"},
        )
        X_next, _, _ = acquisition.optimize(n=1, search_space_digest=_digest())
        self.assertTrue(((X_next >= 0) & (X_next <= 1)).all())
        model = acquisition.eulbo_model
        self.assertEqual(model.last_optimization["optimizer"], "adam-epochs")
        self.assertEqual(model.last_fit["steps"], 10)  # 10 epochs of 1 minibatch

    def test_the_form_of_0_1_0_in_model_options_still_runs(self):
        # A stored experiment of botorch_ext 0.1.0 keeps the settings in
        # model_options (options as flat names, elbo_scale); it still builds,
        # fits and proposes with them, with a DeprecationWarning.
        from ax.generators.torch_base import TorchOptConfig
        from botorch.acquisition import qLogExpectedImprovement

        from botorch_ext.ax import EULBOAcquisition

        botorch_ext.ax.register()
        legacy = {
            "num_inducing_points": 6,
            "options": EULBOOptions.authors().flat(),
            "elbo_scale": "mean",
        }
        surrogate = _surrogate(model_options=legacy)
        X, Y = _branin_like(10)
        with self.assertWarnsRegex(DeprecationWarning, "mll_options"):
            surrogate.fit([_dataset(X, Y)], _digest())
        self.assertEqual(surrogate.model.last_fit["steps"], 10)  # authors' preset
        acquisition = EULBOAcquisition(
            surrogate=surrogate,
            search_space_digest=_digest(),
            torch_opt_config=TorchOptConfig(
                objective_weights=torch.tensor([[1.0]], dtype=torch.double)
            ),
            botorch_acqf_class=qLogExpectedImprovement,
            options={"utility": "ei"},
        )
        self.assertEqual(
            acquisition._settings(), (EULBOOptions.authors(), EULBO(elbo_scale="mean"))
        )
        acquisition.optimize(n=1, search_space_digest=_digest())
        last = acquisition.eulbo_model.last_optimization
        self.assertEqual(last["optimizer"], "adam-epochs")


#: A value other than the default for every field of every ``EULBOOptions`` group
#: (and of the options themselves), by group; a field added to the options must
#: be added here, or the round-trip test below fails.
NON_DEFAULT_OPTIONS = {
    "elbo": {
        "optimizer": "adam",
        "lbfgs_max_iter": 123,
        "subset_max_iter": 9,
        "epochs": 4,
    },
    "adam": {"lr_w": 0.0203, "lr_x": 0.0047, "batch_size": 17, "grad_clip": 3.5},
    "stopping": {
        "convergence": "epochs",
        "max_steps": 77,
        "check_every": 9,
        "check_size": 333,
        "tol": 2.5e-4,
        "patience": 7,
        "max_epochs": 11,
    },
    "warm_start": {
        "num_restarts": 3,
        "raw_samples": 48,
        "acquisition": "qei-noisy",
        "resample_zero": False,
        "max_iter": 37,
    },
    "utility": {"num_mc_samples": 19, "num_fantasies": 5, "num_quadrature_points": 7},
    "joint": {
        "optimizer": "adam",
        "parameters": ("variational", "inducing_points"),
        "max_iter": 13,
        "retries": 2,
        "alternation": "epoch",
    },
    None: {"lbfgs_max_n": 1234},
}


def _fields_differing(a, b, prefix=""):
    # The dotted names of the (nested) dataclass fields in which a and b differ.
    import dataclasses

    out = []
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x) and dataclasses.is_dataclass(y):
            out += _fields_differing(x, y, f"{prefix}{f.name}.")
        elif type(x) is not type(y) or x != y:
            out.append(f"{prefix}{f.name}: {x!r} -> {y!r}")
    return out


class TestOptionsRoundTrip(BotorchTestCase):
    def _non_default(self):
        import dataclasses

        groups = {
            name: dataclasses.replace(getattr(EULBOOptions(), name), **values)
            for name, values in NON_DEFAULT_OPTIONS.items()
            if name is not None
        }
        return EULBOOptions(**groups, **NON_DEFAULT_OPTIONS[None])

    def test_every_field_has_a_non_default_value(self):
        import dataclasses

        default, options = EULBOOptions(), self._non_default()
        for f in dataclasses.fields(EULBOOptions):
            value = getattr(default, f.name)
            if dataclasses.is_dataclass(value):
                names = {g.name for g in dataclasses.fields(value)}
                self.assertEqual(set(NON_DEFAULT_OPTIONS[f.name]), names, f.name)
            else:
                self.assertIn(f.name, NON_DEFAULT_OPTIONS[None])
        # Every field, nested ones included, differs from its default.
        differing = _fields_differing(default, options)
        n_fields = sum(len(values) for values in NON_DEFAULT_OPTIONS.values())
        self.assertEqual(len(differing), n_fields, differing)

    def test_ax_json_round_trip_keeps_every_field(self):
        from ax.storage.json_store.decoder import object_from_json
        from ax.storage.json_store.encoder import object_to_json

        botorch_ext.ax.register()
        options = self._non_default()
        encoded = json.loads(json.dumps(object_to_json(options)))
        self.assertEqual(_fields_differing(options, object_from_json(encoded)), [])
        # The flat form, as botorch_ext 0.1.0 stored it.
        with self.assertWarns(DeprecationWarning):
            fields = options.flat()
        flat = {"__type": "EULBOOptions"} | json.loads(json.dumps(fields))
        self.assertEqual(_fields_differing(options, object_from_json(flat)), [])

    def test_model_options_in_a_stored_generation_strategy_keep_every_field(self):
        # As a Client stores them: in ModelConfig.model_options of a generation
        # node, through Ax's own encoder and decoder of the strategy.
        from ax.storage.json_store.decoder import object_from_json
        from ax.storage.json_store.encoder import object_to_json

        botorch_ext.ax.register()
        options = self._non_default()
        config = _config({"options": options})
        encoded = json.loads(json.dumps(object_to_json(config)))
        decoded = object_from_json(encoded)
        stored = decoded.model_options["options"]
        self.assertIsInstance(stored, EULBOOptions)
        self.assertEqual(_fields_differing(options, stored), [])


class TestEULBOAcquisition(BotorchTestCase):
    def _acquisition(self, weight=1.0, options=None, **opt_config):
        from ax.generators.torch_base import TorchOptConfig
        from botorch.acquisition import qLogExpectedImprovement

        from botorch_ext.ax import EULBOAcquisition

        surrogate = _surrogate()
        X, Y = _branin_like(10)
        surrogate.fit([_dataset(X, Y)], _digest())
        config = TorchOptConfig(
            objective_weights=torch.tensor([[weight]], dtype=torch.double),
            **opt_config,
        )
        acquisition = EULBOAcquisition(
            surrogate=surrogate,
            search_space_digest=_digest(),
            torch_opt_config=config,
            botorch_acqf_class=qLogExpectedImprovement,
            options=options,
        )
        return surrogate, acquisition

    def test_maximized_objective_runs_the_joint_step_on_the_surrogate_model(self):
        surrogate, acquisition = self._acquisition(options={"utility": "ei"})
        model = surrogate.model
        from botorch_ext.eulbo import optimize_eulbo

        with mock.patch(
            "botorch_ext.ax.acquisition.optimize_eulbo", side_effect=optimize_eulbo
        ) as joint:
            X, value, weights = acquisition.optimize(n=2, search_space_digest=_digest())
        args, kwargs = joint.call_args
        self.assertIs(args[0], model)
        self.assertAllClose(args[1], torch.tensor([[0.0, 0.0], [1.0, 1.0]]).double())
        self.assertEqual(
            kwargs,
            {"q": 2, "utility": "ei", "seed": 0}
            | {"options": OPTIONS, "objective": MLL_OPTIONS["objective"]},
        )
        self.assertIs(acquisition.eulbo_model, model)
        self.assertEqual(X.shape, torch.Size([2, 2]))
        self.assertTrue(((X >= 0) & (X <= 1)).all())
        self.assertEqual(value.shape, torch.Size([]))
        self.assertAllClose(weights, torch.ones(2, dtype=X.dtype))

    def test_rounding_func_is_applied(self):
        _, acquisition = self._acquisition(options={"seed": 3})
        X, _, _ = acquisition.optimize(
            n=1, search_space_digest=_digest(), rounding_func=lambda X: X.round()
        )
        self.assertAllClose(X, X.round())

    def test_what_the_joint_step_cannot_do(self):
        from ax.exceptions.core import UnsupportedError, UserInputError

        for options, pattern in (
            ({"utility": "pi"}, "'pi'"),
            ({"seed": 0.5}, "0.5"),
        ):
            with self.assertRaisesRegex(UserInputError, pattern):
                self._acquisition(options=options)
        _, acquisition = self._acquisition()
        A = (torch.tensor([0]), torch.tensor([1.0]), 0.5)
        for kwargs, pattern in (
            ({"inequality_constraints": [A]}, "inequality_constraints"),
            ({"equality_constraints": [A]}, "equality_constraints"),
            ({"fixed_features": {0: 0.5}}, "fixed_features"),
        ):
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(UnsupportedError, pattern):
                    acquisition.optimize(n=1, search_space_digest=_digest(), **kwargs)
        discrete = _digest(discrete_choices={1: [0.0, 0.5, 1.0]}, ordinal_features=[1])
        with self.assertRaisesRegex(UnsupportedError, "discrete_choices"):
            acquisition.optimize(n=1, search_space_digest=discrete)
        constraint = (torch.tensor([[1.0]]), torch.tensor([[0.0]]))
        with self.assertRaisesRegex(UnsupportedError, "outcome constraints"):
            self._acquisition(outcome_constraints=constraint)
        # Another model class behind the surrogate.
        from ax.generators.torch_base import TorchOptConfig
        from botorch.acquisition import qLogExpectedImprovement
        from botorch.models import SingleTaskGP

        from botorch_ext.ax import EULBOAcquisition

        exact = _surrogate(model_class=SingleTaskGP)
        exact.fit([_dataset(*_branin_like(10))], _digest())
        with self.assertRaisesRegex(UnsupportedError, "model is a SingleTaskGP"):
            EULBOAcquisition(
                surrogate=exact,
                search_space_digest=_digest(),
                torch_opt_config=TorchOptConfig(
                    objective_weights=torch.tensor([[1.0]], dtype=torch.double)
                ),
                botorch_acqf_class=qLogExpectedImprovement,
            )

    def test_a_candidate_set_goes_to_ax(self):
        # Choosing among given candidates is Ax's job: delegated unchanged.
        from ax.generators.torch.botorch_modular.acquisition import Acquisition

        _, acquisition = self._acquisition()
        candidates = torch.rand(5, 2, dtype=torch.double)
        answer = (candidates[:1], torch.tensor(0.0), torch.ones(1))
        with mock.patch.object(Acquisition, "optimize", return_value=answer) as ax:
            with mock.patch("botorch_ext.ax.acquisition.optimize_eulbo") as joint:
                out = acquisition.optimize(
                    n=1, search_space_digest=_digest(), candidate_set=candidates
                )
        self.assertIs(out, answer)
        joint.assert_not_called()
        self.assertIs(ax.call_args.kwargs["candidate_set"], candidates)

    def test_pending_points_warn(self):
        _, acquisition = self._acquisition(
            pending_observations=[torch.tensor([[0.5, 0.5]], dtype=torch.double)]
        )
        with self.assertWarnsRegex(UserWarning, "1 pending point"):
            acquisition.optimize(n=1, search_space_digest=_digest())
