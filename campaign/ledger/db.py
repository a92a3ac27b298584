"""Engine, pragmas and the schema-version check.

SQLite is opened with a busy timeout and foreign keys on, in rollback-journal
mode (DELETE) by default: WAL needs shared memory that network filesystems
(NFS, Lustre — where HPC home and project folders live) do not provide.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, select
from sqlalchemy.exc import DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from campaign.errors import LedgerError
from campaign.ledger.models import SCHEMA_VERSION, Base, Meta

LEDGER_ENV = "CAMPAIGN_LEDGER"
BUSY_TIMEOUT_MS = 60_000


def default_ledger_path() -> Path:
    """`$CAMPAIGN_LEDGER`, else `$XDG_DATA_HOME/campaign/ledger.sqlite`
    (`~/.local/share/campaign/ledger.sqlite`)."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "campaign" / "ledger.sqlite"


def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
    # Let SQLAlchemy's BEGIN come from our begin event (pysqlite's own handling
    # would start transactions lazily, too late to take the write lock).
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    cur.execute(f"PRAGMA journal_mode = {os.environ.get('CAMPAIGN_JOURNAL_MODE', 'DELETE')}")
    cur.close()


def _on_begin(conn: object) -> None:
    # BEGIN IMMEDIATE: a writer takes the lock at the start of its short
    # transaction instead of failing on upgrade ("database is locked").
    conn.exec_driver_sql("BEGIN IMMEDIATE")  # type: ignore[attr-defined]


class Ledger:
    """An open ledger: engine + session factory, schema checked."""

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise LedgerError(f"ledger {self.path} does not exist; run `campaign submit` first or pass --ledger")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a folder, not a file")
        self.engine: Engine = create_engine(f"sqlite:///{self.path}", future=True)
        event.listen(self.engine, "connect", _on_connect)
        event.listen(self.engine, "begin", _on_begin)
        self.session: sessionmaker[Session] = sessionmaker(self.engine, expire_on_commit=False)
        self._check_or_create()

    def _check_or_create(self) -> None:
        try:
            tables = set(inspect(self.engine).get_table_names())
        except (DatabaseError, OperationalError) as exc:
            raise LedgerError(f"{self.path} is not a campaign ledger (not an SQLite database): {exc.orig}") from None
        if not tables:
            Base.metadata.create_all(self.engine)
            with self.session.begin() as s:
                s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
            return
        if "meta" not in tables:
            raise LedgerError(f"{self.path} is an SQLite database but not a campaign ledger (no meta table)")
        with self.session() as s:
            row = s.scalar(select(Meta).where(Meta.key == "schema_version"))
        version = int(row.value) if row else -1
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path} has schema version {version}, newer than this campaign "
                f"(knows {SCHEMA_VERSION}): upgrade campaign"
            )
        if version < SCHEMA_VERSION:
            raise LedgerError(f"ledger {self.path} has old schema version {version}; expected {SCHEMA_VERSION}")

    def close(self) -> None:
        self.engine.dispose()
