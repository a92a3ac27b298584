#!/bin/bash
# One short device call before the counters campaign: which runtime
# and ncu the lent H200 machine has, which of kernels/torch/ncu.py's metrics
# its ncu knows (gh100), and real `--profile ncu` output (counters CSVs and the
# raw ncu CSVs behind them, for tests/fixtures/ncu/). Everything is packed
# into $OUT/probe.tar.gz (the device returns at most 8 files).
# Run from a copy of the repository root:  bash scripts/h200_ncu_probe.sh
set -uo pipefail
OUT=${OUT:-/tmp/probe-out}
W=/tmp/probe; rm -rf "$W"; mkdir -p "$W/raw" "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ uname -r; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv; } > "$W/machine.txt" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU" >> "$W/machine.txt"; "$NCU" --version >> "$W/machine.txt" 2>&1
cat "$W/machine.txt"
"$NCU" --query-metrics --chip gh100 > "$W/query_metrics.txt" 2>&1
# Keep the metrics this ncu knows (by base name); print the ones it does not.
METRICS=$(python3 - "$W/query_metrics.txt" <<'PY'
import sys
from kernels.torch import ncu
known = {line.split()[0] for line in open(sys.argv[1]) if line.strip() and not line.startswith(("-", "Device"))}
def base(m):
    for suffix in (".sum", ".avg.pct_of_peak_sustained_active", ".avg", ".max", ".ratio", ".pct"):
        if m.endswith(suffix):
            return m[: -len(suffix)]
    return m
ok = [m for m in ncu.METRICS if base(m) in known]
print("unknown:", [m for m in ncu.METRICS if base(m) not in known], file=sys.stderr)
print(",".join(ok))
PY
)
echo "metrics: $METRICS"
run() {  # name, then kernel program arguments
  local name=$1; shift
  local t0=$(date +%s)
  CAMPAIGN_KEEP_NCU_LOG="$W/raw/$name" timeout 240 python3 -m "kernels.torch.$1" "${@:2}" --device cuda \
    --dtype bf16 --d 128 --repeats 3 --warmup 1 --check --profile ncu --profiler-path "$NCU" \
    --ncu-metrics "$METRICS" --out "$W/$name.csv" 2> "$W/$name.err"
  echo "$name: exit $? in $(( $(date +%s) - t0 )) s"; tail -3 "$W/$name.err"
}
run fwd_naive attention_forward --variant naive --n 1024,2048
run fwd_memopt attention_forward --variant memopt --n 2048
run fwdbwd_fused attention_fwdbwd --variant fused --n 2048
run bwd_naive attention_backward --variant naive --n 2048
run decode_naive decode --variant naive --n 65536
run decode_splitk decode --variant splitk --n 65536
# A stall-reason cross-check: ncu's own WarpStateStats and Occupancy sections on one call.
"$NCU" --csv --page details --print-units base --profile-from-start off --clock-control none \
  --section WarpStateStats --section Occupancy --log-file "$W/raw/sections_fwd_naive.csv" \
  python3 -m kernels.torch.attention_forward --variant naive --n 1024 --d 128 --dtype bf16 \
  --device cuda --repeats 1 --warmup 1 --out "$W/child.csv" --profiled-child > /dev/null 2>&1
echo "sections: exit $?"
for f in "$W"/*.counters.csv; do echo "== $f"; cut -d, -f1-9 "$f" | head -60; done
(cd "$W" && tar -czf "$OUT/probe.tar.gz" .)
ls -la "$OUT"
