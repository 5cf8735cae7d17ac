#!/usr/bin/env bash
# EULBO benchmark (issue 6) with the runner, in the paper's Hartmann6 setting
# [Maus2024eulbo, Sec. 4 and Table 1]: noise-free Hartmann6 (maximized; the runner
# reports the minimization sign), 100 uniform initial points, q = 1, m = 100
# inducing points, 200 BO steps, optimize_acqf with 10 restarts and 256 raw
# samples (Table 1), seeds 0-2; then a 20-D TuRBO comparison (repeated
# Hartmann6, TURBO_SEEDS, default seed 0) of turbo-eulbo-ei with turbo-elbo-svgp.
# Every run writes its own results.csv, flushed per evaluation, so a cut-off
# session keeps what finished. Two lanes (one per core), one thread each.
# Usage: bash benchmarks/eulbo_hartmann6.sh [OUT_DIR]
#        JOBS="hartmann6 turbo" selects parts (default both);
#        TURBO_SEEDS="0 1 2" sets the TuRBO seeds (default "0");
#        HARTMANN_METHODS="eulbo-ei elbo-svgp" restricts the Hartmann6 methods.
set -euo pipefail
OUT=${1:-benchmarks/results/eulbo}
JOBS=${JOBS:-"hartmann6 turbo"}
TURBO_SEEDS=${TURBO_SEEDS:-"0"}
HARTMANN_METHODS=${HARTMANN_METHODS:-"eulbo-ei eulbo-kg elbo-svgp qlogei"}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--n-init 100 --init uniform --q 1 --outcome-transform standardize \
--num-restarts 10 --raw-samples 256"
{
  if [[ " $JOBS " == *" hartmann6 "* ]]; then
    for seed in 0 1 2; do
      for method in $HARTMANN_METHODS; do
        echo "--problem hartmann6 --budget 300 $COMMON --method $method" \
          "--seed $seed --output $OUT/hartmann6/$method-s$seed"
      done
    done
  fi
  if [[ " $JOBS " == *" turbo "* ]]; then
    for seed in $TURBO_SEEDS; do
      for method in turbo-eulbo-ei turbo-elbo-svgp; do
        echo "--problem repeated-hartmann6 --dim 20 --budget 300 $COMMON" \
          "--method $method --seed $seed" \
          "--output $OUT/turbo-hartmann6x20/$method-s$seed"
      done
    done
  fi
} | xargs -P 2 -L 1 sh -c 'botorch-ext run "$@" > /dev/null 2>&1 || echo "failed: $*"' run
