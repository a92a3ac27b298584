"""Scale, the ledger side (issue "Scale"): ingest of finished jobs' CSVs,
metrics / `report --json` / HTML over a big synthetic ledger, and the ledger
reads of `jobs`, `show`, `status`. Run: `make bench-scale` or
    .venv/bin/python bench/bench_scale_ledger.py [--rows 10000000] [--attempts 200000]
        [--ingest-rows 1000000] [--repeats 3]

Each a median of --repeats (building the ledgers is not timed); baselines in
the same run where the old code path still exists:
- ingest: api.sync over --ingest-rows rows in finished local jobs (100 rows
  each, bench/finished_jobs.py): rows/s and peak RSS growth; baseline: the
  pre-change storing path (ORM bulk insert, all rows in one transaction; the
  same reader) on a tenth of the rows, as rows/s.
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
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.finished_jobs import build as build_finished  # noqa: E402
from bench.scale_ledger import build as build_ledger  # noqa: E402
from campaign import api  # noqa: E402
from campaign import sync as sync_module  # noqa: E402
from campaign.cli import views  # noqa: E402
from campaign.ledger import Ledger, ResultRow  # noqa: E402
from campaign.ledger import queries as q  # noqa: E402

RESULTS = REPO / "bench" / "results" / "scale_ledger_bench.json"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(walls), "walls_s": walls}


@contextmanager
def old_ingest_path() -> Iterator[None]:
    """The storing path before this change: the ORM's bulk insert, every row
    in one transaction (the CSV reader is the same on both sides)."""
    from sqlalchemy import insert

    saved = (sync_module.insert_results, sync_module.INGEST_BATCH_ROWS)
    sync_module.insert_results = lambda s, rows: s.execute(insert(ResultRow), rows) if rows else None  # type: ignore[assignment]
    sync_module.INGEST_BATCH_ROWS = 10**12
    try:
        yield
    finally:
        sync_module.insert_results, sync_module.INGEST_BATCH_ROWS = saved


def ingest_once(work: Path, rows: int, tag: str) -> dict[str, Any]:
    jobs = max(1, rows // 100)
    ledger = work / f"ingest-{tag}.sqlite"
    build_finished(ledger, work / f"ingest-{tag}", jobs=jobs, rows_per_job=100)
    led = Ledger(ledger)
    base, t0, c0 = rss_mb(), time.perf_counter(), time.process_time()
    rep = api.sync(led)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert rep.ingested_rows == jobs * 100, rep.ingested_rows
    return {"rows": rep.ingested_rows, "wall_s": wall, "cpu_s": cpu, "rows_per_s": rep.ingested_rows / wall,
            "rows_per_cpu_s": rep.ingested_rows / cpu,
            "peak_rss_growth_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base}


def bench_ingest(work: Path, rows: int, repeats: int) -> dict[str, Any]:
    new = [ingest_once(work, rows, f"new{i}") for i in range(repeats)]
    with old_ingest_path():
        old = [ingest_once(work, max(100, rows // 10), f"old{i}") for i in range(repeats)]

    def med(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    return {"rows": rows, "median_wall_s": med(new, "wall_s"), "median_rows_per_s": med(new, "rows_per_s"),
            "median_rows_per_cpu_s": med(new, "rows_per_cpu_s"),
            "peak_rss_growth_mb": max(r["peak_rss_growth_mb"] for r in new),
            "baseline_old_path": {"rows": old[0]["rows"], "median_rows_per_s": med(old, "rows_per_s"),
                                  "median_rows_per_cpu_s": med(old, "rows_per_cpu_s")},
            "speedup_rows_per_s": med(new, "rows_per_s") / med(old, "rows_per_s")}


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
    # issue 18's goal is over every row, not the latest campaign (report_scope)
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
    ap.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (rewritten after each phase)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-scale-ledger-"))
    result: dict[str, Any] = {"command": " ".join(sys.argv), "load_avg": os.getloadavg()}

    def save(phase: str) -> None:  # after each phase: a run cut short still leaves its numbers
        print(f"bench_scale_ledger: {phase} done", file=sys.stderr, flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")

    result["ingest"] = bench_ingest(work, args.ingest_rows, args.repeats)
    save("ingest")
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
