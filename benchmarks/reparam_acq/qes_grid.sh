#!/usr/bin/env bash
# The qES grid: qES against BoTorch's entropy searches through the runner, on
# the benchmark's pipeline (10 Sobol points, 30 more evaluations, SingleTaskGP with
# BoTorch's defaults refitted each iteration, Standardize, optimize_acqf with 10
# restarts and 512 raw samples; the acquisition the only difference). One
# `botorch-ext compare` per (problem, q, method) into its own folder, so methods
# can be added later without touching finished folders; finished folders are
# skipped, cut ones resumed. One thread per run.
# Usage: bash benchmarks/reparam_acq/qes_grid.sh [OUT_DIR]
#   METHODS="qes qmes gibbon" CONFIGS="hartmann6:1 hartmann6:3 branin:1 branin:3"
#   SEEDS=0,1,...,9 BUDGET=40
set -euo pipefail
OUT=${1:-benchmarks/reparam_acq/results/qes}
METHODS=${METHODS:-"qes qmes gibbon"}
CONFIGS=${CONFIGS:-"hartmann6:1 hartmann6:3 branin:1 branin:3"}
SEEDS=${SEEDS:-0,1,2,3,4,5,6,7,8,9}
BUDGET=${BUDGET:-40}
BOTORCH_EXT=${BOTORCH_EXT:-botorch-ext}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for config in $CONFIGS; do
  IFS=: read -r problem q <<< "$config"
  for method in $METHODS; do
    dir="$OUT/$problem-q$q/$method"
    flag=()
    if [[ -e "$dir/config.json" ]]; then flag=(--resume); fi
    $BOTORCH_EXT compare --problem "$problem" --budget "$BUDGET" --n-init 10 \
      --q "$q" --methods "$method" --seeds "$SEEDS" --workers 1 --threads 1 \
      --output "$dir" "${flag[@]}" > /dev/null 2>&1 || echo "failed: $dir" >&2
  done
done
