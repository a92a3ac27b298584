"""`status` sweeps orphaned result files in every campaign folder,
those a release before the writers' markers left too: a file no
pointer names, older than files.SWEEP_AGE_S (a younger one may be a writer's
between rename and commit), whose attempts this ledger stored in another
file. Only `status`, after its sync: never on bad input, never from a
command that reads (show, results, report), and with no write to the ledger
(the ingest's transactions are what they were)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import event

from bench.finished_jobs import build
from campaign.commands.sync import sync
from campaign.ledger import Ledger, files
from campaign.results.sweep import sweep_orphans
from tests.conftest import run_cli
from tests.fixtures.ledger_rows import SPEC


def _age(*paths: Path) -> None:
    old = time.time() - files.SWEEP_AGE_S - 60
    for path in paths:
        os.utime(path, (old, old))


def _snapshot(ledger: Path, results: Path) -> tuple[bytes, dict[str, bytes]]:
    return ledger.read_bytes(), {p.name: p.read_bytes() for p in sorted(results.iterdir())}


def _foreign(kept: Path, to: Path) -> Path:
    """A result file of attempts this ledger never stored (another copy's): never swept here."""
    table = pq.read_table(kept)
    column = table.schema.get_field_index("attempt_id")
    pq.write_table(table.set_column(column, "attempt_id", pa.array([999] * len(table), table["attempt_id"].type)), to)
    return to


def test_status_sweeps_an_old_marker_less_orphan_and_nothing_else(tmp_path: Path) -> None:
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "runs"
    built = build(ledger, work, jobs=3, rows_per_job=5)
    first = run_cli("--ledger", str(ledger), "status", cwd=tmp_path)  # ingests: one file, its pointers, no marker
    assert first.returncode == 0 and f"{built['rows']} result row(s) ingested" in first.stdout, first.stderr
    results = work / files.RESULTS
    [kept] = results.iterdir()
    with sqlite3.connect(ledger) as con:  # whole specs, as a submit stores them, for `show` (bench's are sparse)
        con.execute("UPDATE run SET spec = ?", (json.dumps(SPEC.to_json()),))
    con.close()
    # what a release before the markers left of a sync killed between rename and commit (its attempts stored
    # again since): no marker beside it; one as old, one young, and another ledger copy's file
    orphan, young = kept.with_name("a1-00000000000000aa.parquet"), kept.with_name("a1-00000000000000bb.parquet")
    shutil.copyfile(kept, orphan)
    shutil.copyfile(kept, young)
    foreign = _foreign(kept, kept.with_name("a999-00000000000000cc.parquet"))
    _age(kept, orphan, foreign)
    assert not files.unsettled(work)
    before = _snapshot(ledger, results)

    for bad in (["status", "no-such-campaign"], ["status", "--interval", "x"]):
        proc = run_cli("--ledger", str(ledger), *bad, cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert _snapshot(ledger, results) == before, bad  # neither the ledger nor the results folder touched
    for reading in (["show", "1"], ["results", "--format", "json"], ["report", "--json"], ["jobs"]):
        proc = run_cli("--ledger", str(ledger), *reading, cwd=tmp_path)
        assert proc.returncode == 0, (reading, proc.stderr)
        assert _snapshot(ledger, results)[1] == before[1], reading  # a command that reads sweeps nothing

    proc = run_cli("--ledger", str(ledger), "status", cwd=tmp_path)
    assert proc.returncode == 0 and "1 orphaned result file(s) removed" in proc.stdout, proc.stdout + proc.stderr
    assert not orphan.exists() and kept.exists() and young.exists() and foreign.exists()
    assert ledger.read_bytes() == before[0]  # the sweep only reads the ledger
    rows = json.loads(run_cli("--ledger", str(ledger), "results", "--format", "json", cwd=tmp_path).stdout)
    assert len(rows) == built["rows"]

    again = kept.with_name("a1-00000000000000dd.parquet")
    shutil.copyfile(kept, again)
    _age(again)
    proc = run_cli("--ledger", str(ledger), "--format", "json", "status", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["swept_files"] == 1 and not again.exists() and kept.exists()
    proc = run_cli("--ledger", str(ledger), "status", cwd=tmp_path)  # nothing left to sweep: nothing said
    assert proc.returncode == 0 and "orphaned" not in proc.stdout and young.exists(), proc.stdout


def _commits(tmp_path: Path, everywhere: bool) -> tuple[int, int]:
    """A sync of 4 finished jobs, as `status` runs it or as any other command:
    its commits, and the files it swept (an old temporary file left beside)."""
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "runs"
    built = build(ledger, work, jobs=4, rows_per_job=5)
    (work / files.RESULTS).mkdir()
    left = work / files.RESULTS / ".tmp-1-a1-00000000000000ee.parquet"  # a killed writer's, long ago
    left.write_bytes(b"partial")
    _age(left)
    led = Ledger(ledger)
    commits: list[int] = []
    event.listen(led.engine, "commit", lambda _conn: commits.append(1))
    rep = sync(led, sweep_everywhere=everywhere)
    led.close()
    assert rep.ingested_rows == built["rows"] and not left.exists()
    return len(commits), rep.swept


def test_the_sweep_of_status_adds_no_transaction_to_the_ingest(tmp_path: Path) -> None:
    assert _commits(tmp_path / "status", everywhere=True) == _commits(tmp_path / "other", everywhere=False)


def test_a_file_its_own_pointer_names_is_never_superseded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the comparison of pointers with the folder's files ever to miss
    (a path spelled two ways), a file would look unreferenced while its
    attempts are stored: in itself. It is kept; a copy under another name goes."""
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "runs"
    build(ledger, work, jobs=2, rows_per_job=5)
    led = Ledger(ledger)
    assert sync(led).ingested_rows > 0
    [kept] = (work / files.RESULTS).iterdir()
    copy = kept.with_name("a1-00000000000000ff.parquet")
    shutil.copyfile(kept, copy)
    _age(kept, copy)
    monkeypatch.setattr(files, "referenced_path", lambda place, pointer: f"{place}/missed/{pointer}")
    assert sweep_orphans(led, everywhere=True) == [copy]
    led.close()
    assert kept.exists() and not copy.exists()
