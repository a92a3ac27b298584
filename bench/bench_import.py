"""Time and peak memory of `campaign import` of a large CSV (imports stream: memory must not grow with it).

Writes a deterministic CSV of ROWS rows (one configuration per 1,000 rows, 10 repeats per n),
then runs the installed CLI on a fresh ledger, each case in its own process, and prints its wall
time and peak RSS (getrusage of the child): a good file, and the same file with a bad last row
(refused: the ledger must be left untouched). Not a test: run by hand, results in BENCHMARKS.md.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_import.py [ROWS] [FOLDER]
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

CAMPAIGN = Path(sys.executable).with_name("campaign")
HEADER = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype,flops,rel_err,note\n"


def write_csv(path: Path, rows: int, bad_last: bool = False) -> None:
    with path.open("w") as fh:
        fh.write(HEADER)
        for i in range(rows):
            config, within = divmod(i, 1000)
            n, repeat = 64 * (1 + within // 10), within % 10
            time_s = "oops" if bad_last and i == rows - 1 else f"{1e-6 * n * (1 + config % 7) * (1 + repeat / 1000):.9g}"
            fh.write(f"alpha,cpu,attention_forward,c,v{config % 50},cpu,{1 + config // 50},{n},{repeat},{time_s},"
                     f"64,fp32,{2.0 * n * n * 64:.6g},1e-7,run{config % 3}\n")


# one process per case, which reports its own child's peak (RUSAGE_CHILDREN keeps the largest child)
_MEASURE = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(time.perf_counter() - t, u.ru_maxrss, p.returncode, u.ru_utime + u.ru_stime); "
            "print((p.stdout or p.stderr).strip()[:160])")


def run(ledger: Path, csv: Path, *extra: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(CAMPAIGN), "--ledger", str(ledger), "import", str(csv),
                          *extra], capture_output=True, text=True, check=True).stdout.splitlines()
    wall, peak_kib, code, cpu = out[0].split()
    return {"exit": int(code), "wall_s": round(float(wall), 1), "cpu_s": round(float(cpu), 1),
            "peak_rss_mb": round(int(peak_kib) / 1024),
            "said": out[1] if len(out) > 1 else ""}


def _stored(ledger: Path) -> int:
    """The rows the ledger's result files hold (their pointers' row counts)."""
    return int(sqlite3.connect(ledger).execute("SELECT coalesce(sum(rows), 0) FROM result_file").fetchone()[0])


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/tmp/bench-import")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    good, bad = folder / "good.csv", folder / "bad_last.csv"
    write_csv(good, rows)
    write_csv(bad, rows, bad_last=True)
    print(f"{rows:,} rows, {good.stat().st_size / 1e6:.0f} MB per file, commit {os.environ.get('GIT_COMMIT', '?')}")
    ledger = folder / "bad.sqlite"
    result = run(ledger, bad)
    stored = _stored(ledger) if ledger.exists() else 0
    print(json.dumps({"case": "bad last row", **result, "rows_stored": stored}))
    ledger = folder / "good.sqlite"
    result = run(ledger, good)
    stored = _stored(ledger)
    print(json.dumps({"case": "good", **result, "rows_stored": stored}))


if __name__ == "__main__":
    main()
