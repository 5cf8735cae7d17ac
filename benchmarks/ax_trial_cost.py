r"""Seconds per Ax trial: EULBOModel fitted inside Ax next to Ax's SingleTaskGP.

An Ax ``Client`` on Hartmann6 (minimized, 6 float parameters in [0, 1]):
``--sobol`` Sobol trials, then ``--trials`` trials from ``BOTORCH_MODULAR`` with
one of these configurations, each in the same order of data (same seed):

* ``singletaskgp``: Ax's default ``ModelConfig()`` (a ``SingleTaskGP``, exact
  marginal likelihood fitted by L-BFGS from scratch every trial);
* ``eulbo``: the one-line ``ModelConfig(botorch_model_class=EULBOModel)``
  (``fit_elbo`` every trial, starting from the previous trial's state);
* ``eulbo-cold``: the same with ``model_options={"warm_start": False}`` (every
  trial starts from a fresh model, as Ax does for exact GPs);
* ``eulbo-joint``: the one-line model with ``acquisition_class=EULBOAcquisition``
  (the EULBO joint step, soft EI, on top of Ax's fit);
* ``svgp``: BoTorch's ``SingleTaskVariationalGP`` with 50 inducing points,
  fitted by ``fit_gpytorch_mll`` (L-BFGS on the full-batch ELBO).

All use Ax's default acquisition settings (``qLogNoisyExpectedImprovement``,
Ax's default restarts and raw samples), except ``eulbo-joint``. For each BO trial
the script records the wall time of ``get_next_trials`` (model construction and
fit, acquisition optimization and Ax's bookkeeping), the part of it spent in
``Surrogate.fit`` and the best value so far; the CPU share of other processes
is reported, since the machine may be shared.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/ax_trial_cost.py \
        [--configs singletaskgp,eulbo,eulbo-cold,eulbo-joint,svgp] \
        [--sobol 12] [--trials 5] [--output benchmarks/ax/results/trial_cost.csv]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import OtherCPU, environment, write_csv

CONFIGS = ("singletaskgp", "eulbo", "eulbo-cold", "eulbo-joint", "svgp")
DIM = 6


def generator_kwargs(config: str) -> dict:
    from ax.generators.torch.botorch_modular.surrogate import (
        ModelConfig,
        SurrogateSpec,
    )
    from botorch.models import SingleTaskVariationalGP

    from botorch_ext.ax import EULBOAcquisition
    from botorch_ext.eulbo import EULBOModel

    model_config = {
        "singletaskgp": ModelConfig(),
        "eulbo": ModelConfig(botorch_model_class=EULBOModel),
        "eulbo-cold": ModelConfig(
            botorch_model_class=EULBOModel, model_options={"warm_start": False}
        ),
        "eulbo-joint": ModelConfig(botorch_model_class=EULBOModel),
        "svgp": ModelConfig(
            botorch_model_class=SingleTaskVariationalGP,
            model_options={"inducing_points": 50},
        ),
    }[config]
    kwargs = {"surrogate_spec": SurrogateSpec(model_configs=[model_config])}
    if config == "eulbo-joint":
        kwargs["acquisition_class"] = EULBOAcquisition
    return kwargs


def run(config: str, sobol: int, trials: int) -> list[dict]:
    from ax import Client, RangeParameterConfig
    from ax.adapter.registry import Generators
    from ax.generation_strategy.generation_node import GenerationStep
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import Surrogate
    from botorch.test_functions import Hartmann

    import botorch_ext.ax

    botorch_ext.ax.register()
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0, 1))
            for i in range(DIM)
        ]
    )
    client.configure_optimization(objective="-hartmann6")
    client.set_generation_strategy(
        GenerationStrategy(
            name=config,
            nodes=[
                GenerationStep(generator=Generators.SOBOL, num_trials=sobol),
                GenerationStep(
                    generator=Generators.BOTORCH_MODULAR,
                    num_trials=-1,
                    generator_kwargs=generator_kwargs(config),
                ),
            ],
        )
    )
    hartmann = Hartmann(dim=DIM)
    fit_seconds = [0.0]
    surrogate_fit = Surrogate.fit

    def timed_fit(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return surrogate_fit(self, *args, **kwargs)
        finally:
            fit_seconds[0] += time.perf_counter() - start

    Surrogate.fit = timed_fit
    rows, best = [], float("inf")
    try:
        for trial in range(sobol + trials):
            fit_seconds[0] = 0.0
            with OtherCPU() as other, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                (index, params), *_ = client.get_next_trials(max_trials=1).items()
                seconds = time.perf_counter() - start
            x = torch.tensor([[params[f"x{i}"] for i in range(DIM)]]).double()
            value = hartmann(x).item()
            client.complete_trial(index, raw_data={"hartmann6": value})
            best = min(best, value)
            if trial >= sobol:
                rows.append(
                    {
                        "config": config,
                        "trial": index,
                        "n": index,
                        "seconds": round(seconds, 3),
                        "fit_seconds": round(fit_seconds[0], 3),
                        "best": round(best, 4),
                        "other_cpu": str(other),
                    }
                )
                print(rows[-1], flush=True)
    finally:
        Surrogate.fit = surrogate_fit
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--sobol", type=int, default=12)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/ax/results/trial_cost.csv")
    args = parser.parse_args()
    configs = args.configs.split(",")
    for config in configs:
        if config not in CONFIGS:
            raise SystemExit(f"--configs: unknown {config!r}; choose from {CONFIGS}")
    print(environment(), flush=True)
    rows = []
    for config in configs:
        rows += run(config, args.sobol, args.trials)
    write_csv(args.output, rows)
    print(f"\n{'config':<14} {'median s/trial':>15} {'median fit s':>13} {'best':>8}")
    for config in configs:
        mine = [r for r in rows if r["config"] == config]
        print(
            f"{config:<14} {statistics.median(r['seconds'] for r in mine):>15.2f} "
            f"{statistics.median(r['fit_seconds'] for r in mine):>13.2f} "
            f"{mine[-1]['best']:>8.3f}"
        )


if __name__ == "__main__":
    main()
