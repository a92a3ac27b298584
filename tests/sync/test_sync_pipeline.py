"""A sync writes ingest batch k (its Parquet file made durable, its transaction committed) on one
worker thread while batch k+1 is read and checked on the calling one (campaign.plumbing.pipeline,
issue 26: the two overlap on two cores). What the serial loop promised still holds: the batches
commit one at a time in their order, a writer's error reaches the user as the serial sync's one
line and exit code with nothing of its batch stored, and a kill while the worker writes leaves
nothing half-written visible and nothing lost. Real ledgers, real result files, the real CLI."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.finished_jobs import build
from campaign import api
from campaign.commands import sync as sync_module
from campaign.ledger import Ledger, files
from tests.conftest import REPO, run_cli, sql_rows

JOBS, ROWS_PER_JOB, BATCH_ROWS = 40, 10, 100  # 4 batches of 10 jobs


def test_each_batch_is_written_on_one_worker_while_the_next_is_read(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    facts = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    monkeypatch.setattr(sync_module, "INGEST_BATCH_ROWS", BATCH_ROWS)
    started = [threading.Event() for _ in range(JOBS + 2)]  # started[k]: the calling thread began making batch k
    make, write = sync_module._finished_batches, sync_module._write

    def batches(*args: Any) -> Any:
        made = make(*args)
        for event in started:
            event.set()
            batch = next(made, None)
            if batch is None:
                return
            yield batch

    writers: list[threading.Thread] = []
    firsts: list[int] = []
    overlapped: list[bool] = []

    def watched(ledger: Any, report: Any, pending: list[Any], *rest: Any) -> None:
        writers.append(threading.current_thread())
        firsts.append(pending[0].attempt_id)
        if len(writers) == 1 and writers[0] is not threading.main_thread():
            overlapped.append(started[1].wait(timeout=120))  # batch 1 is read while batch 0 is written
        write(ledger, report, pending, *rest)

    monkeypatch.setattr(sync_module, "_finished_batches", batches)
    monkeypatch.setattr(sync_module, "_write", watched)
    led = Ledger(tmp_path / "ledger.sqlite")
    report = api.sync(led)
    assert report.ingested_rows == facts["rows"] and report.counts == {"COMPLETED": JOBS}
    assert len(writers) == math.ceil(facts["rows"] / BATCH_ROWS)
    assert threading.main_thread() not in writers and len(set(writers)) == 1  # one worker, not the caller
    assert overlapped == [True]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)  # handed over in the batches' order
    # committed in that order: each pointer's row id grows with its attempt
    order = [aid for (aid,) in sql_rows(tmp_path / "ledger.sqlite", "SELECT attempt_id FROM result_file ORDER BY rowid")]
    assert order == sorted(order) and len(order) == JOBS
    assert not [t for t in threading.enumerate() if t in writers]  # the worker is gone once the sync returns
    led.close()


# `campaign status` with small batches and an error planted in the writer of the second one; argv: ledger
_FAILING = """
import sys
import campaign.commands.sync as s
from campaign.ledger import files
from campaign.plumbing.errors import LedgerError
s.INGEST_BATCH_ROWS = {batch}
real, calls = files.write_many, []
def failing(*args, **kwargs):
    calls.append(1)
    if len(calls) == 2:
        raise LedgerError("result folder planted away")
    return real(*args, **kwargs)
files.write_many = failing
from campaign.cli import main
sys.exit(main(["--ledger", sys.argv[1], "status"]))
"""


def _status(script: str, ledger: Path, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, str(ledger)], env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _completed(ledger: Path) -> int:
    return int(sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state = 'COMPLETED'")[0][0])


def _visible_whole(ledger: Path) -> int:
    """Every pointer's file present and matching its hash, each done attempt with its rows: the rows stored."""
    rows = sql_rows(ledger, "SELECT count(*) FROM result")[0][0]
    assert rows == sql_rows(ledger, "SELECT coalesce(sum(rows), 0) FROM result_file")[0][0] == \
        _completed(ledger) * ROWS_PER_JOB
    return int(rows)


