r"""Stochastic gradient MCMC for BoTorch.

Samplers, Stein discrepancies, the MAMBA tuner and fully Bayesian GP
hyperparameters [Coullon2023mamba]_.
"""

from botorch_ext.sgmcmc.arms import (
    ArmScore,
    ArmSettings,
    MambaArm,
    arm_settings,
    mamba_arms,
    run_and_score_arm,
    stein_metric,
)
from botorch_ext.sgmcmc.fully_bayesian import (
    HyperparameterPosterior,
    SGMCMCFullyBayesianSingleTaskGP,
    fit_fully_bayesian_model_sgmcmc,
)
from botorch_ext.sgmcmc.mamba import (
    MambaResult,
    MambaRound,
    mamba,
    round_budgets,
)
from botorch_ext.sgmcmc.samplers import (
    SamplerResult,
    SamplerState,
    control_variate_gradient,
    log_posterior_gradient,
    sghmc,
    sgld,
)
from botorch_ext.sgmcmc.stein import (
    finite_set_stein_discrepancy,
    fssd_test_locations,
    kernel_stein_discrepancy,
)

__all__ = [
    "ArmScore",
    "ArmSettings",
    "HyperparameterPosterior",
    "MambaArm",
    "MambaResult",
    "MambaRound",
    "SGMCMCFullyBayesianSingleTaskGP",
    "SamplerResult",
    "SamplerState",
    "arm_settings",
    "control_variate_gradient",
    "finite_set_stein_discrepancy",
    "fit_fully_bayesian_model_sgmcmc",
    "fssd_test_locations",
    "kernel_stein_discrepancy",
    "log_posterior_gradient",
    "mamba",
    "mamba_arms",
    "round_budgets",
    "run_and_score_arm",
    "sghmc",
    "sgld",
    "stein_metric",
]
