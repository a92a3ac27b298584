"""The orphan sweep never removes the only copy of rows (campaign.results.sweep):
a result file renamed or moved by hand, or one whose holder was cut short,
stays through `status` while its rows exist in no verified file of the ledger;
once the holder is back and whole, the extra copy goes. Through the real CLI,
on files aged past files.SWEEP_AGE_S."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

from bench.finished_jobs import build
from campaign.ledger import files
from tests.conftest import run_cli


def _age(*paths: Path) -> None:
    old = time.time() - files.SWEEP_AGE_S - 60
    for path in paths:
        os.utime(path, (old, old))


def _campaign(tmp_path: Path) -> tuple[Path, Path, Path, int]:
    """A ledger whose one campaign's attempts are synced into one result file (returned)."""
    ledger, work = tmp_path / "ledger.sqlite", tmp_path / "runs"
    built = build(ledger, work, jobs=3, rows_per_job=5)
    proc = run_cli("--ledger", str(ledger), "status", cwd=tmp_path)
    assert proc.returncode == 0 and f"{built['rows']} result row(s) ingested" in proc.stdout, proc.stderr
    [kept] = (work / files.RESULTS).iterdir()
    _age(kept)
    return ledger, work, kept, built["rows"]


def _status(ledger: Path, cwd: Path) -> int:
    proc = run_cli("--ledger", str(ledger), "--format", "json", "status", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return int(json.loads(proc.stdout)["swept_files"])


def _rows(ledger: Path, cwd: Path) -> int:
    proc = run_cli("--ledger", str(ledger), "results", "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return len(json.loads(proc.stdout))


def test_a_renamed_result_file_is_kept(tmp_path: Path) -> None:
    ledger, _, kept, rows = _campaign(tmp_path)
    data = kept.read_bytes()
    renamed = kept.rename(kept.with_name("a1-renamed.parquet"))  # its pointer now names a missing file
    assert _status(ledger, tmp_path) == 0
    assert renamed.read_bytes() == data
    renamed.rename(kept)  # put back: every row reads again
    assert _rows(ledger, tmp_path) == rows


def test_a_moved_result_file_and_the_copy_it_held_are_kept(tmp_path: Path) -> None:
    ledger, work, kept, rows = _campaign(tmp_path)
    older = kept.with_name("a1-00000000000000aa.parquet")  # a sync killed between rename and commit left it
    shutil.copyfile(kept, older)
    _age(older)
    other = tmp_path / "other"
    with sqlite3.connect(ledger) as con:  # a second campaign of the ledger, with a folder of its own
        con.execute("INSERT INTO campaign (id, name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                    "workdir) SELECT 2, 'other', cluster, experiment, backend, cluster_yaml, python, created_at, ? "
                    "FROM campaign WHERE id = 1", (str(other),))
    con.close()
    (other / files.RESULTS).mkdir(parents=True)
    moved = kept.rename(other / files.RESULTS / kept.name)  # into the other campaign's folder
    assert _status(ledger, tmp_path) == 0
    assert older.exists() and moved.exists()
    moved.rename(kept)  # back where its pointer says: the older copy's rows are held by a verified file now
    assert _status(ledger, tmp_path) == 1
    assert not older.exists() and kept.exists() and _rows(ledger, tmp_path) == rows


def test_a_copy_whose_holder_is_half_written_is_kept(tmp_path: Path) -> None:
    ledger, work, kept, rows = _campaign(tmp_path)
    data = kept.read_bytes()
    older = kept.with_name("a1-00000000000000aa.parquet")
    half = kept.with_name("a1-00000000000000bb.parquet")  # an unreferenced file cut short: unreadable
    shutil.copyfile(kept, older)
    half.write_bytes(data[: len(data) // 2])
    kept.write_bytes(data[: len(data) // 2])  # the pointer's file cut short (a restore that stopped halfway)
    _age(kept, older, half)
    assert _status(ledger, tmp_path) == 0
    assert older.read_bytes() == data and half.exists()
    kept.write_bytes(data)
    _age(kept)
    assert _status(ledger, tmp_path) == 1
    assert not older.exists() and half.exists() and _rows(ledger, tmp_path) == rows
