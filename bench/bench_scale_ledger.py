"""Scale, the ledger side: ingest of finished jobs' CSVs,
metrics / `report --json` / HTML over a big synthetic ledger, and the ledger
reads of `jobs`, `show`, `status`. Run: `make bench-scale` or
    .venv/bin/python bench/bench_scale_ledger.py [--rows 10000000] [--attempts 200000]
        [--ingest-rows 1000000] [--repeats 3] [--only ingest] [--baseline-rev main]

Each a median of --repeats (building the ledgers is not timed); baselines in
the same run where the old code path still exists:
- ingest: api.sync over --ingest-rows rows in finished local jobs (100 rows
  each, bench/finished_jobs.py), each run in a fresh process: rows/s, rows
  per CPU second, peak RSS growth; with --baseline-rev REV the same at that
  revision (git archive), run alternately with this tree's (`--only ingest`
  runs this phase alone).
- report: api.metrics (metrics over every row), `report --json` streamed to a
  file (bytes, seconds; and with --keys speedup), the HTML reports.
- views: views.job_rows (jobs), views.show_job (show) and sync._counts +
  views.job_rows (status, no scheduler) for one campaign.
Writes bench/results/scale_ledger_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.scale_ledger import build as build_ledger  # noqa: E402
from campaign import api  # noqa: E402
from campaign.cli import views  # noqa: E402
from campaign.commands import sync as sync_module  # noqa: E402
from campaign.ledger import Ledger  # noqa: E402
from campaign.ledger import queries as q  # noqa: E402

RESULTS = REPO / "bench" / "results" / "scale_ledger_bench.json"


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(walls), "walls_s": walls}


INGEST_PROBE = """
import json, resource, sys, time
from pathlib import Path
from bench.finished_jobs import build
from campaign import api
from campaign.ledger import Ledger
work, jobs, rows_per_job = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
build(work / "ingest.sqlite", work / "jobs", jobs=jobs, rows_per_job=rows_per_job)
led = Ledger(work / "ingest.sqlite")
status = Path("/proc/self/status").read_text().splitlines()
base = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
t0, c0 = time.perf_counter(), time.process_time()
rep = api.sync(led)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"rows": rep.ingested_rows, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_growth_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base}))
"""


def ingest_once(tree: Path, work: Path, rows: int) -> dict[str, Any]:
    """One sync over `rows` rows in finished jobs of 100 rows, by the code in
    `tree`, in a fresh process (so its peak RSS is the ingest's own)."""
    jobs = max(1, rows // 100)
    work.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-c", INGEST_PROBE, str(work), str(jobs), "100"], cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"ingest probe in {tree} failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    assert result["rows"] == jobs * 100, result
    shutil.rmtree(work)
    return {**result, "rows_per_s": result["rows"] / result["wall_s"], "rows_per_cpu_s": result["rows"] / result["cpu_s"]}


def baseline_tree(rev: str, work: Path) -> Path:
    """The repository at `rev` (git archive), for the old code side by side."""
    tree = work / f"baseline-{rev.replace('/', '_')}"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def bench_ingest(work: Path, rows: int, repeats: int, baseline: str | None) -> dict[str, Any]:
    """This tree's ingest and (with `baseline`) that revision's, alternating, medians."""
    trees = {"new": REPO} | ({"old": baseline_tree(baseline, work)} if baseline else {})
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for i in range(repeats):
        for name, tree in trees.items():
            runs[name].append(ingest_once(tree, work / f"ingest-{name}{i}", rows))
            print(f"bench_scale_ledger: ingest {name} {i}: {runs[name][-1]['rows_per_s']:,.0f} rows/s",
                  file=sys.stderr, flush=True)

    def summary(name: str) -> dict[str, Any]:
        out = {key: statistics.median(r[key] for r in runs[name])
               for key in ("wall_s", "cpu_s", "rows_per_s", "rows_per_cpu_s")}
        return {"rows": rows, "median": out, "peak_rss_growth_mb": max(r["peak_rss_growth_mb"] for r in runs[name]),
                "runs": runs[name]}

    result = {name: summary(name) for name in trees}
    if baseline:
        result["baseline_rev"] = baseline
        result["speedup_rows_per_s"] = result["new"]["median"]["rows_per_s"] / result["old"]["median"]["rows_per_s"]
    return result


def bench_report(led: Ledger, work: Path, repeats: int) -> dict[str, Any]:
    out = work / "metrics.json"

    def stream(keys: list[str] | None = None) -> None:
        with open(out, "w") as f:
            api.write_metrics(led, f, keys=keys)

    result = {"metrics": timed(lambda: api.metrics(led), repeats),
              "json_stream": timed(stream, repeats),
              "json_stream_keys_speedup": timed(lambda: stream(["speedup"]), repeats)}
    stream()
    result["json_bytes"] = out.stat().st_size
    result["html"] = timed(lambda: api.write_reports(led, work / "report"), max(1, repeats // 3))
    # the report's goal (10 million rows) is over every row, not the latest campaign (report_scope)
    result["metrics_all"] = timed(lambda: api.metrics(led, all_campaigns=True), max(1, repeats // 3))
    result["html_all"] = timed(lambda: api.write_reports(led, work / "report-all", all_campaigns=True),
                               max(1, repeats // 3))
    return result


def bench_views(led: Ledger, repeats: int) -> dict[str, Any]:
    campaign = "scale-1"
    with led.session() as s:
        job_id = q.latest_attempts(s, q.require_campaign(s, campaign).id)[-1].job_id
        camp_id = q.require_campaign(s, campaign).id

    def status() -> None:
        with led.session() as s:
            sync_module._counts(s, camp_id)
        views.job_rows(led, campaign, None, all_attempts=False)

    return {"jobs": timed(lambda: views.job_rows(led, campaign, None, all_attempts=False), repeats),
            "show": timed(lambda: views.show_job(led, str(job_id)), repeats),
            "status": timed(status, repeats)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--attempts", type=int, default=200_000)
    ap.add_argument("--ingest-rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-report", action="store_true", help="no metrics/HTML (views and ingest only)")
    ap.add_argument("--only", choices=["ingest"], help="run this phase alone")
    ap.add_argument("--baseline-rev", default=None,
                    help="git revision whose ingest runs beside this tree's, alternating (e.g. main)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (rewritten after each phase)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-scale-ledger-"))
    result: dict[str, Any] = {"command": " ".join(sys.argv), "load_avg": os.getloadavg()}

    def save(phase: str) -> None:  # after each phase: a run cut short still leaves its numbers
        print(f"bench_scale_ledger: {phase} done", file=sys.stderr, flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")

    result["ingest"] = bench_ingest(work, args.ingest_rows, args.repeats, args.baseline_rev)
    result["load_avg_after_ingest"] = os.getloadavg()
    save("ingest")
    if args.only == "ingest":
        print(json.dumps(result, indent=1))
        return
    campaigns = 20 if args.attempts >= 20 else 1
    per_attempt = max(5, args.rows // args.attempts)
    t0 = time.perf_counter()
    result["ledger"] = build_ledger(work / "big.sqlite", campaigns=campaigns, runs=args.attempts // campaigns,
                                    rows_per_attempt=per_attempt)
    result["ledger"]["build_s"] = time.perf_counter() - t0
    save("ledger build")
    led = Ledger(work / "big.sqlite")
    result["views"] = bench_views(led, max(5, args.repeats))
    save("views")
    if not args.skip_report:
        result["report"] = bench_report(led, work, args.repeats)
    result["load_avg_end"] = os.getloadavg()
    save("report")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
