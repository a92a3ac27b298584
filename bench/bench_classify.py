"""CPU of a sync's reading of finished jobs' CSVs alone: `classify_stream`
(the one validator and the one judgement) over JOBS CSVs of 100 rows, no
ledger, no Parquet write. With --baseline-rev REV the same at that revision
(git archive), each side a fresh process, alternating; best of --repeats
passes per process (CPU seconds: the VM is shared).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_classify.py --jobs 10000 --repeats 5 --rounds 3 --baseline-rev main
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"
SWEEP = tuple(64 * (k + 1) for k in range(10))
PROBE = """
import json, sys, time
import campaign.backends  # (before the reader: its package's import order)
from campaign.results.reader import Expected, classify_stream
jobs, repeats, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sweep = tuple(64 * (k + 1) for k in range(10))
runs = [Expected(sweep, True, "gemm", "fp32", "c", "naive", "cpu", 64, 1 + k) for k in range(4)]  # shared, as a sync's
items = [(f"{work}/j{j}/results.csv", runs[j % 4]) for j in range(jobs)]
best = None
for _ in range(repeats):
    c0 = time.process_time()
    out = list(classify_stream(items, rows=100_000))
    cpu = time.process_time() - c0
    assert all(o.state.value == "COMPLETED" for o in out), out[0]
    best = cpu if best is None else min(best, cpu)
print(json.dumps({"cpu_s": best}))
"""


def write_jobs(work: Path, jobs: int) -> None:
    rng = random.Random(1)
    for j in range(jobs):
        folder = work / f"j{j}"
        folder.mkdir(parents=True)
        rows = "".join(f"gemm,c,naive,cpu,fp32,{n},64,{1 + j % 4},{r},{rng.uniform(1e-5, 1):.6g},"
                       f"{rng.uniform(0, 1):.4g},{rng.uniform(0, 1e-6):.3g}\n" for n in SWEEP for r in range(10))
        (folder / "results.csv").write_text(HEADER + rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5, help="passes per process (the best is kept)")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per side (the median is reported)")
    ap.add_argument("--baseline-rev", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="campaign-bench-classify-") as tmp:
        work = Path(tmp)
        write_jobs(work / "jobs", args.jobs)
        trees = {"new": REPO}
        if args.baseline_rev:
            old = work / "baseline"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(REPO), "archive", args.baseline_rev], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            trees["old"] = old
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                proc = subprocess.run([sys.executable, "-c", PROBE, str(args.jobs), str(args.repeats),
                                       str(work / "jobs")], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                                      capture_output=True, text=True, check=True)
                cpu[name].append(json.loads(proc.stdout.splitlines()[-1])["cpu_s"])
        rows = args.jobs * 100
        print(json.dumps({name: {"rows": rows, "cpu_s": values, "median_cpu_s": statistics.median(values),
                                 "rows_per_cpu_s": rows / statistics.median(values)}
                          for name, values in cpu.items()}, indent=1))


if __name__ == "__main__":
    main()
