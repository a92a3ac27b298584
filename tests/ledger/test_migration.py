"""Older ledgers are backed up byte for byte, then upgraded in place, so
that a failed upgrade never loses a job."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from campaign.ledger import Ledger
from campaign.ledger.models import SCHEMA_VERSION, Base
from campaign.plumbing.errors import LedgerError
from tests.conftest import result_sql, run_cli, sql_rows
from tests.fixtures import LEDGER_V1
from tests.ledger import make_v1_fixture as v1

FIXTURE = LEDGER_V1


@pytest.fixture
def old_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite"
    shutil.copyfile(FIXTURE, path)
    return path


def _dump(path: Path) -> dict[str, list[tuple]]:
    tables = [t for (t,) in sql_rows(path, "SELECT name FROM sqlite_master WHERE type='table' AND name != 'alembic_version'")]
    return {t: sql_rows(path, f'SELECT * FROM "{t}" ORDER BY 1') for t in tables}


def test_fixture_script_reproduces_the_committed_fixture(tmp_path: Path) -> None:
    v1.write(tmp_path / "again.sqlite")
    assert _dump(tmp_path / "again.sqlite") == _dump(FIXTURE)
    assert sql_rows(FIXTURE, "SELECT value FROM meta WHERE key='schema_version'") == [("1",)]
    assert "python" not in {r[1] for r in sql_rows(FIXTURE, "PRAGMA table_info(campaign)")}


def test_v1_ledger_is_backed_up_then_upgraded(old_ledger: Path) -> None:
    before = _dump(old_ledger)
    led = Ledger(old_ledger)
    led.close()
    backup = old_ledger.with_name("ledger.sqlite.v1.bak")
    assert backup.read_bytes() == FIXTURE.read_bytes()
    assert led.notes == [f"ledger {old_ledger} upgraded from schema version 1 to {SCHEMA_VERSION}; backup: {backup}"]
    assert sql_rows(old_ledger, "SELECT value FROM meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert sql_rows(old_ledger, "SELECT version_num FROM alembic_version") == [(f"v{SCHEMA_VERSION}",)]
    # every row survived; campaign gained python from the newest provenance's config, else python3
    after = _dump(old_ledger)
    named = [r[1] for r in sql_rows(old_ledger, "PRAGMA table_info(run)")].index("named_by")
    first = dict(sql_rows(old_ledger, "SELECT run_id, provenance_id FROM job_attempt WHERE attempt = 1"))
    assert [row[0] for row in after["run"]] == sorted(first) and all(first.values())
    # v16: each run named by the submit that recorded it, its first attempt's
    assert [row[named] for row in after["run"]] == [first[row[0]] for row in after["run"]]
    for table in ("provenance", "run", "job_attempt"):
        width = len(before[table][0])  # columns added since v1 (e.g. v8's) come last, NULL
        assert [row[:width] for row in after[table]] == before[table], table
        assert all(v is None for row in after[table] for i, v in enumerate(row[width:], width)
                   if (table, i) != ("run", named)), table
    assert sql_rows(old_ledger, "SELECT name, python FROM campaign ORDER BY id") == list(v1.CAMPAIGNS.items())
    # the result rows moved to files (v12), every value as v1 stored it (the JSON extra decoded)
    names = [r[1] for r in sql_rows(FIXTURE, "PRAGMA table_info(result)") if r[1] != "id"]
    select = f"SELECT {', '.join(names)} FROM result"
    decoded = [[tuple(json.loads(v) if n == "extra" and isinstance(v, str) else v for n, v in zip(names, row,
                                                                                                  strict=True))
                 for row in rows]
               for rows in (sql_rows(FIXTURE, select.replace("FROM result", "FROM main.result")),
                            result_sql(old_ledger, select))]
    assert sorted(map(repr, decoded[1])) == sorted(map(repr, decoded[0]))
    assert len(decoded[1]) == len(v1.RESULT_TIMES) + v1.N_IMPORTED
    assert len(after["job_attempt"]) == v1.N_ATTEMPTS
    assert sql_rows(old_ledger, "PRAGMA foreign_key_check") == []
    assert sql_rows(old_ledger, "PRAGMA integrity_check") == [("ok",)]


def test_upgraded_schema_matches_a_new_ledger(old_ledger: Path, tmp_path: Path) -> None:
    Ledger(old_ledger).close()
    Ledger(tmp_path / "new.sqlite").close()

    def shape(path: Path) -> dict[str, list[tuple]]:
        insp = inspect(create_engine(f"sqlite:///{path}"))
        return {t: [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(t)]
                for t in sorted(insp.get_table_names())}

    assert shape(old_ledger) == shape(tmp_path / "new.sqlite")
    assert set(shape(old_ledger)) == set(Base.metadata.tables) | {"alembic_version"}


def test_second_open_does_nothing(old_ledger: Path) -> None:
    Ledger(old_ledger).close()
    upgraded = old_ledger.read_bytes()
    led = Ledger(old_ledger)
    led.close()
    assert led.notes == []
    assert old_ledger.read_bytes() == upgraded
    assert sorted(p.name for p in old_ledger.parent.iterdir()) == ["ledger.results", "ledger.sqlite", "ledger.sqlite.v1.bak"]


def test_existing_different_backup_is_kept(old_ledger: Path) -> None:
    other = old_ledger.with_name("ledger.sqlite.v1.bak")
    other.write_bytes(b"an earlier backup\n")
    led = Ledger(old_ledger)
    led.close()
    assert other.read_bytes() == b"an earlier backup\n"
    stamped = [p for p in old_ledger.parent.iterdir() if p.name.startswith("ledger.sqlite.v1.") and p != other]
    assert len(stamped) == 1 and stamped[0].name.endswith(".bak")
    assert stamped[0].read_bytes() == FIXTURE.read_bytes()
    assert str(stamped[0]) in led.notes[0]


def test_failed_upgrade_leaves_the_ledger_unchanged(old_ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from campaign.ledger import migrate

    real = migrate.upgrade

    def broken(conn, frm, to, root=None):  # type: ignore[no-untyped-def]
        real(conn, frm, to, root)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(migrate, "upgrade", broken)
    with pytest.raises(LedgerError, match="rolled back, the ledger is unchanged"):
        Ledger(old_ledger)
    assert old_ledger.read_bytes() == FIXTURE.read_bytes()
    monkeypatch.undo()
    led = Ledger(old_ledger)  # the next open upgrades, reusing the identical backup
    assert len(led.notes) == 1
    assert sorted(p.name for p in old_ledger.parent.iterdir()) == ["ledger.results", "ledger.sqlite", "ledger.sqlite.v1.bak"]


def test_newer_ledger_is_refused_byte_identical(old_ledger: Path) -> None:
    Ledger(old_ledger).close()
    con = sqlite3.connect(old_ledger)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    before = old_ledger.read_bytes()
    with pytest.raises(LedgerError, match="newer than this campaign"):
        Ledger(old_ledger)
    assert old_ledger.read_bytes() == before
    proc = run_cli("--ledger", str(old_ledger), "results")
    assert proc.returncode == 2 and "newer than this campaign" in proc.stderr and "Traceback" not in proc.stderr
    assert old_ledger.read_bytes() == before


def test_cli_upgrades_and_says_so_once(old_ledger: Path) -> None:
    proc = run_cli("--ledger", str(old_ledger), "results", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count('"time_s"') == len(v1.RESULT_TIMES) + v1.N_IMPORTED
    notes = [line for line in proc.stderr.splitlines() if "upgraded from schema version 1" in line]
    assert len(notes) == 1 and "ledger.sqlite.v1.bak" in notes[0], proc.stderr
    again = run_cli("--ledger", str(old_ledger), "results", "--format", "json")
    assert again.returncode == 0 and again.stderr == "" and again.stdout == proc.stdout


def test_ledger_with_python_column_but_v1_label(tmp_path: Path) -> None:
    """Ledgers written between the column's arrival and the version bump."""
    path = tmp_path / "mid.sqlite"
    Ledger(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.execute("DROP TABLE alembic_version")
    con.execute("INSERT INTO campaign (name, cluster, experiment, backend, cluster_yaml, python, created_at, workdir) "
                "VALUES ('c', 'local', 'smoke', 'local', '', '/usr/bin/python3', '2025-01-01 00:00:00', '/w')")
    con.commit()
    con.close()
    led = Ledger(path)
    assert len(led.notes) == 1
    assert sql_rows(path, "SELECT python FROM campaign") == [("/usr/bin/python3",)]
    assert sql_rows(path, "SELECT value FROM meta") == [(str(SCHEMA_VERSION),)]


def test_wal_ledger_backup_holds_the_committed_wal_pages(old_ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = sqlite3.connect(old_ledger)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    con.execute("INSERT INTO meta VALUES ('only_in_wal', 'yes')")
    con.commit()  # the row sits in ledger.sqlite-wal, not yet in the main file
    monkeypatch.setenv("CAMPAIGN_JOURNAL_MODE", "WAL")
    led = Ledger(old_ledger)
    led.close()
    con.close()
    backup = old_ledger.with_name("ledger.sqlite.v1.bak")
    assert str(backup) in led.notes[0]
    assert sql_rows(backup, "SELECT value FROM meta WHERE key = 'only_in_wal'") == [("yes",)]
    assert sql_rows(backup, "SELECT value FROM meta WHERE key = 'schema_version'") == [("1",)]
    assert _dump(backup)["result"] == _dump(FIXTURE)["result"]
