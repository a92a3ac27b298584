"""Time the per-cluster report (Markdown + HTML + figures) over N synthetic rows.

Run: .venv/bin/python bench/bench_report.py [--rows 10000000] [--runs 3]
Prints the median wall time over the runs of each phase — medians over repeats
(`summarize`), `all_metrics` on that summary, and `render_report` given both
(tables, findings, figures, both files) — and of `render_report` from raw rows
(everything, as `campaign report` calls it), as wall and CPU seconds (on a
shared login node the CPU time is what the work costs). The figures are drawn from the
summary and capped at 12 panels, so the render phase should not grow with the
row count. Goal: HTML over 10 million rows in <= 60 s.

With --ledger PATH (e.g. one from bench/scale_ledger.py) it times the ledger
path instead, as `campaign report --all` runs it: results_frame (the read),
api.metrics over every campaign, and write_reports over every campaign. Run it
in two checkouts to compare code versions on one ledger.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import all_metrics, render_report, summarize  # noqa: E402
from bench.bench_metrics import synthetic_partitions, synthetic_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cluster", default="anvil")
    parser.add_argument("--ledger", type=Path, help="time the ledger path over this ledger (not modified)")
    args = parser.parse_args()
    if args.ledger:
        bench_ledger(args.ledger, args.runs)
        return
    results = synthetic_results(args.rows)
    partitions = synthetic_partitions()
    phases: dict[str, list[float]] = {"summarize": [], "all_metrics": [], "render (given both)": [],
                                      "render_report from rows": []}
    cpu: dict[str, list[float]] = {name: [] for name in phases}

    def timed(name: str, start: tuple[float, float]) -> None:
        phases[name].append(time.perf_counter() - start[0])
        cpu[name].append(time.process_time() - start[1])

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            start = now()
            summary = summarize(results)
            timed("summarize", start)
            start = now()
            metrics = all_metrics(summary, partitions)
            timed("all_metrics", start)
            start = now()
            files = render_report(summary, partitions, None, Path(tmp) / f"a{run}", args.cluster,
                                  metrics=metrics)
            timed("render (given both)", start)
            start = now()
            render_report(results, partitions, None, Path(tmp) / f"b{run}", args.cluster)
            timed("render_report from rows", start)
        size = files.html.stat().st_size
    print(f"rows: {len(results)}  summary cells: {len(summary)}  html: {size / 1e6:.1f} MB")
    for name, values in phases.items():
        print(f"  {name:<25} {statistics.median(values):7.2f} s wall, "
              f"{statistics.median(cpu[name]):7.2f} s CPU  (median of {args.runs})")


def bench_ledger(path: Path, runs: int) -> None:
    """Median wall and CPU seconds of the ledger phases of `report --all`."""
    from campaign import api
    from campaign.ledger import Ledger
    from campaign.results.export import results_frame

    led = Ledger(path, create=False)
    with tempfile.TemporaryDirectory() as tmp:
        phases = {"results_frame": lambda: results_frame(led, usable_only=True, all_extras=False),
                  "metrics (all campaigns)": lambda: api.metrics(led, all_campaigns=True),
                  "write_reports (all campaigns)": lambda: api.write_reports(led, Path(tmp), all_campaigns=True)}
        for name, phase in phases.items():
            wall, cpu = [], []
            for _ in range(runs):
                start = time.perf_counter(), time.process_time()
                phase()
                wall.append(time.perf_counter() - start[0])
                cpu.append(time.process_time() - start[1])
            print(f"  {name:<30} {statistics.median(wall):7.2f} s wall, {statistics.median(cpu):7.2f} s CPU"
                  f"  (median of {runs})", flush=True)
    led.close()


if __name__ == "__main__":
    main()
