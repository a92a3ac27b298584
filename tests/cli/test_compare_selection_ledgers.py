"""`compare`'s `ledger=` selection only reads, and its dates are local time,
through the real CLI on real SQLite files."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from campaign.ledger.models import SCHEMA_VERSION
from tests.conftest import run_cli
from tests.ledger.make_version_fixtures import FIXTURES, copy_ledger

HEAD = FIXTURES / f"v{SCHEMA_VERSION}.sqlite"  # two campaigns; every job started 2026-06-01 12:00:40 UTC
OLD = FIXTURES / "v7-counters.sqlite"


@pytest.fixture
def own(tmp_path: Path) -> Path:
    return copy_ledger(HEAD, tmp_path / "own.sqlite")  # with its result files


def _compare(own: Path, other: Path, **env: str) -> tuple[int, str, str]:
    proc = run_cli("--ledger", str(own), "compare", "smoke-local", f"campaign=smoke-local,ledger={other}",
                   env=env or None)
    return proc.returncode, proc.stdout, proc.stderr


def _state(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), os.stat(path).st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def _one_line_exit_2(code: int, stderr: str, text: str) -> None:
    assert code == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and text in stderr and "internal error" not in stderr, stderr


def test_zero_byte_file_is_refused_and_stays_empty(own: Path, tmp_path: Path) -> None:
    empty = tmp_path / "other" / "empty.sqlite"
    empty.parent.mkdir()
    empty.touch()
    before = _state(empty)
    code, _, err = _compare(own, empty)
    _one_line_exit_2(code, err, "empty")
    assert _state(empty) == before and empty.stat().st_size == 0


def test_empty_database_and_other_files_are_refused_unchanged(own: Path, tmp_path: Path) -> None:
    folder = tmp_path / "other"
    folder.mkdir()
    empty_db = folder / "nothing.sqlite"  # an SQLite database without tables (not zero bytes)
    con = sqlite3.connect(empty_db)
    con.executescript("CREATE TABLE t (x); DROP TABLE t;")
    con.close()
    text = folder / "notes.txt"
    text.write_text("not a database at all\n" * 100)
    foreign = folder / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.executescript("CREATE TABLE meta (key TEXT, value TEXT); CREATE TABLE other (x);")
    con.close()
    for path, says in ((empty_db, "empty"), (text, "not a campaign ledger"), (foreign, "not a campaign ledger")):
        before = _state(path)
        code, _, err = _compare(own, path)
        _one_line_exit_2(code, err, says)
        assert _state(path) == before, path


@pytest.mark.parametrize("value", ["abc", "", "7.5", "-1", " 11", "1e3", "99999999999999999999", "١١"])
def test_hostile_schema_version_is_one_line(own: Path, tmp_path: Path, value: str) -> None:
    other = tmp_path / "other" / "hostile.sqlite"
    other.parent.mkdir()
    copy_ledger(HEAD, other)
    con = sqlite3.connect(other)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    con.commit()
    con.close()
    before = _state(other)
    code, _, err = _compare(own, other)
    _one_line_exit_2(code, err, "schema version")
    assert _state(other) == before
    code, _, err = run_cli("--ledger", str(other), "results").returncode, "", ""  # the own-ledger path too
    assert code == 2


def test_newer_schema_is_refused_unchanged(own: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "newer.sqlite"
    other.parent.mkdir()
    copy_ledger(HEAD, other)
    con = sqlite3.connect(other)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    before = _state(other)
    code, _, err = _compare(own, other)
    _one_line_exit_2(code, err, "newer than this campaign")
    assert _state(other) == before


def test_current_ledger_is_read_without_any_write(own: Path, tmp_path: Path) -> None:
    """At this schema version the file is opened read-only: a WAL ledger stays WAL (the read-write
    open set the journal mode, which rewrote the header), bytes and mtime untouched."""
    other = tmp_path / "other" / "wal.sqlite"
    other.parent.mkdir()
    copy_ledger(HEAD, other)
    con = sqlite3.connect(other)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    con.close()
    before = _state(other)
    code, out, err = _compare(own, other)
    assert code == 0, err
    assert "matched" in out
    data, mtime, names = _state(other)
    assert (data, mtime) == before[:2]
    # a WAL reader needs the shared-memory index beside the file; nothing is written to the log
    assert set(names) <= {"wal.sqlite", "wal.sqlite-shm", "wal.sqlite-wal", "wal.results"}  # (its result files)
    assert not (other.parent / "wal.sqlite-wal").exists() or (other.parent / "wal.sqlite-wal").stat().st_size == 0
    con = sqlite3.connect(f"file:{other}?mode=ro", uri=True)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    con.close()


def test_older_ledger_is_read_through_an_upgraded_copy(own: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "old.sqlite"
    other.parent.mkdir()
    shutil.copyfile(OLD, other)
    before = _state(other)
    code, out, err = _compare(own, other)
    assert code == 0, err
    assert "matched" in out
    assert _state(other) == before  # no backup beside it, no upgrade in place


@pytest.mark.parametrize("tz", ["America/Chicago", "Asia/Kolkata"])
def test_naive_since_until_are_local_time(own: Path, tz: str) -> None:
    """Every job of the fixture started at 12:00:40 UTC: 07:00:40 in Chicago (CDT), 17:30:40 in Kolkata."""
    start_local = {"America/Chicago": "07:00:40", "Asia/Kolkata": "17:30:40"}[tz]
    hour = int(start_local[:2])
    before, after = f"2026-06-01T{hour:02d}:00:00", f"2026-06-01T{hour + 1:02d}:00:00"

    def compare(base: str, new: str) -> tuple[int, str]:
        proc = run_cli("--ledger", str(own), "compare", base, new, env={"TZ": tz})
        return proc.returncode, proc.stderr

    code, err = compare(f"campaign=smoke-local,until={after}", f"campaign=smoke-local,since={before}")
    assert code == 0, err  # the jobs started inside [before, after) local time
    code, err = compare("smoke-local", f"campaign=smoke-local,since={after}")
    _one_line_exit_2(code, err, "no usable results")
    code, err = compare(f"campaign=smoke-local,until={before}", "smoke-local")
    _one_line_exit_2(code, err, "no usable results")
    code, err = compare("smoke-local", "campaign=smoke-local,since=2026-06-01T12:00:00+00:00")  # an explicit offset
    assert code == 0, err
