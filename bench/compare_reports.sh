#!/bin/bash
# `report --all --json` of every committed ledger (bench/ and tests/fixtures/ledgers), read by a
# baseline checkout (argument 1, e.g. a git worktree of cf59671) and by this checkout, each on a
# fresh copy at the same path (with its <stem>.results folder where it has one); prints "same" or
# "DIFF" per ledger, exit 1 on any difference. IGNORE_KEYS="k1 k2" leaves those top-level keys out of
# both documents first (a key this checkout adds, which the baseline cannot have).
base=${1:?usage: bench/compare_reports.sh BASELINE_CHECKOUT}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
fail=0
cd "$here"
for f in $(git ls-files 'bench/*.sqlite' 'tests/fixtures/ledgers/*.sqlite'); do
  out=()
  for tree in "$base" "$here"; do
    rm -rf "$work/l"; mkdir -p "$work/l"; cp "$f" "$work/l/ledger.sqlite"
    # a ledger whose campaign folders are not here keeps its result files beside it (docs/results.md)
    beside="${f%.*}.results"; [ -d "$beside" ] && cp -r "$beside" "$work/l/ledger.results"
    (cd "$work/l" && PYTHONPATH=$tree "${CAMPAIGN_BIN:-/work/main/.venv/bin/campaign}" --ledger "$work/l/ledger.sqlite" \
       report --all --json > "$work/$(basename "$tree").json" 2>/dev/null; echo $? > "$work/$(basename "$tree").rc")
    out+=("$work/$(basename "$tree")")
  done
  for o in "${out[@]}"; do
    [ -n "$IGNORE_KEYS" ] && [ -s "$o.json" ] && python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
for key in sys.argv[2:]:
    doc.pop(key, None)
json.dump(doc, open(sys.argv[1], "w"), sort_keys=True)' "$o.json" $IGNORE_KEYS
  done
  if cmp -s "${out[0]}.json" "${out[1]}.json" && cmp -s "${out[0]}.rc" "${out[1]}.rc"; then
    echo "same $f ($(wc -c < "${out[1]}.json") bytes, rc $(cat "${out[1]}.rc"))"
  else
    echo "DIFF $f"; fail=1
  fi
done
rm -rf "$work"
exit $fail
