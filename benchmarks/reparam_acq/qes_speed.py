r"""Runner methods for the cost screen of ``qES`` at q = 1 (README section 6).

Each is the runner's ``qes`` (BoTorch's default ``SingleTaskGP``, Standardize,
``optimize_acqf`` with 10 restarts and 512 raw samples, the acquisition built by
its input constructor) with some of ``construct_inputs_qES``'s arguments set
explicitly, so that a method does not change with the constructor's defaults.
Compared with the runner's ``qes`` on paired seeds:

    OMP_NUM_THREADS=1 botorch-ext compare --problem hartmann6 --budget 40 \
        --n-init 10 --q 1 --seeds 0,1,2,3,4 --workers 1 --threads 1 \
        --methods benchmarks.reparam_acq.qes_speed:pool768 --output DIR
"""

from __future__ import annotations

from botorch_ext.acquisition import qES
from botorch_ext.runner.acquisition import acquisition_method

#: The defaults before the screen: a pool of 1,024 Sobol points and 512 around
#: the best inputs, 64 representers, 32 fantasies, 128 inner samples.
_OLD = {
    "representer_scheme": "thompson",
    "num_candidates": 1024,
    "num_around_best": 512,
    "num_representer_points": 64,
    "num_fantasies": 32,
    "num_inner_samples": 128,
}

#: The old defaults, explicitly.
pool1536 = acquisition_method(qES, gaussian_posterior=True, **_OLD)
#: A pool of half the size: 512 Sobol points and 256 around the best.
pool768 = acquisition_method(
    qES, gaussian_posterior=True, **{**_OLD, "num_candidates": 512,
                                     "num_around_best": 256}
)  # fmt: skip
#: The half-size pool and 32 representers.
pool768_m32 = acquisition_method(
    qES, gaussian_posterior=True, **{**_OLD, "num_candidates": 512,
                                     "num_around_best": 256,
                                     "num_representer_points": 32}
)  # fmt: skip

#: The half-size pool and 48 representers.
pool768_m48 = acquisition_method(
    qES, gaussian_posterior=True, **{**_OLD, "num_candidates": 512,
                                     "num_around_best": 256,
                                     "num_representer_points": 48}
)  # fmt: skip

#: The runner's ``qes`` as it was before the defaults changed (``_OLD``) with
#: L-BFGS-B stopped at ``ftol`` 1e-6 (``optimize_acqf``'s
#: ``options={"ftol": 1e-6, "factr": None}``; SciPy's default is about 2.2e-9).
qes_ftol = acquisition_method(
    qES, gaussian_posterior=True, acqf_options={"ftol": 1e-6, "factr": None}, **_OLD
)
