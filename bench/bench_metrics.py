"""Time `analysis.all_metrics` on 1,000,000 synthetic result rows.

Run: .venv/bin/python bench/bench_metrics.py [--rows N] [--runs 3]
Prints the row count, the median wall time of `all_metrics` over the runs,
and the median time of each step. Goal: <= 10 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import all_metrics  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
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
