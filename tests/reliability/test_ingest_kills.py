"""SIGKILL `campaign status` at random moments of an ingest that writes result
files (issue 26, "Done when"): after every kill, every result a read can see is
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
from campaign.ledger import files
from tests.conftest import REPO, run_cli, sql_rows

JOBS, ROWS_PER_JOB, BATCH_ROWS = 300, 10, 200  # 15 files per whole sync
KILLS = 6
SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "26"))
# `campaign status` with a small ingest batch (campaign.commands.sync.INGEST_BATCH_ROWS): many files, many kill points
STATUS = ("import sys; import campaign.commands.sync as s; s.INGEST_BATCH_ROWS = int(sys.argv[2]); "
          "from campaign.cli import main; sys.exit(main(['--ledger', sys.argv[1], 'status']))")


def _kill_during_ingest(ledger: Path, folder: Path, rng: random.Random) -> bool:
    """Start `status`; once it has written a new result file (or a temporary one), wait a random
    moment and SIGKILL it. True when the kill hit the running command."""
    before = set(os.listdir(folder)) if folder.is_dir() else set()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", STATUS, str(ledger), str(BATCH_ROWS)], env=env,
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
