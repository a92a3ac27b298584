"""SIGKILL `campaign status` at random moments of an ingest that writes result
files: after every kill, every result a read can see is
whole (each pointer's file present and matching its hash), every attempt marked
done has its rows and no other attempt has any; the next `status` stores the
rest, each row once; the files the kills left unreferenced are never read and
are swept once old. Real CLI (a small ingest batch, so that one sync writes
many files), local backend's finished jobs (bench/finished_jobs.py)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.finished_jobs import build
from campaign.ledger import Ledger, files
from tests.conftest import REPO, run_cli, sql_rows

JOBS, ROWS_PER_JOB, BATCH_ROWS = 300, 10, 200  # 15 files per whole sync
KILLS = 6
SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "26"))
# `campaign status` with a small ingest batch (campaign.commands.sync.INGEST_BATCH_ROWS): many files, many kill points
STATUS = ("import sys; import campaign.commands.sync as s; s.INGEST_BATCH_ROWS = int(sys.argv[2]); "
          "from campaign.cli import main; sys.exit(main(['--ledger', sys.argv[1], 'status']))")


def _kill_during_ingest(ledger: Path, folder: Path, rng: random.Random, script: str = STATUS,
                        *args: str) -> bool:
    """Start `status` (or `script`); once it has written a new result file (or a temporary one), wait a
    random moment and SIGKILL it. True when the kill hit the running command."""
    before = set(os.listdir(folder)) if folder.is_dir() else set()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", script, str(ledger), *(args or (str(BATCH_ROWS),))], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if folder.is_dir() and set(os.listdir(folder)) - before:
            break
        time.sleep(0.002)
    time.sleep(rng.uniform(0, 0.15))
    hit = proc.poll() is None
    if hit:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return hit


def _check_visible(ledger: Path) -> int:
    """What any read sees is whole: returns the rows stored."""
    rows = sql_rows(ledger, "SELECT count(*) FROM result")[0][0]  # every pointer's file found and hash-checked
    pointed = sql_rows(ledger, "SELECT coalesce(sum(rows), 0) FROM result_file")[0][0]
    done = sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state = 'COMPLETED'")[0][0]
    assert rows == pointed == done * ROWS_PER_JOB
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt a WHERE state = 'COMPLETED' AND NOT EXISTS "
                            "(SELECT 1 FROM result_file f WHERE f.attempt_id = a.id)") == [(0,)]
    assert sql_rows(ledger, "SELECT count(*) FROM result_file f JOIN job_attempt a ON a.id = f.attempt_id "
                            "WHERE a.state != 'COMPLETED'") == [(0,)]
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    return int(rows)


def test_kills_during_ingest_leave_nothing_half_written_and_lose_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    ledger = tmp_path / "ledger.sqlite"
    work = tmp_path / "runs"
    facts = build(ledger, work, jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    folder = work / files.RESULTS
    hits, seen = 0, []
    for _ in range(KILLS):
        hits += _kill_during_ingest(ledger, folder, rng)
        seen.append(_check_visible(ledger))
    assert hits >= 1 and seen == sorted(seen)  # killed mid-ingest at least once; nothing stored went away
    proc = run_cli("--ledger", str(ledger), "status")
    assert proc.returncode == 0, proc.stderr
    assert _check_visible(ledger) == facts["rows"]
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state = 'COMPLETED'") == [(JOBS,)]
    assert sql_rows(ledger, "SELECT count(*) FROM (SELECT DISTINCT attempt_id, n, repeat FROM result)") == \
        [(facts["rows"],)]  # each row once
    # what the kills left (temporary files, files renamed but never committed) goes once old
    referenced = {Path(p).name for (p,) in sql_rows(ledger, "SELECT path FROM result_file")}
    old = time.time() - files.SWEEP_AGE_S - 10
    for path in folder.iterdir():
        os.utime(path, (old, old))
    proc = run_cli("--ledger", str(ledger), "status")
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in folder.iterdir()} == referenced
    assert _check_visible(ledger) == facts["rows"]


# `campaign import` with a small chunk (one result file per chunk: many files, many kill points)
IMPORT = ("import sys; from pathlib import Path; from campaign.ledger import Ledger; "
          "from campaign.results.import_stream import import_file; "
          "import_file(Ledger(sys.argv[1]), Path(sys.argv[2]), rows=int(sys.argv[3]))")
IMPORT_ROWS, IMPORT_CHUNK = 3000, 150  # 20 files


def test_kills_during_an_import_leave_all_or_nothing_and_the_retry_stores_each_row_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    ledger = tmp_path / "ledger.sqlite"
    csv = tmp_path / "big.csv"
    csv.write_text("cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s\n" + "".join(
        f"alpha,cpu,gemm,c,v{i // 300},cpu,1,{64 * (1 + i // 3 % 100)},{i % 3},{(1 + i) / 1e4}\n"
        for i in range(IMPORT_ROWS)))
    Ledger(ledger).close()  # (a ledger to import into)
    folder = tmp_path / "ledger.results" / files.IMPORTS / files.RESULTS
    hits = 0
    for _ in range(KILLS):
        hits += _kill_during_ingest(ledger, folder, rng, IMPORT, str(csv), str(IMPORT_CHUNK))
        visible = sql_rows(ledger, "SELECT count(*) FROM result")[0][0]  # every pointer's file found, hash-checked
        assert visible == sql_rows(ledger, "SELECT coalesce(sum(rows), 0) FROM result_file")[0][0]
        assert visible in (0, IMPORT_ROWS)  # all or nothing
        assert sql_rows(ledger, "SELECT count(*) FROM import_key")[0][0] == visible
        if visible:
            break
    assert hits >= 1
    retry = subprocess.run([sys.executable, "-c", IMPORT, str(ledger), str(csv), str(IMPORT_CHUNK)],
                           env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert retry.returncode == 0, retry.stderr
    again = run_cli("--ledger", str(ledger), "import", str(csv))  # the CLI: already imported
    assert again.returncode == 0 and "already imported" in again.stdout, again.stderr
    assert sql_rows(ledger, "SELECT count(*), count(DISTINCT (variant, n, repeat)) FROM result") == \
        [(IMPORT_ROWS, IMPORT_ROWS)]  # each row once
    # a killed import's renamed files are the retry's (the same bytes, the same names): nothing else is left
    # but the temporary files and markers of the kills, which a read never takes
    referenced = {Path(p).name for (p,) in sql_rows(ledger, "SELECT path FROM result_file")}
    left = {p.name for p in folder.iterdir() if not p.name.startswith((".tmp-", ".writing-"))}
    assert left == referenced
