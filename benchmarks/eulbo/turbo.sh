#!/usr/bin/env bash
# TuRBO comparisons [Maus2024eulbo, Sec. 4]: turbo-eulbo-ei vs
# turbo-elbo-svgp (m = 100, Table-1 step sizes, 10 restarts, 256 raw samples), 100
# uniform initial points, seeds SEEDS (default 0 1 2), on
#   rover: the 60-D rover (runner problem `rover`), q = 20, ROVER_BUDGET evaluations
#          (default 1000; the paper ran far longer), plus the exact-GP `turbo`
#          baseline for EXACT_SEEDS (default "0") while n allows;
#   hartmann20: repeated Hartmann6 at d = 20, q = 1, H20_BUDGET (default 200).
# LANES processes (default 2), one thread each; every run writes its own
# results.csv, flushed per evaluation.
# Usage: bash benchmarks/eulbo/turbo.sh [OUT_DIR]; JOBS="rover hartmann20"
set -euo pipefail
OUT=${1:-benchmarks/eulbo/results/eulbo-v2}
JOBS=${JOBS:-"rover hartmann20"}
SEEDS=${SEEDS:-"0 1 2"}
EXACT_SEEDS=${EXACT_SEEDS:-"0"}
ROVER_BUDGET=${ROVER_BUDGET:-1000}
H20_BUDGET=${H20_BUDGET:-200}
LANES=${LANES:-2}
BOTORCH_EXT=${BOTORCH_EXT:-botorch-ext}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--n-init 100 --init uniform --outcome-transform standardize \
--num-restarts 10 --raw-samples 256"
{
  for seed in $SEEDS; do
    if [[ " $JOBS " == *" rover "* ]]; then
      for method in turbo-elbo-svgp turbo-eulbo-ei; do
        echo "--problem rover --budget $ROVER_BUDGET --q 20 $COMMON --method $method" \
          "--seed $seed --output $OUT/rover/$method-s$seed"
      done
      if [[ " $EXACT_SEEDS " == *" $seed "* ]]; then
        echo "--problem rover --budget $ROVER_BUDGET --q 20 $COMMON --method turbo" \
          "--seed $seed --output $OUT/rover/turbo-s$seed"
      fi
    fi
    if [[ " $JOBS " == *" hartmann20 "* ]]; then
      for method in turbo-elbo-svgp turbo-eulbo-ei; do
        echo "--problem repeated-hartmann6 --dim 20 --budget $H20_BUDGET --q 1" \
          "$COMMON --method $method --seed $seed" \
          "--output $OUT/turbo-hartmann6x20/$method-s$seed"
      done
    fi
  done
} | xargs -P "$LANES" -L 1 sh -c "$BOTORCH_EXT run \"\$@\" > /dev/null 2>&1 || echo \"failed: \$*\"" run
