#!/usr/bin/env bash
# The BOCK grid: the continuous center rule against the stronger Matern
# baseline, in the same pipeline as benchmarks/bock/table1.sh (qLogNEI on a
# SingleTaskGP whose kernel is the only difference; centre + 9 Sobol initial
# points, q = 1, Bilog, 5 restarts and 256 raw samples), so that the stored
# `bock` (the "direction" rule, unchanged), `matern` and `qlogei` runs of
# benchmarks/bock/results/direction-rule/ are the same pipeline. One `botorch-ext run` per
# (problem, method, seed), each into its own folder and flushed per evaluation,
# so a cut session keeps every row. LANES parallel lanes, one thread each.
# Usage: bash benchmarks/bock/grid.sh [OUT_DIR]
#   JOBS="rosenbrock:100:bock ..." SEEDS="0 1 2" BUDGET=200 LANES=1
set -euo pipefail
OUT=${1:-benchmarks/bock/results/bock-v2}
SEEDS=${SEEDS:-"0 1 2"}
BUDGET=${BUDGET:-200}
JOBS=${JOBS:-"rosenbrock:100:bock rosenbrock:100:matern-scaled rosenbrock:20:bock \
rosenbrock:20:matern-scaled repeated-hartmann6:20:bock repeated-hartmann6:20:matern-scaled"}
BOTORCH_EXT=${BOTORCH_EXT:-botorch-ext}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--budget $BUDGET --n-init 10 --init center --q 1 --outcome-transform bilog \
--num-restarts 5 --raw-samples 256"
for job in $JOBS; do
  IFS=: read -r problem dim method <<< "$job"
  for seed in $SEEDS; do
    dir="$OUT/$problem$dim/$method-s$seed"
    if [[ -e "$dir/results.csv" ]]; then echo "exists, skipped: $dir" >&2; continue; fi
    echo "$COMMON --problem $problem --dim $dim --method $method --seed $seed --output $dir"
  done
done | xargs -P "${LANES:-1}" -L 1 sh -c "$BOTORCH_EXT run \"\$@\" > /dev/null 2>&1 || echo \"failed: \$*\"" run
