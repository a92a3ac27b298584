"""Metrics and the HTML report over every row of a big ledger,
this tree beside an older revision's, alternating, each run in a fresh
process, with the engine's own pace beside them. Run:
    .venv/bin/python bench/bench_read_all.py [--rows 10000000] [--attempts 200000]
        [--ledger PATH] [--baseline-rev REV] [--baseline-ledger PATH] [--repeats 3] [--html]

Per run, in this order: `api.metrics` of the latest campaign (what `report
--json` computes), with --html its `api.write_reports`, `api.metrics(all_campaigns=True)`
(what `report --json --all` computes), `bare_median` (a bare DuckDB group-by median of
time_s per point over the same Parquet files: the floor `metrics` is measured against,
`metrics_all_over_bare` the ratio), with --html `api.write_reports(all_campaigns=True)`,
then the plain read of every result row (`results_frame`); wall and CPU
seconds, the peak RSS after each phase (`peak_rss_after_mb`) and at the end. The ledger is bench/scale_ledger.py's (built
once, not timed; --ledger reuses one). A revision older than schema v11 (result
blocks) cannot open a v11 ledger: give it the same rows at its own version
with --baseline-ledger (an upgrade leaves one: LEDGER.v10.bak). Writes
bench/results/read_all_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_scale_ledger import baseline_tree  # noqa: E402
from bench.scale_ledger import build as build_ledger  # noqa: E402

RESULTS = REPO / "bench" / "results" / "read_all_bench.json"
PROBE = """
import json, resource, sqlite3, sys, time
from pathlib import Path
from campaign import api
from campaign.ledger import Ledger
from campaign.results.export import results_frame
led, html = Ledger(Path(sys.argv[1])), sys.argv[2] == "1"
out = {}
def timed(name, fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    out[name] = {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}
rss = {}
def peak(name):
    rss[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
# the latest campaign first (a fresh process, as the CLI's), then every campaign; the plain read of every row
# last, so that the peak RSS after each phase is that of the phases before it
timed("metrics_latest", lambda: api.metrics(led))
peak("metrics_latest")
if html:
    timed("html_latest", lambda: api.write_reports(led, Path(sys.argv[3]) / "latest"))
timed("metrics_all", lambda: api.metrics(led, all_campaigns=True))
peak("metrics_all")
def bare_median():
    # every result file of the ledger (its campaign's folder, else beside the ledger), one median per point
    import duckdb
    from resultschema.columns import BASE_GROUP_COLUMNS, OPTIONAL_GROUP_COLUMNS, SCALE_COLUMNS
    path = Path(sys.argv[1])
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        pointers = con.execute("SELECT DISTINCT c.id, c.workdir, f.path FROM result_file f "
                               "JOIN campaign c ON c.id = f.campaign_id").fetchall()
    files = []
    for cid, workdir, rel in pointers:
        home = Path(workdir) / rel
        files.append(str(home if home.exists() else path.with_suffix(".results") / f"c{cid}" / rel))
    keys = [*BASE_GROUP_COLUMNS, *(c for c in OPTIONAL_GROUP_COLUMNS if c not in SCALE_COLUMNS), "threads", "n"]
    names = ", ".join(f'"{c}"' for c in keys)
    duckdb.sql(f"SELECT {names}, median(time_s) FROM read_parquet($files, union_by_name = true) GROUP BY ALL",
               params={"files": files}).fetchall()
timed("bare_median", bare_median)
out["metrics_all_over_bare"] = {k: out["metrics_all"][k] / out["bare_median"][k] for k in ("wall_s", "cpu_s")}
if html:
    timed("html_all", lambda: api.write_reports(led, Path(sys.argv[3]), all_campaigns=True))
    peak("html_all")
timed("read", lambda: results_frame(led, usable_only=True, all_extras=False))
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["peak_rss_after_mb"] = rss
print(json.dumps(out))
"""


def once(tree: Path, ledger: Path, html: bool, work: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(ledger), "1" if html else "0", str(work / "report")],
                          cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"probe in {tree} failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def _shape(rows: int, attempts: int) -> dict[str, int]:
    campaigns = 20 if attempts >= 20 else 1
    return {"campaigns": campaigns, "runs": attempts // campaigns, "rows_per_attempt": max(5, rows // attempts)}


def _build_in(tree: Path, path: Path, rows: int, attempts: int) -> None:
    """bench/scale_ledger.py's ledger as `tree`'s code builds it (its own schema version)."""
    code = f"from pathlib import Path; from bench.scale_ledger import build; build(Path({str(path)!r}), **{_shape(rows, attempts)!r})"
    subprocess.run([sys.executable, "-c", code], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--attempts", type=int, default=200_000)
    ap.add_argument("--ledger", type=Path, help="an existing ledger (not rebuilt)")
    ap.add_argument("--baseline-rev", help="git revision run beside this tree, alternating")
    ap.add_argument("--baseline-ledger", type=Path, help="the ledger the baseline revision reads (default: --ledger)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--html", action="store_true", help="also the HTML reports of every row")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-read-"))
    ledger = args.ledger
    if ledger is None:
        ledger = work / "big.sqlite"
        build_ledger(ledger, **_shape(args.rows, args.attempts))
    trees = {"new": REPO} | ({"old": baseline_tree(args.baseline_rev, work)} if args.baseline_rev else {})
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    old_ledger = args.baseline_ledger or ledger
    if args.baseline_rev and args.baseline_ledger is None and args.ledger is None:
        old_ledger = work / "big-baseline.sqlite"  # the same rows, made by the baseline's own builder and schema
        _build_in(trees["old"], old_ledger, args.rows, args.attempts)
    ledgers = {"new": ledger, "old": old_ledger}
    load = [os.getloadavg()]
    for i in range(args.repeats):
        for name, tree in trees.items():
            runs[name].append(once(tree, ledgers[name], args.html, work))
            print(f"bench_read_all: {name} {i}: {json.dumps(runs[name][-1])}", file=sys.stderr, flush=True)
            load.append(os.getloadavg())
    phases = [k for k in runs["new"][0] if not k.startswith("peak_rss") and k != "metrics_all_over_bare"]
    result: dict[str, Any] = {"command": " ".join(sys.argv), "load_avg": load, "baseline_rev": args.baseline_rev,
                              "ledgers": {k: str(v) for k, v in ledgers.items()}, "runs": runs}
    for name in trees:
        result[name] = {p: {k: statistics.median(r[p][k] for r in runs[name]) for k in ("wall_s", "cpu_s")}
                        for p in [*phases, "metrics_all_over_bare"]} | {"peak_rss_mb": max(r["peak_rss_mb"] for r in runs[name]),
                                            "peak_rss_after_mb": {k: max(r["peak_rss_after_mb"][k] for r in runs[name])
                                                                  for k in runs[name][0]["peak_rss_after_mb"]}}
    if args.baseline_rev:
        result["speedup_wall"] = {p: result["old"][p]["wall_s"] / result["new"][p]["wall_s"] for p in phases}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
