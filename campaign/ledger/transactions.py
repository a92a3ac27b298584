"""How a ledger's connections take their locks: SQLite's pragmas and BEGIN IMMEDIATE, PostgreSQL's
ledger-wide advisory lock, and the session that reads without either.

SQLite is opened with a busy timeout and foreign keys on, in rollback-journal
mode (DELETE) by default: WAL needs shared memory that network filesystems
(NFS, Lustre — where HPC home and project folders live) do not provide, so it
is opt-in (CAMPAIGN_JOURNAL_MODE=WAL) for ledgers on a local disk only.
Every transaction starts with BEGIN IMMEDIATE (SQLite) or takes one
ledger-wide advisory lock (PostgreSQL): writers queue instead of failing, and
callers keep transactions short (never across sbatch or sacct).
db.py attaches these to each engine it makes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from campaign.ledger.layout import BUSY_TIMEOUT_MS
from campaign.plumbing.errors import LedgerError

JOURNAL_ENV = "CAMPAIGN_JOURNAL_MODE"
JOURNAL_MODES = ("DELETE", "TRUNCATE", "PERSIST", "WAL")
# pg_advisory_xact_lock key of the ledger-wide transaction lock ("campaign" in ASCII).
PG_LOCK_KEY = 0x63616D706169676E
READ_OPTION = "campaign_read_only"
# A writer waits for the write lock in slices this long, with Python running between them (see _begin_write)
WAIT_SLICE_MS = 100


def journal_mode() -> str:
    mode = os.environ.get(JOURNAL_ENV, "DELETE").upper()
    if mode not in JOURNAL_MODES:
        raise LedgerError(f"{JOURNAL_ENV}={mode!r} is not one of {', '.join(JOURNAL_MODES)} (default DELETE)")
    return mode


def on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
    # Let SQLAlchemy's BEGIN come from our begin event (pysqlite's own handling
    # would start transactions lazily, too late to take the write lock).
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    cur.execute(f"PRAGMA journal_mode = {journal_mode()}")
    cur.close()


def on_connect_read_only(dbapi_conn: sqlite3.Connection, _record: object) -> None:
    # No journal_mode pragma: setting it writes the file's header (a WAL ledger would be changed).
    dbapi_conn.isolation_level = None
    dbapi_conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _reading(conn: Connection) -> bool:
    return bool(conn.get_execution_options().get(READ_OPTION))


def on_begin(conn: Connection) -> None:
    # BEGIN IMMEDIATE: a writer takes the lock at the start of its short
    # transaction and waits (busy timeout) for it, instead of failing when a
    # deferred read transaction tries to upgrade to a write ("database is
    # locked", which SQLite returns at once to avoid a deadlock).
    # Read-only sessions BEGIN DEFERRED: they only take SHARED locks, so they
    # neither queue behind one another nor starve a writer, whose PENDING lock
    # at commit keeps new readers out until it is done.
    if _reading(conn):
        conn.exec_driver_sql("BEGIN")
    else:
        _begin_write(conn)


def _begin_write(conn: Connection) -> None:
    """BEGIN IMMEDIATE, waiting up to the busy timeout for another writer.

    Why in slices: SQLite's own busy wait sleeps in C, where no Python signal
    handler runs, so a Ctrl-C (or scancel's SIGTERM) of a command queued
    behind another writer (a long import, a colleague's sync) took effect only
    when the whole timeout had passed, a minute later. Between slices the
    handlers run: the command stops at once. The last try goes through
    SQLAlchemy, so a ledger still locked at the deadline (or any other
    failure) raises what it always raised."""
    raw = conn.connection.driver_connection
    if not isinstance(raw, sqlite3.Connection):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        return
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    raw.execute(f"PRAGMA busy_timeout = {WAIT_SLICE_MS}")
    try:
        while time.monotonic() < deadline:
            try:
                raw.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF != sqlite3.SQLITE_BUSY:
                    break  # not a lock: the last try raises it as SQLAlchemy wraps it
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    finally:
        raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def on_begin_pg(conn: Connection) -> None:
    # The same discipline on PostgreSQL: one ledger-wide lock per write
    # transaction, released at commit/rollback. Writers queue (lock_timeout
    # bounds the wait) and never fail with serialization errors that callers
    # would have to retry; READ COMMITTED is then enough. Readers take no lock.
    if not _reading(conn):
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_LOCK_KEY})")


class LedgerSession(Session):
    """A session whose transactions are read-only unless begun explicitly.

    The ledger's convention (docs/style.md#ledger-and-transactions): writes happen in
    `with ledger.session.begin() as s:` and take the write lock at BEGIN;
    `with ledger.session() as s:` only reads, in a deferred transaction that
    takes no write lock. Writing in a plain session still works, but may be
    refused at once with "database is locked" when another writer is active."""

    _ledger_write = False

    def begin(self, nested: bool = False) -> Any:
        self._ledger_write = True
        return super().begin(nested=nested)

    def get_bind(self, *args: Any, **kw: Any) -> Any:
        if self._ledger_write:
            return self.info["ledger_write_bind"]
        return super().get_bind(*args, **kw)
