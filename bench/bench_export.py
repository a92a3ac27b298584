"""`campaign results` and `jobs --no-sync | head` beside bare DuckDB, in one run.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_export.py --ledger L.sqlite [--repeats 3] [--baseline TREE]

Measures, each in a fresh process, with its peak RSS (getrusage of the child):
- `results --format parquet --out F` over every row of the ledger;
- beside it, a bare DuckDB `COPY (SELECT * FROM read_parquet(files)) TO F`
  over the same result files (the pointers' files, as stored);
- `jobs --no-sync` into a pipe: seconds to its first line, read by this
  process from the child's stdout (the child then closed, as `| head` does),
  and to its last line.
With --baseline TREE (another revision's source tree, e.g. `git archive REV
campaign analysis resultschema | tar -x -C TREE`), each repeat also runs, in
turn under the same load: the export of TREE, and the analysis read
(campaign.results.export.results_frame of every usable row, as `report`
reads them) of this tree and of TREE, each a fresh process timing the call
itself, after one read not timed (the first read after the exports costs
about 1 s of CPU more, whichever tree's it is); which tree goes first turns
each repeat. The last repeat's exports and frames of the two trees are
compared (same rows, order, values and types).
Medians of --repeats; writes bench/results/export_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = [sys.executable]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

READ = """
import json, pickle, sys, time
from pathlib import Path
from campaign.ledger import Ledger
from campaign.results.export import results_frame
led = Ledger(Path(sys.argv[1]))
w, c = time.perf_counter(), time.process_time()
frame = results_frame(led, usable_only=True, all_extras=False)
out = {"call_s": time.perf_counter() - w, "call_cpu_s": time.process_time() - c, "rows": len(frame)}
Path(sys.argv[2]).write_bytes(pickle.dumps(frame))
print(json.dumps(out))
"""

COPY = """
import duckdb, sys, json
files = json.loads(sys.argv[1])
con = duckdb.connect()
con.execute("SET VARIABLE files = ?", [files])
con.execute(f"COPY (SELECT * FROM read_parquet(getvariable('files'), union_by_name = true)) TO '{sys.argv[2]}' (FORMAT parquet)")
"""


def files_of(ledger: Path) -> list[str]:
    con = sqlite3.connect(ledger)
    rows = con.execute("SELECT DISTINCT c.workdir || '/' || f.path FROM result_file f "
                       "JOIN campaign c ON c.id = f.campaign_id ORDER BY f.id").fetchall()
    con.close()
    return [r[0] for r in rows]


def child(argv: list[str], tree: Path = REPO) -> dict[str, Any]:
    """Wall seconds, CPU seconds (user + system, every thread) and peak RSS (MB) of one child
    process, its own (wait4): on a shared machine the CPU seconds are what the load does not change.
    What the child prints last on its stdout, where it is JSON, is kept too."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env={**ENV, "PYTHONPATH": str(tree)}, stdout=subprocess.PIPE, cwd=tree)
    assert proc.stdout is not None
    printed = proc.stdout.read().decode().splitlines()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[:4]}... exited {proc.returncode}")
    out: dict[str, Any] = {"s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}
    if printed and printed[-1].startswith("{"):
        out.update(json.loads(printed[-1]))
    return out


def same_outputs(tmp: str) -> dict[str, bool]:
    """The two trees' last exports and frames: equal rows in equal order, of equal types."""
    import pickle

    import pandas as pd
    import pyarrow.parquet as pq

    frames = [pickle.loads(Path(f"{tmp}/{t}.pickle").read_bytes()) for t in ("read", "read_base")]
    try:
        pd.testing.assert_frame_equal(*frames)
        frame_same = True
    except AssertionError:
        frame_same = False
    mine, base = (pq.read_table(f"{tmp}/{t}.parquet") for t in ("export", "export_base"))
    return {"export_equal": mine.equals(base), "frame_equal": frame_same}


def first_line(ledger: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([*PY, "-m", "campaign", "--ledger", str(ledger), "jobs", "--no-sync"],
                            stdout=subprocess.PIPE, env=ENV, cwd=REPO)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - t0
    lines = 1 + sum(1 for _ in proc.stdout)
    proc.wait()
    return {"first_s": first, "last_s": time.perf_counter() - t0, "lines": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "export_bench.json")
    ap.add_argument("--baseline", type=Path, help="another revision's source tree, run in turn with this one's")
    args = ap.parse_args()
    files = files_of(args.ledger)
    out: dict[str, Any] = {"ledger": str(args.ledger), "files": len(files), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):  # alternating: the same load on each
            run: dict[str, Any] = {}
            export = [*PY, "-m", "campaign", "--ledger", str(args.ledger), "results", "--format", "parquet", "--out"]
            trees = [(REPO, ""), (args.baseline, "_base")] if args.baseline else [(REPO, "")]
            trees = trees[:: 1 if i % 2 == 0 else -1]  # which tree goes first turns each repeat (page cache, load)
            for tree, suffix in trees:
                run[f"results_parquet{suffix}"] = child([*export, f"{tmp}/export{suffix}.parquet"], tree)
                if suffix == "":
                    run["duckdb_copy"] = child([*PY, "-c", COPY, json.dumps(files), f"{tmp}/copy.parquet"])
                    run["jobs_head"] = first_line(args.ledger)
            if args.baseline:  # (the first read after the exports pays ~1 s of CPU more, whichever tree's: not timed)
                child([*PY, "-c", READ, str(args.ledger), f"{tmp}/read_warm.pickle"])
            for tree, suffix in trees if args.baseline else []:  # the analysis read
                run[f"read{suffix}"] = child([*PY, "-c", READ, str(args.ledger), f"{tmp}/read{suffix}.pickle"], tree)
            out["runs"].append(run)
        import pyarrow.parquet as pq

        out["rows_exported"] = pq.ParquetFile(f"{tmp}/export.parquet").metadata.num_rows
        out["rows_copied"] = pq.ParquetFile(f"{tmp}/copy.parquet").metadata.num_rows
        if args.baseline:
            out["baseline"] = str(args.baseline)
            out.update(same_outputs(tmp))
    for key in [k for k in out["runs"][0] if k != "jobs_head"]:
        out[f"{key}_median_s"] = statistics.median(r[key]["s"] for r in out["runs"])
        out[f"{key}_median_cpu_s"] = statistics.median(r[key]["cpu_s"] for r in out["runs"])
        out[f"{key}_peak_mb"] = max(r[key]["peak_mb"] for r in out["runs"])
        if "call_s" in out["runs"][0][key]:  # the analysis read's own call, in its process
            out[f"{key}_call_median_s"] = statistics.median(r[key]["call_s"] for r in out["runs"])
            out[f"{key}_call_median_cpu_s"] = statistics.median(r[key]["call_cpu_s"] for r in out["runs"])
    out["ratio_median"] = statistics.median(r["results_parquet"]["s"] / r["duckdb_copy"]["s"] for r in out["runs"])
    out["jobs_first_line_median_s"] = statistics.median(r["jobs_head"]["first_s"] for r in out["runs"])
    out["jobs_last_line_median_s"] = statistics.median(r["jobs_head"]["last_s"] for r in out["runs"])
    out["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=1))
    for r in out["runs"]:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
