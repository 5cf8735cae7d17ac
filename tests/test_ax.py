import json
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

import botorch_ext.ax
from botorch_ext.acquisition import qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB
from botorch_ext.kernels import CylindricalKernel

DIM = 6


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
                model_configs=[ModelConfig(covar_module_class=CylindricalKernel)]
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
        self.assertEqual(botorch_ext.ax.kernel_classes(), (CylindricalKernel,))
        botorch_ext.ax.register()
        botorch_ext.ax.register()  # idempotent
        for base, classes in (
            (AcquisitionFunction, (qES, qLogSoftKG, qLogSoftPI, qSoftPI, qUCB)),
            (Kernel, (CylindricalKernel,)),
        ):
            for cls in classes:
                self.assertEqual(CLASS_TO_REGISTRY[base][cls], cls.__name__)
                self.assertIs(CLASS_TO_REVERSE_REGISTRY[base][cls.__name__], cls)

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
            self.assertIn('"CylindricalKernel"', text)
            loaded = Client.load_from_json_file(str(path))
        node = loaded._generation_strategy._curr
        kwargs = node.generator_specs[0].generator_kwargs
        self.assertIs(kwargs["botorch_acqf_class"], qUCB)
        model_config = kwargs["surrogate_spec"].model_configs[0]
        self.assertIs(model_config.covar_module_class, CylindricalKernel)
        _run_trials(loaded, 2)
        trials = loaded._experiment.trials
        self.assertEqual(len(trials), 10)
        self.assertTrue(all(t.status.is_completed for t in trials.values()))
        # The continued trials come from the stored BoTorch node, not from Sobol.
        for index in (8, 9):
            run = trials[index].generator_runs[0]
            self.assertEqual(run._generation_node_name, node.name)
