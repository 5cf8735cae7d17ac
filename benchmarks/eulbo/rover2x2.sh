#!/usr/bin/env bash
# The rover's 2 x 2 (benchmarks/eulbo/README.md, section 5): the 60-D rover, q = 20,
# 100 uniform initial points, m = 100, in TuRBO, for SEEDS (default 0-4) to BUDGET
# evaluations (default 2000). Four arms per seed, each a `botorch-ext compare`
# folder OUT/seed-SEED-ARM that `--resume` continues after an interruption:
#   authors: the authors' loop and their baseline in their TuRBO box (failure
#            tolerance 32, a cube; isotropic RBF without priors)
#   package: turbo-eulbo-ei and turbo-elbo-svgp in the runner's TuRBO box with
#            EULBOModel's default kernel (isotropic RBF with BoTorch's priors)
# LANES processes (default 2), one torch thread each.
# Usage: bash benchmarks/eulbo/rover2x2.sh OUT; SEEDS="0 1" BUDGET=500 LANES=1 ...
set -euo pipefail
OUT=${1:?usage: rover2x2.sh OUT}
SEEDS=${SEEDS:-"0 1 2 3 4"}
BUDGET=${BUDGET:-2000}
LANES=${LANES:-2}
BOTORCH_EXT=${BOTORCH_EXT:-botorch-ext}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=${PYTHONPATH:-.}
A=benchmarks.eulbo.ablations
COMMON="--problem rover --q 20 --budget $BUDGET --n-init 100 --init uniform \
--num-inducing-points 100 --num-restarts 10 --raw-samples 256 --workers 1 --resume"
{
  for seed in $SEEDS; do
    echo "--methods $A:turbo_elbo_svgp_authors,$A:turbo_eulbo_ei_authors --seeds $seed $COMMON --output $OUT/seed-$seed-authors"
    echo "--methods $A:turbo_elbo_svgp_default_kernel,$A:turbo_eulbo_ei_default_kernel --seeds $seed $COMMON --output $OUT/seed-$seed-package"
  done
} | xargs -P "$LANES" -L 1 bash -c "$BOTORCH_EXT compare \$0 \"\$@\" >> $OUT.log 2>&1"
