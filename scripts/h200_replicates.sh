#!/bin/bash
# The H200 check of replicates: two fresh campaigns of experiment h200_gpu_replicates (the
# h200_gpu kernels that span every size class, R = 2 independent interleaved jobs per
# run) on the lent machine through the local backend (cluster=h200node); the two
# ledgers come back in $OUT for `campaign compare` by size class
# (bench/h200_replicates_compare.py).
#   device run, carry [.whl]:  bash scripts/h200_replicates.sh
set -euo pipefail
OUT=${OUT:-${1:-/tmp/h200-out}}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
for side in a b; do
  WORK=/tmp/h200-rep-$side
  rm -rf "$WORK"; mkdir -p "$WORK"
  start=$(date +%s)
  python3 -m campaign.cli --ledger "$WORK/ledger.sqlite" submit cluster=h200node experiment=h200_gpu_replicates \
    "campaign.name=h200_gpu-r2-$side" "campaign.workdir=$WORK/runs" | grep -v '^\[' || true
  echo "side $side took $(( $(date +%s) - start )) s"
  python3 -m campaign.cli --ledger "$WORK/ledger.sqlite" jobs | grep -v COMPLETED || true
  cp "$WORK/ledger.sqlite" "$OUT/ledger-$side.sqlite"
done
