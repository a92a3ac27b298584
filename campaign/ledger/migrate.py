"""Upgrading an older ledger in place: backup first, then Alembic, in one
transaction.

`meta.schema_version` is the authoritative version (the check on every open
reads only that row, without importing Alembic); each migration updates it,
and `alembic_version` is stamped alongside so that Alembic's own tools agree.
Revision `vN` is schema version N.

The label does not say which tables a ledger has: versions 3..7 were reserved at once
(SCHEMA_VERSION went from 2 to 7 while each migration was still a no-op), so every branch of that
round wrote ledgers labelled 7 with only its own changes, and the compare branch wrote 8 without
any of 3..7. An upgrade therefore replays the whole chain from v1: every migration checks what is
there before it adds a table, column or index, and the one that rewrites data (v4's local -> UTC
times) does so only when its own columns were missing, i.e. when the code that wrote the ledger
stored local times. A migration whose work is done costs a schema look-up.
"""

from __future__ import annotations

import errno
import filecmp
import json
import os
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from analysis.whole_file import fresh_temporary
from campaign.plumbing import storage

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BACKUP = " (the ledger's backup before its upgrade; the ledger is unchanged)"


def revision(version: int) -> str:
    return f"v{version}"


def _config(conn: Connection) -> Any:
    from alembic.config import Config  # lazy: Alembic is needed only when a ledger is upgraded

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    return cfg


def labelled() -> int:
    """Inside a migration: the schema version the ledger was labelled with before this upgrade
    (meta.schema_version moves with each migration of the replay, so it no longer says)."""
    from alembic import context

    return int(context.config.attributes.get("from_version", 1))


def results_root() -> Path | None:
    """Inside a migration: the ledger's result folder (Ledger.results_root)."""
    from alembic import context

    root = context.config.attributes.get("results_root")
    return Path(root) if root is not None else None


def stamp(conn: Connection, version: int) -> None:
    """Record `version` in alembic_version (the caller's transaction)."""
    from alembic import command

    command.stamp(_config(conn), revision(version), purge=True)


def upgrade(conn: Connection, from_version: int, to_version: int, results_root: Path | None = None) -> None:
    """Bring a ledger labelled `from_version` to `to_version` on `conn`, inside the caller's
    transaction; each migration also updates meta.schema_version. Replays every migration from
    v1 (see the module's docstring: a label of 7 or 8 may lack any of 3..7's tables)."""
    from alembic import command

    if from_version >= to_version:
        return
    cfg = _config(conn)
    cfg.attributes["from_version"] = from_version
    cfg.attributes["results_root"] = results_root  # v12 writes the result rows there as files
    command.stamp(cfg, revision(1), purge=True)  # v1 ledgers predate alembic_version; later labels are not trusted
    command.upgrade(cfg, revision(to_version))


def backup_path(path: Path, version: int) -> Path:
    """`<ledger>.v<version>.bak`; a timestamped name when that one exists
    with other content (an earlier backup is never overwritten)."""
    plain = path.with_name(f"{path.name}.v{version}.bak")
    if not plain.exists():
        return plain
    stamp_ = datetime.now().strftime("%Y%m%dT%H%M%S%f")
    return path.with_name(f"{path.name}.v{version}.{stamp_}.bak")


def sqlite_copy(path: Path, target: Path) -> Path:
    """A complete copy of a SQLite file through SQLite's online backup, read
    from a read-only connection (the source is never written, and committed
    pages still in its -wal file are in the copy)."""
    src = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    return target


def backup_sqlite(path: Path, version: int, journal_mode: str) -> Path:
    """Copy the ledger before any change. The caller holds the write lock
    (BEGIN IMMEDIATE), so nobody changes the file during the copy.

    In a rollback-journal mode the file *is* the database: a byte copy. In WAL
    mode committed pages may still sit in the -wal file, so SQLite's online
    backup writes a complete copy instead. Either is written under a temporary
    name and renamed once whole: a copy cut short (a full disk, a kill) never
    lies under the backup's name, where it passed for the backup. A full disk or
    read-only folder is a StorageError naming the backup and the bytes it needs."""
    target = backup_path(path, version)
    tmp = fresh_temporary(target)  # (what a killed upgrade's copy left there goes)
    size = path.stat().st_size
    try:
        _copy(path, tmp, journal_mode, target, size)
        plain = path.with_name(f"{path.name}.v{version}.bak")
        if target != plain and filecmp.cmp(plain, tmp, shallow=False):  # as the earlier backup: keep one
            return plain
        os.replace(tmp, target)
    except OSError as exc:  # (shutil names the ledger it read, not the copy it could not write)
        if not storage.is_storage(exc):
            raise
        tmp.unlink(missing_ok=True)  # before the free space is told
        raise storage.storage_error(target, exc.errno == errno.EROFS, size, BACKUP, cause=exc.errno) from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _copy(path: Path, tmp: Path, journal_mode: str, target: Path, size: int) -> None:
    if journal_mode.lower() != "wal":
        shutil.copyfile(path, tmp)
        return
    # From a second connection: a connection inside a write transaction
    # cannot be a backup source. Ours has written nothing yet, and WAL
    # lets the second one read the committed state beside it.
    try:
        sqlite_copy(path, tmp)
    except sqlite3.Error as exc:  # SQLite's own words for a full disk or read-only folder
        name = str(getattr(exc, "sqlite_errorname", ""))
        if name not in storage.SQLITE_STORAGE:
            raise
        tmp.unlink(missing_ok=True)  # before the free space is told
        raise storage.storage_error(target, name not in storage.SQLITE_SPACE, size, BACKUP) from None


def stored_cell(value: Any, number: bool) -> Any:
    """A cell of the old `result` table as a result file's column takes it (v12, v13: a number
    SQLite kept as text stays the number the read gave)."""
    if not number:
        return value if value is None or isinstance(value, str) else str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return value
    return value


def extra_object(text: Any) -> dict[str, Any] | None:
    """The old `result.extra` JSON as the row's extra object (None: none)."""
    if text is None:
        return None
    value = json.loads(text) if isinstance(text, str) else text
    return value if isinstance(value, dict) and value else None
