"""Result rows as one immutable Parquet file per finished attempt, the ledger
holding its pointer (campaign.ledger.files): written before the
transaction that marks the attempt done and visible only once it commits; a
changed file is refused by name; an unreferenced one is never read and is
swept by `status` once old enough."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import select

from campaign.backends.base import JobStatus
from campaign.commands.sync import _apply
from campaign.commands.sync_pending import collect
from campaign.ledger import Ledger, ResultFile, file_scan, files
from campaign.ledger.result_schema import SCHEMA_VERSION, STORED
from campaign.plumbing.errors import LedgerError
from campaign.plumbing.states import JobState
from campaign.results.export import results_frame
from campaign.results.reader import Outcome
from campaign.results.sweep import sweep_orphans
from tests.conftest import run_cli
from tests.fixtures.ledger_rows import add_attempt

ROW = {"kernel": "attention_forward", "impl": "c", "variant": "naive", "device": "cpu", "dtype": "fp32",
       "threads": 2, "n": 64, "d": 16, "repeat": 0, "time_s": 1e-3, "extra": {"first_call_s": "0.002"}}
DONE = JobStatus(JobState.COMPLETED, exit_code=0, node="n1", started_at=datetime(2026, 12, 1, 12, tzinfo=UTC))


def _finish(led: Ledger, aid: int, fail: bool = False) -> None:
    """Sync one COMPLETED attempt with two rows; `fail`: the transaction dies after the file was written."""
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    outcome = Outcome(JobState.COMPLETED, [ROW, {**ROW, "repeat": 1, "time_s": 2e-3}])
    with led.session.begin() as s:
        _apply(s, pending, {aid: DONE}, {aid: outcome}, camps)
        if fail:
            raise RuntimeError("killed before the commit")


def _folder(tmp_path: Path) -> Path:
    """The campaign's folder, as a submitted campaign has it on the machine that syncs."""
    (tmp_path / "runs").mkdir(exist_ok=True)
    return tmp_path / "runs"


def _pointers(led: Ledger) -> list[ResultFile]:
    with led.session() as s:
        return list(s.scalars(select(ResultFile)))


def test_a_finished_attempt_is_one_parquet_file_and_its_pointer(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, _folder(tmp_path))
    _finish(led, aid)
    [pointer] = _pointers(led)
    path = tmp_path / "runs" / pointer.path  # relative to the campaign's folder: results/<name>
    assert pointer.path.startswith("results/") and path.is_file()
    assert not (tmp_path / "ledger.results").exists()  # nothing beside the ledger: its campaign folder is here
    assert (pointer.attempt_id, pointer.rows, pointer.schema_version) == (aid, 2, SCHEMA_VERSION)
    assert not Path(pointer.path).is_absolute() and files.sha256(path) == pointer.sha256
    table = pq.read_table(path)
    assert table.column_names == list(STORED)
    assert table.column("time_s").to_pylist() == [1e-3, 2e-3]
    frame = results_frame(led)
    assert sorted(frame["time_s"]) == [1e-3, 2e-3] and set(frame["state"]) == {"COMPLETED"}
    assert set(frame["first_call_s"]) == {"0.002"}  # the extra columns travel in the file's JSON


def test_a_failed_commit_removes_its_file_and_status_sweeps_what_a_kill_left(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, _folder(tmp_path))
    with pytest.raises(RuntimeError):
        _finish(led, aid, fail=True)
    # written, fsynced, renamed, then the transaction failed: the file and its marker went at the rollback
    assert list((tmp_path / "runs" / files.RESULTS).iterdir()) == []
    assert _pointers(led) == [] and len(results_frame(led)) == 0
    _finish(led, aid)  # the attempt synced again after the crash: its rows once
    assert len(results_frame(led)) == 2 and len(_pointers(led)) == 1
    [kept] = (tmp_path / "runs").rglob("*.parquet")
    orphan = kept.with_name("a1-0123456789abcdef.parquet")  # what a sync killed before its commit leaves
    orphan.write_bytes(kept.read_bytes())
    assert sweep_orphans(led) == []  # young: a writer may still be about to commit it
    old = time.time() - files.SWEEP_AGE_S - 10
    os.utime(orphan, (old, old))
    os.utime(kept, (old, old))
    proc = run_cli("--ledger", str(led.path), "status")
    assert proc.returncode == 0, proc.stderr
    assert not orphan.exists() and kept.exists()
    assert len(results_frame(led)) == 2


