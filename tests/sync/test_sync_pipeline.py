"""A sync writes ingest batch k (its Parquet file made durable, its transaction committed) on one
worker thread while batch k+1 is read and checked on the calling one (campaign.plumbing.pipeline:
the two overlap on two cores). What the serial loop promised still holds: the batches
commit one at a time in their order, a writer's error reaches the user as the serial sync's one
line and exit code with nothing of its batch stored, and a kill while the worker writes leaves
nothing half-written visible and nothing lost. Real ledgers, real result files, the real CLI."""

from __future__ import annotations

import json
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


def test_a_pool_of_outputs_ends_where_a_batch_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outputs judged together (campaign.results.reader.classify_stream's pools) are the batch's:
    a pool across two batches would leave the second nothing to read while the writer works, then
    the writer waiting while both are read."""
    from campaign.results import reader

    facts = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    monkeypatch.setattr(sync_module, "INGEST_BATCH_ROWS", BATCH_ROWS)
    judge, pools = reader._judge_pool, []

    def watched(items: Any, texts: Any, outcomes: Any) -> None:
        pools.append(len(texts))
        judge(items, texts, outcomes)

    monkeypatch.setattr(reader, "_judge_pool", watched)
    written: list[int] = []
    write = sync_module._write

    def counted(ledger: Any, report: Any, pending: list[Any], *rest: Any) -> None:
        written.append(len(pending))
        write(ledger, report, pending, *rest)

    monkeypatch.setattr(sync_module, "_write", counted)
    led = Ledger(tmp_path / "ledger.sqlite")
    assert api.sync(led).ingested_rows == facts["rows"]
    assert pools == written == [BATCH_ROWS // ROWS_PER_JOB] * (JOBS * ROWS_PER_JOB // BATCH_ROWS)
    led.close()


# A sync in its own interpreter, every look-up of syncfs (through ctypes) and every open of a result
# file for writing or syncing counted by an audit hook; argv: ledger
_SYNCS = """
import json, sys
counts = {"syncfs": 0, "result_opens": 0}
def hook(event, args):
    if event == "ctypes.dlsym" and "syncfs" in str(args[1]):
        counts["syncfs"] += 1
    elif event == "open" and isinstance(args[0], str) and "/results/" in args[0] and args[0].endswith(".parquet"):
        counts["result_opens"] += 1
sys.addaudithook(hook)
from campaign import api
from campaign.ledger import Ledger
report = api.sync(Ledger(sys.argv[1]))
print(json.dumps({**counts, "rows": report.ingested_rows}))
"""


def test_a_batch_is_made_durable_by_fsync_of_its_own_files_not_of_the_whole_filesystem(tmp_path: Path) -> None:
    """syncfs(2) waits for every dirty page of the filesystem, other users' writes too (1-7 s a sync
    on a shared machine, BENCHMARKS.md §13i); a batch's one file is fsynced instead."""
    facts = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    proc = subprocess.run([sys.executable, "-c", _SYNCS, str(tmp_path / "ledger.sqlite")], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rows"] == facts["rows"] and got["syncfs"] == 0
    assert got["result_opens"] >= 2  # written under its temporary name, then opened to be fsynced


_MANY = """
import json, sys
from pathlib import Path
import pyarrow as pa
counts = {"syncfs": 0}
def hook(event, args):
    if event == "ctypes.dlsym" and "syncfs" in str(args[1]):
        counts["syncfs"] += 1
sys.addaudithook(hook)
from campaign.ledger import files
home = Path(sys.argv[1])
written = files.write_many([(home, f"a{i}", pa.table({"x": [i]})) for i in range(files.SYNCFS_FROM)])
print(json.dumps({**counts, "files": sorted(p.path for p in written)}))
"""


def test_many_files_at_once_are_made_durable_by_one_syncfs(tmp_path: Path) -> None:
    """An upgrade writes hundreds of files in one call: one syncfs of their filesystem, not an fsync each."""
    proc = subprocess.run([sys.executable, "-c", _MANY, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["syncfs"] == 1 and len(got["files"]) == files.SYNCFS_FROM
    assert sorted(f"{files.RESULTS}/{p.name}" for p in (tmp_path / files.RESULTS).glob("*.parquet")) == got["files"]


def test_run_specs_are_read_while_the_worker_holds_the_write_lock(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SPEC_CHUNK finished attempts the reading thread opens a read session for the next chunk's
    specs while the worker's write transaction (BEGIN IMMEDIATE) may be open: a read beside a writer,
    never one waiting on the other (the reader closes its session before it waits for the worker)."""
    facts = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=JOBS, rows_per_job=ROWS_PER_JOB)
    monkeypatch.setattr(sync_module, "INGEST_BATCH_ROWS", BATCH_ROWS // 2)
    monkeypatch.setattr(sync_module, "SPEC_CHUNK", BATCH_ROWS // ROWS_PER_JOB)
    led = Ledger(tmp_path / "ledger.sqlite")
    report = api.sync(led)
    assert report.ingested_rows == facts["rows"] and report.counts == {"COMPLETED": JOBS}
    assert _visible_whole(tmp_path / "ledger.sqlite") == facts["rows"]
    led.close()
