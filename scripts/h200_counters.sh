#!/bin/bash
# The hardware counters campaign on the lent H200 machine, through campaign's
# local backend (cluster=h200node): experiment h200_counters profiles one extra
# call per n under Nsight Compute after the timed repeats; `submit` runs the
# jobs and ingests results and counters into the ledger. Packs the ledger,
# results CSV, report, every job's counters CSV and the raw ncu CSVs into
# $OUT/h200_counters.tar.gz.
#
# Run there from a copy of the repository root, with our Python dependencies
# as wheels in $WHL (see BENCHMARKS.md, "Hardware counters"):
#   device run, carry [.whl, <copy>]:  cd <copy> && WHL=../.whl bash scripts/h200_counters.sh
set -euo pipefail
OUT=${OUT:-${1:-/tmp/h200-out}}
WHL=${WHL:-.whl}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHL"/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
WORK=/tmp/h200-counters
rm -rf "$WORK"; mkdir -p "$WORK/raw"
export CAMPAIGN_KEEP_NCU_LOG="$WORK/raw/ncu"   # each profiled call's raw ncu CSV, for fixtures
CAMPAIGN=(python3 -m campaign --ledger "$WORK/ledger.sqlite")
uname -r; command -v ncu; ncu --version | tail -1
start=$(date +%s)
timeout "${SUBMIT_TIMEOUT:-480}" "${CAMPAIGN[@]}" submit cluster=h200node experiment=h200_counters \
  "campaign.workdir=$WORK/runs" ${EXTRA:-} | grep -v '^\[' || echo "submit ended with $?"
echo "submit took $(( $(date +%s) - start )) s"
"${CAMPAIGN[@]}" status >/dev/null || true
"${CAMPAIGN[@]}" jobs || true
"${CAMPAIGN[@]}" results --format csv > "$WORK/results.csv" || true
"${CAMPAIGN[@]}" report --out "$WORK/report" >/dev/null 2>&1 || echo "report failed"
"${CAMPAIGN[@]}" report --json --cluster h200node > "$WORK/metrics.json" 2>/dev/null || true
python3 - "$WORK/ledger.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("counter rows:", db.execute("select count(*) from counter").fetchone()[0])
for row in db.execute("select state, reason from job_attempt"):
    print(*row)
PY
(cd "$WORK" && tar -czf "$OUT/h200_counters.tar.gz" ledger.sqlite results.csv report metrics.json raw \
   $(find runs -name 'results.counters.csv') $(find runs -name 'kernel.err' -size +0 | head -50))
ls -la "$OUT"
