"""The ledger file: creation, schema version, refusing what it cannot use."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import select, text

from campaign.ledger import Ledger
from campaign.ledger.models import SCHEMA_VERSION, Meta
from campaign.plumbing.errors import LedgerError


def test_new_ledger_records_schema_version(ledger_path: Path) -> None:
    led = Ledger(ledger_path)
    with led.session() as s:
        assert s.scalar(select(Meta.value).where(Meta.key == "schema_version")) == str(SCHEMA_VERSION)
        assert s.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert s.execute(text("PRAGMA journal_mode")).scalar() == "delete"


def test_newer_schema_is_refused_and_untouched(ledger_path: Path) -> None:
    Ledger(ledger_path).close()
    con = sqlite3.connect(ledger_path)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    before = ledger_path.read_bytes()
    with pytest.raises(LedgerError, match="newer than this campaign"):
        Ledger(ledger_path)
    assert ledger_path.read_bytes() == before


def test_not_a_database(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not sqlite\n" * 100)
    with pytest.raises(LedgerError, match="not a campaign ledger"):
        Ledger(bogus)
    assert bogus.read_text().startswith("this is not sqlite")


def test_foreign_sqlite_database_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="no meta table"):
        Ledger(other)


def test_missing_ledger_without_create(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(tmp_path / "none.sqlite", create=False)
    assert not (tmp_path / "none.sqlite").exists()