def test_a_changed_file_is_refused_by_name_never_read(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, _folder(tmp_path))
    _finish(led, aid)
    [pointer] = _pointers(led)
    path = tmp_path / "runs" / pointer.path
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index("time_s"), "time_s",
                                    table.column("time_s").cast("float64").to_pylist()[::-1] and
                                    __import__("pyarrow").array([9.0, 9.0])), path)
    with pytest.raises(LedgerError, match=f"result file {path} does not match the hash"):
        results_frame(led)
    proc = run_cli("--ledger", str(led.path), "report", "--json")
    assert proc.returncode != 0 and str(path) in proc.stderr and "9.0" not in proc.stdout
    path.unlink()
    with pytest.raises(LedgerError, match=f"result file {path} or .* is missing"):
        results_frame(led)
    proc = run_cli("--ledger", str(led.path), "report", "--json")
    assert proc.returncode != 0 and str(path) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_file_written_before_a_column_was_added_reads_it_as_null(tmp_path: Path) -> None:
    """union_by_name: an older file lacks a later optional column; the read takes NULL for it."""
    old = tmp_path / "old.parquet"
    pq.write_table(__import__("pyarrow").table({"n": [1], "time_s": [0.5]}), old)
    new = tmp_path / "new.parquet"
    pq.write_table(__import__("pyarrow").table({"n": [2], "time_s": [0.25], "gpu_model": ["H200"]}), new)
    got = file_scan.read([str(old), str(new)], ["n", "time_s", "gpu_model"]).to_pydict()
    assert got == {"n": [1, 2], "time_s": [0.5, 0.25], "gpu_model": [None, "H200"], "file_index": [0, 1]}


def test_results_format_parquet_holds_what_json_holds(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, _folder(tmp_path))
    _finish(led, aid)
    out = tmp_path / "all.parquet"
    proc = run_cli("--ledger", str(led.path), "results", "--format", "parquet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = __import__("json").loads(run_cli("--ledger", str(led.path), "results", "--format", "json").stdout)
    table = pq.read_table(out).to_pylist()
    for row in table:
        row["extra"] = __import__("json").loads(row["extra"]) if row["extra"] else {}
    assert table == rows and len(rows) == 2
    missing = run_cli("--ledger", str(led.path), "results", "--format", "parquet")
    assert missing.returncode == 2 and "--out" in missing.stderr


def test_a_result_file_keeps_statistics_where_a_read_selects_rows(tmp_path: Path) -> None:
    """Min/max statistics (what lets DuckDB skip a file) on the attempt and
    configuration columns a read filters by; none on the measured numbers,
    which no read selects by and which cost the most to write."""
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, _folder(tmp_path))
    _finish(led, aid)
    [pointer] = _pointers(led)
    path = tmp_path / "runs" / pointer.path
    group = pq.ParquetFile(path).metadata.row_group(0)
    stats = {group.column(i).path_in_schema: group.column(i).statistics for i in range(group.num_columns)}
    for name in ("attempt_id", "cluster", "kernel", "n", "threads"):
        assert stats[name] is not None and stats[name].has_min_max, name
    assert stats["time_s"] is None or not stats["time_s"].has_min_max
    cluster = pq.read_table(path, columns=["cluster"]).column("cluster")[0].as_py()
    assert file_scan.read([str(path)], ["time_s"], cluster=cluster).column("time_s").to_pylist() == [1e-3, 2e-3]
    assert file_scan.read([str(path)], ["time_s"], cluster=f"not-{cluster}").num_rows == 0
