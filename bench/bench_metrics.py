"""Time `analysis.all_metrics` on 1,000,000 synthetic result rows, or
`summarize` on small and large frames beside an older revision's.

Run: .venv/bin/python bench/bench_metrics.py [--rows N] [--runs 3]
Prints the row count, the median wall time of `all_metrics` over the runs,
and the median time of each step. Goal: <= 10 s on a 2-core machine.

Run: .venv/bin/python bench/bench_metrics.py --summarize 60,100000 [--baseline-rev REV] [--runs 5]
Times `analysis.summary.summarize` on synthetic frames of those row counts
(the same pickled frames on both sides), this tree and the revision's,
alternating rounds, each side in a fresh process (imports and the first
call not timed); prints and writes (bench/results/summarize_bench.json) the
median CPU seconds (process_time: DuckDB's threads included) and wall
seconds per call of each side, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import all_metrics  # noqa: E402
from bench.bench_scale_ledger import baseline_tree  # noqa: E402

SUMMARIZE_RESULTS = REPO / "bench" / "results" / "summarize_bench.json"
# one round in a tree: each frame summarised once untimed, then `calls` times, CPU and wall per call
SUMMARIZE_PROBE = """
import json, pickle, sys, time
from analysis.summary import summarize
frames, calls = pickle.load(open(sys.argv[1], "rb")), int(sys.argv[2])
out = {}
for rows, frame in frames.items():
    summarize(frame)
    cpu, wall = [], []
    for _ in range(calls):
        w, c = time.perf_counter(), time.process_time()
        summarize(frame)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    out[rows] = {"cpu_s": cpu, "wall_s": wall}
print(json.dumps(out))
"""

CLUSTERS = {"anvil": ["wholenode", "shared"], "delta": ["cpu"], "bridges": ["rm"]}
KERNELS = {"attention_forward": ["naive", "memopt"], "attention_backward": ["naive"],
           "attention_fwdbwd": ["fused"], "decode": ["naive"]}
IMPLS = ["c", "fortran"]
THREADS = [1, 2, 4, 8, 16, 32, 64, 128]
REPEATS = 5


def synthetic_results(target_rows: int, seed: int = 0) -> pd.DataFrame:
    """Configurations x threads x n (doubling from 64) x 5 repeats, ~target rows.

    The n sweep is 64..65536 (11 sizes); groups are added (cycling through d
    values) until the table reaches the target size.
    """
    rng = np.random.default_rng(seed)
    sizes = 64 * 2 ** np.arange(11)
    configs = [(c, p, k, i, v) for c, parts in CLUSTERS.items() for p in parts
               for k, variants in KERNELS.items() for v in variants for i in IMPLS]
    per_config = len(THREADS) * len(sizes) * REPEATS
    n_configs = -(-target_rows // per_config)
    keys = [configs[j % len(configs)] + (32 * (1 + j // len(configs)),) for j in range(n_configs)]
    key_idx = np.repeat(np.arange(n_configs), per_config)
    thr = np.tile(np.repeat(THREADS, len(sizes) * REPEATS), n_configs)
    n = np.tile(np.repeat(sizes, REPEATS), n_configs * len(THREADS))
    rep = np.tile(np.arange(REPEATS), n_configs * len(THREADS) * len(sizes))
    columns = list(zip(*keys, strict=True))
    frame = pd.DataFrame({name: np.asarray(col, dtype=object)[key_idx] for name, col in
                          zip(["cluster", "partition", "kernel", "impl", "variant", "d"],
                              columns, strict=True)})
    frame["d"] = frame["d"].astype("int64")
    frame["device"] = "cpu"
    frame["dtype"] = "fp32"
    frame["threads"], frame["n"], frame["repeat"] = thr, n, rep
    # A strong-scaling-ish time with a thread overhead and 2% lognormal noise.
    base = 1e-10 * n.astype(float) ** 2 / thr + 2e-6 * thr
    frame["time_s"] = base * rng.lognormal(0.0, 0.02, len(frame))
    for col in ["cluster", "partition", "kernel", "impl", "variant", "device", "dtype"]:
        frame[col] = frame[col].astype("str")
    return frame.iloc[:target_rows].reset_index(drop=True)


def synthetic_partitions() -> pd.DataFrame:
    """Facts for every synthetic partition: 128 cores in 8 NUMA domains."""
    rows = [dict(cluster=c, partition=p, cores=128, sockets=2, numa_domains=8,
                 threads_per_core=1, peak_flops_fp32=5e12, peak_flops_bf16=1e13,
                 mem_bw=4e11) for c, parts in CLUSTERS.items() for p in parts]
    return pd.DataFrame(rows)


def bench_summarize(sizes: list[int], runs: int, baseline: str | None, out: Path) -> dict[str, Any]:
    """`summarize` per frame size, this tree and `baseline`'s, alternating rounds of 20 calls."""
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-summarize-"))
    frames = work / "frames.pkl"
    frames.write_bytes(pickle.dumps({str(n): synthetic_results(n) for n in sizes}))
    trees = {"new": REPO} | ({"old": baseline_tree(baseline, work)} if baseline else {})
    calls: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name in trees}
    load = [os.getloadavg()]
    for _ in range(runs):
        for name, tree in trees.items():
            proc = subprocess.run([sys.executable, "-c", SUMMARIZE_PROBE, str(frames), "20"], cwd=tree,
                                  env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                                  check=False)
            if proc.returncode != 0:
                raise SystemExit(f"probe in {tree} failed: {proc.stderr[-2000:]}")
            for rows, times in json.loads(proc.stdout.splitlines()[-1]).items():
                for key, values in times.items():
                    calls[name].setdefault(rows, {}).setdefault(key, []).extend(values)
            load.append(os.getloadavg())
    result: dict[str, Any] = {"command": " ".join(sys.argv), "baseline_rev": baseline, "load_avg": load,
                              "median_per_call": {rows: {name: {k: statistics.median(v) for k, v in calls[name][rows].items()}
                                                         for name in trees} for rows in calls["new"]}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for rows, sides in result["median_per_call"].items():
        print(f"summarize, {int(rows):,} rows: " + "; ".join(
            f"{name} {t['cpu_s'] * 1e3:.2f} ms CPU, {t['wall_s'] * 1e3:.2f} ms wall" for name, t in sides.items()))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--summarize", help="row counts (comma-separated): time summarize on frames of them")
    parser.add_argument("--baseline-rev", help="with --summarize: the git revision timed beside this tree")
    parser.add_argument("--out", type=Path, default=SUMMARIZE_RESULTS)
    args = parser.parse_args()
    if args.summarize:
        bench_summarize([int(n) for n in args.summarize.split(",")], args.runs, args.baseline_rev, args.out)
        return
    results = synthetic_results(args.rows)
    partitions = synthetic_partitions()
    totals: list[float] = []
    steps: dict[str, list[float]] = {}
    for _ in range(args.runs):
        timings: dict[str, float] = {}
        start = time.perf_counter()
        metrics = all_metrics(results, partitions, timings=timings)
        totals.append(time.perf_counter() - start)
        for key, seconds in timings.items():
            steps.setdefault(key, []).append(seconds)
    print(f"rows: {len(results)}")
    print(f"all_metrics: {statistics.median(totals):.2f} s (median of {args.runs} runs)")
    for key, values in steps.items():
        size = f"{len(metrics[key])} rows out" if key in metrics else "medians over repeats"
        print(f"  {key:<17} {statistics.median(values):.3f} s  ({size})")


if __name__ == "__main__":
    main()
