#!/bin/bash
# The kernel campaign on the lent H200 machine, through campaign's local backend
# (cluster=h200node): experiments h200_gpu and h200_cpu, then the results CSV
# and the report, packed into $OUT/h200_campaign.tar.gz.
#
# Run there from the repository root (python3 3.12 + torch 2.11 are the
# machine's own; our other dependencies travel as wheels in .whl/, and the
# Fortran binaries are built here because that machine has no gfortran):
#   make kernels && (see BENCHMARKS.md for the .whl download command)
#   device run, carry [.whl, kernels/build]:  bash scripts/h200_campaign.sh
set -euo pipefail
OUT=${OUT:-${1:-/tmp/h200-out}}
EXTRA=${EXTRA:-}   # more overrides for every submit
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
# C with the machine's gcc (13) for its own CPU; Fortran binaries were carried (gfortran 12,
# -march=x86-64-v3, built with: make -C kernels fortran FFLAGS="-O3 -fopenmp -march=x86-64-v3")
make -B -C kernels c CFLAGS="-O3 -fopenmp -march=native" >/dev/null
nproc; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
WORK=/tmp/h200-campaign
rm -rf "$WORK"; mkdir -p "$WORK"
CAMPAIGN=(python3 -m campaign.cli --ledger "$WORK/ledger.sqlite")
pack() {  # after every experiment, so a call cut short still returns what finished
  "${CAMPAIGN[@]}" results --format csv > "$WORK/results.csv"
  "${CAMPAIGN[@]}" report --out "$WORK/report" >/dev/null 2>&1 || echo "report failed"
  "${CAMPAIGN[@]}" report --json --cluster h200node > "$WORK/metrics.json" 2>/dev/null || true
  (cd "$WORK" && tar -czf "$OUT/h200_campaign.tar.gz" ledger.sqlite results.csv report metrics.json \
     $(find runs -name 'kernel.err' -size +0 | head -50))
}
for exp in ${EXPERIMENTS:-h200_gpu h200_cpu}; do
  start=$(date +%s)
  "${CAMPAIGN[@]}" submit cluster=h200node "experiment=$exp" "campaign.workdir=$WORK/runs" $EXTRA \
    | grep -v '^\[' || true
  echo "$exp took $(( $(date +%s) - start )) s"
  "${CAMPAIGN[@]}" jobs | grep -v COMPLETED || true
  pack
done
ls -la "$OUT"
