"""What `status`'s look through every campaign folder for orphaned result
files costs (campaign.results.sweep.sweep_orphans with
everywhere=True), beside the marker-only sweep every other sync makes, on a
big results folder: FILES result files with POINTERS pointers, in one
campaign's folder or spread over 100 campaigns'. The files are empty (a
sweep lists a folder and stats only what no pointer names; it never opens a
referenced file); the pointers go straight in through sqlite3. Not a test:
run by hand, results in BENCHMARKS.md.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_orphan_sweep.py [FILES] [POINTERS] [FOLDER]
"""

from __future__ import annotations

import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from campaign.ledger import Ledger, files
from campaign.results.sweep import sweep_orphans

STAMP = "2026-12-01 00:00:00.000000"


def make(folder: Path, n_files: int, n_pointers: int, campaigns: int) -> Path:
    path = folder / "ledger.sqlite"
    Ledger(path).close()
    con = sqlite3.connect(path)
    pointers = []
    for c in range(1, campaigns + 1):
        work = folder / f"c{c}"
        (work / files.RESULTS).mkdir(parents=True)
        con.execute("INSERT INTO campaign (id, name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                    "workdir) VALUES (?, ?, 'local', 'bench', 'local', '', 'python3', ?, ?)",
                    (c, f"bench-{c}", STAMP, str(work)))
        mine = n_files // campaigns
        for f in range(mine):
            name = f"{files.RESULTS}/a{f}-{f:016x}.parquet"
            (work / name).touch()
            pointers += [(c, name) for _ in range(n_pointers // n_files)]
    con.executemany("INSERT INTO result_file (attempt_id, campaign_id, path, sha256, rows, schema_version) "
                    "VALUES (NULL, ?, ?, '', 1, 2)", pointers)
    con.commit()
    con.close()
    return path


def timed(led: Ledger, everywhere: bool, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        assert sweep_orphans(led, everywhere=everywhere) == []
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n_files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    n_pointers = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    base = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(tempfile.mkdtemp(prefix="orphan-sweep-"))
    print("| layout | files | pointers | sweep where markers are, s | sweep everywhere (`status`), s |")
    print("|---|---|---|---|---|")
    for campaigns in (1, 100):
        folder = base / f"campaigns-{campaigns}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        led = Ledger(make(folder, n_files, n_pointers, campaigns))
        markers, everywhere = timed(led, False), timed(led, True)
        led.close()
        print(f"| {campaigns} campaign folder(s) | {n_files:,} | {n_pointers:,} | {markers:.3f} | {everywhere:.3f} |")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