def test_an_error_in_the_writer_is_the_serial_one_line_and_its_batch_stores_nothing(tmp_path: Path) -> None:
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "jobs"
    facts = build(ledger, work, jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    proc = _status(_FAILING.format(batch=BATCH_ROWS), ledger)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert err.splitlines() == ["campaign: error: result folder planted away"]
    # the first batch committed before the second failed, as the serial loop left it; nothing after it
    assert _completed(ledger) == BATCH_ROWS // ROWS_PER_JOB
    assert _visible_whole(ledger) == BATCH_ROWS
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state = 'RUNNING'") == \
        [(JOBS - BATCH_ROWS // ROWS_PER_JOB,)]
    proc2 = run_cli("--ledger", str(ledger), "status")
    assert proc2.returncode == 0, proc2.stderr
    assert _visible_whole(ledger) == facts["rows"]


def test_a_failed_first_write_leaves_the_ledger_unchanged(tmp_path: Path) -> None:
    """A real failure in the writer: the campaign's result folder is taken by a file."""
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "jobs"
    facts = build(ledger, work, jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    (work / files.RESULTS).write_text("not a folder\n")
    before = ledger.read_bytes()
    proc = run_cli("--ledger", str(ledger), "status")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "FileExistsError" in lines[0] and str(work / files.RESULTS) in lines[0], lines
    assert ledger.read_bytes() == before
    (work / files.RESULTS).unlink()
    proc = run_cli("--ledger", str(ledger), "status")
    assert proc.returncode == 0, proc.stderr
    assert _visible_whole(ledger) == facts["rows"]


# `campaign status` whose writer stops for good in its second Parquet write (after encoding it), once it
# has said so and on which thread, in a file; argv: ledger, that file
_STUCK = """
import sys, threading, time
import pyarrow.parquet as pq
import campaign.commands.sync as s
s.INGEST_BATCH_ROWS = {batch}
real, calls = pq.write_table, []
def stuck(*args, **kwargs):
    real(*args, **kwargs)
    calls.append(1)
    if len(calls) == 2:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(threading.current_thread().name)
        import os; os.replace(sys.argv[2] + ".tmp", sys.argv[2])
        time.sleep(3600)
pq.write_table = stuck
from campaign.cli import main
sys.exit(main(["--ledger", sys.argv[1], "status"]))
"""


def test_a_kill_while_the_worker_writes_leaves_nothing_half_written_and_loses_nothing(tmp_path: Path) -> None:
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "jobs"
    facts = build(ledger, work, jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    said = tmp_path / "stuck"
    proc = subprocess.Popen([sys.executable, "-c", _STUCK.format(batch=BATCH_ROWS), str(ledger), str(said)],
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not said.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert said.exists(), "the writer never reached its second batch"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert said.read_text().startswith("campaign-writer")  # killed inside the worker thread's write
    assert _visible_whole(ledger) == BATCH_ROWS  # the first batch, whole; nothing of the second
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    proc2 = run_cli("--ledger", str(ledger), "status")
    assert proc2.returncode == 0, proc2.stderr
    assert _visible_whole(ledger) == facts["rows"]
    assert sql_rows(ledger, "SELECT count(*) FROM (SELECT DISTINCT attempt_id, n, repeat FROM result)") == \
        [(facts["rows"],)]


def test_an_error_making_the_next_item_waits_for_the_one_in_hand_and_yields_to_its_error() -> None:
    """campaign.plumbing.pipeline: what the serial loop did. Item k was consumed whole before
    item k+1 was made; if consuming k failed, that is the error, not the later one."""
    from campaign.plumbing.pipeline import overlapped

    done: list[int] = []
    consuming = threading.Event()

    def items(fail_at: int) -> Any:
        yield 0
        yield 1
        assert consuming.wait(timeout=60)  # item 1 is in the worker's hands while item 2 is made
        raise ValueError(f"cannot make item {fail_at}")

    def consume(item: int) -> None:
        if item == 1:
            consuming.set()
        done.append(item)

    with pytest.raises(ValueError, match="cannot make item 2"):
        overlapped(items(2), consume)
    assert done == [0, 1]

    consuming.clear()

    def failing(item: int) -> None:
        if item == 1:
            consuming.set()
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        overlapped(items(2), failing)
