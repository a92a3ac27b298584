"""Time the per-cluster report (Markdown + HTML + figures) over N synthetic rows.

Run: .venv/bin/python bench/bench_report.py [--rows 10000000] [--runs 3]
Prints the median wall time over the runs of each phase — medians over repeats
(`summarize`), `all_metrics` on that summary, and `render_report` given both
(tables, findings, figures, both files) — and of `render_report` from raw rows
(everything, as `campaign report` calls it). The figures are drawn from the
summary and capped at 12 panels, so the render phase should not grow with the
row count. Goal (issue 18): HTML over 10 million rows in <= 60 s.
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
    args = parser.parse_args()
    results = synthetic_results(args.rows)
    partitions = synthetic_partitions()
    phases: dict[str, list[float]] = {"summarize": [], "all_metrics": [], "render (given both)": [],
                                      "render_report from rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            start = time.perf_counter()
            summary = summarize(results)
            phases["summarize"].append(time.perf_counter() - start)
            start = time.perf_counter()
            metrics = all_metrics(summary, partitions)
            phases["all_metrics"].append(time.perf_counter() - start)
            start = time.perf_counter()
            files = render_report(summary, partitions, None, Path(tmp) / f"a{run}", args.cluster,
                                  metrics=metrics)
            phases["render (given both)"].append(time.perf_counter() - start)
            start = time.perf_counter()
            render_report(results, partitions, None, Path(tmp) / f"b{run}", args.cluster)
            phases["render_report from rows"].append(time.perf_counter() - start)
        size = files.html.stat().st_size
    print(f"rows: {len(results)}  summary cells: {len(summary)}  html: {size / 1e6:.1f} MB")
    for name, values in phases.items():
        print(f"  {name:<25} {statistics.median(values):7.2f} s  (median of {args.runs})")


if __name__ == "__main__":
    main()
