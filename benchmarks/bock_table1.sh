#!/usr/bin/env bash
# BOCK Table-1 setting with the runner: qLogNEI on a SingleTaskGP whose kernel is
# the only difference between methods; centre initial design (the paper's start),
# 10 initial points, q = 1. Optimizer settings are reduced (256 raw samples,
# 5 restarts) to fit a 2-core machine; they are the same for every method.
# Usage: bash benchmarks/bock_table1.sh [OUT_DIR]   (results/<name>/results.csv)
set -euo pipefail
OUT=${1:-benchmarks/results/bock}
COMMON=(--init center --n-init 10 --q 1 --num-restarts 5 --raw-samples 256
        --seeds 0,1,2 --workers 2)
M20=bock,matern,gpytorch-cylindrical,qlogei
run() { name=$1; shift; botorch-ext compare "$@" "${COMMON[@]}" --output "$OUT/$name"; }
run rosenbrock20-bilog --problem rosenbrock --dim 20 --budget 200 \
    --outcome-transform bilog --methods $M20
run rosenbrock20-standardize --problem rosenbrock --dim 20 --budget 200 \
    --outcome-transform standardize --methods $M20
run hartmann6x20-bilog --problem repeated-hartmann6 --dim 20 --budget 200 \
    --outcome-transform bilog --methods $M20
run levy20-bilog --problem levy --dim 20 --budget 200 \
    --outcome-transform bilog --methods $M20
