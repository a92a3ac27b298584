"""Engine, pragmas, the schema-version check and upgrades of older ledgers.

A ledger is an SQLite file (the default) or, for a team sharing one ledger
across login nodes, a PostgreSQL database given as a URL
(`postgresql+psycopg://user:pw@host/db`). See docs/ledger.md.

How its connections lock (pragmas, BEGIN IMMEDIATE, PostgreSQL's advisory
lock) is campaign.ledger.transactions; writers queue instead of failing, and
callers keep transactions short (never across sbatch or sacct).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, insert, inspect, make_url, select
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from campaign.ledger.layout import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS  # re-exported: written once, in layout
from campaign.ledger.layout import LEDGER_ENV as LEDGER_ENV
from campaign.ledger.layout import SCHEMA_VERSION, locked_text
from campaign.ledger.layout import default_ledger_path as default_ledger_path
from campaign.ledger.models import Base, Meta
from campaign.ledger.transactions import (
    READ_OPTION,
    LedgerSession,
    journal_mode,
    on_begin,
    on_begin_pg,
    on_connect,
    on_connect_read_only,
)
from campaign.plumbing.errors import BadInputError, CampaignError, LedgerError, one_line
from campaign.plumbing.storage import sqlite_storage

# A URL as pathlib leaves it: Path("postgresql+psycopg://h/db") is "postgresql+psycopg:/h/db".
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_COLLAPSED_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):/(?!/)")


def ledger_url(location: Path | str) -> str | None:
    """The database URL when `location` is one (it contains "://", or is such
    a URL after pathlib collapsed its "//"), else None: a file path.
    `sqlite:///PATH` URLs are file paths too (None)."""
    text = str(location)
    if not _SCHEME.match(text):  # "a://b.sqlite" or "led?x://" are file names: a URL starts with its scheme
        m = _COLLAPSED_URL.match(text)
        if not m or not m.group(1).lower().startswith(("postgres", "mysql", "mariadb", "oracle", "mssql")):
            return None
        text = f"{m.group(1)}://{text[m.end() :]}"
    if text.lower().startswith("sqlite"):
        return None
    return text


def results_root(ledger_file: Path) -> Path:
    """`<ledger stem>.results/` beside an SQLite ledger: the stand-in for the
    folders of its campaigns that are not on this machine (a ledger written
    elsewhere; campaign.ledger.files.homes). A PostgreSQL ledger has none."""
    path = ledger_file.resolve()
    return path.with_name(f"{path.stem}.results")


def session_results_root(s: Any) -> Path | None:
    """results_root of the ledger a session writes to (None on PostgreSQL)."""
    url = s.get_bind().url
    return results_root(Path(url.database)) if url.get_backend_name() == "sqlite" and url.database else None


def sqlite_path(location: Path | str) -> Path | None:
    """The SQLite file a ledger location names, or None for a database URL."""
    return None if ledger_url(location) is not None else _sqlite_file(location)


def _sqlite_file(location: Path | str) -> Path:
    text = str(location)
    for prefix in ("sqlite:///", "sqlite:/"):
        if text.lower().startswith(prefix):
            return Path(text[len(prefix) - 1 :]) if prefix == "sqlite:/" else Path(text[len(prefix) :])
    return Path(location)


def _mask(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        return url


def schema_number(value: object) -> int:
    """meta.schema_version as a number; -1 for anything but plain decimal digits (a hostile or
    damaged value: 'abc', '', '7.5', ' 7', '1e3', a number too long to mean anything)."""
    text = value if isinstance(value, str) else str(value) if isinstance(value, int) else ""
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        return -1
    return int(text)


def file_schema_version(path: Path) -> int:
    """The schema version of a ledger file (`compare ledger=PATH`), read read-only; one clear line for anything that
    is not a campaign ledger (an empty file, another file, a hostile version)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            row = (
                con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if "meta" in tables
                else None
            )
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise BadInputError(
            f"ledger {path} is not a campaign ledger (not an SQLite database): {one_line(exc)}"
        ) from None
    if not tables:
        raise BadInputError(f"ledger {path} is empty, not a campaign ledger")
    if row is None:
        raise BadInputError(f"ledger {path} is not a campaign ledger (no schema version)")
    version = schema_number(row[0])
    if version < 1:
        raise BadInputError(
            f"ledger {path} has no valid schema version ({one_line(repr(row[0]), 60)}); it was not written by campaign"
        )
    if version > SCHEMA_VERSION:
        raise BadInputError(
            f"ledger {path} has schema version {version}, newer than this campaign "
            f"(knows {SCHEMA_VERSION}): upgrade campaign"
        )
    return version


def check_ledger_file(path: Path) -> None:
    """A ledger file opened for reading only: an existing, non-empty regular file, else one line."""
    try:
        found, regular = path.exists(), path.is_file()
    except OSError as exc:  # a name past 255 bytes
        raise LedgerError(f"ledger path {one_line(str(path), 120)}: {exc.strerror}") from None
    if not regular:
        raise LedgerError(f"ledger {path} is not a file" if found else f"ledger {path} does not exist")
    if path.stat().st_size == 0:
        raise LedgerError(f"ledger {path} is an empty file, not a campaign ledger")


class Ledger:
    """An open ledger: engine + session factory, schema checked (and older
    schemas upgraded, after a backup).

    `notes` holds one-line messages for the user about what opening did (an
    upgrade and its backup); the CLI prints them on stderr.

    `read_only` (an SQLite file only): opened with SQLite's mode=ro, so nothing can write it; an
    empty file, a file that is not a ledger, or a schema other than this version's is refused
    with one line (`campaign compare`'s `ledger=`: campaign.commands.compare upgrades a copy of an older one)."""

    def __init__(self, path: Path | str, *, create: bool = True, read_only: bool = False) -> None:
        self.notes: list[str] = []
        self.read_only = read_only
        self.url = ledger_url(path)
        if read_only and self.url is not None:
            raise LedgerError(f"ledger {_mask(self.url)}: only an SQLite file can be opened read-only")
        if read_only:
            self._open_read_only(_sqlite_file(path))
        elif self.url is not None:
            self._open_url(self.url)
        else:
            self._open_file(_sqlite_file(path), create)
        # Plain sessions read through `reader` (deferred BEGIN, no write lock);
        # session.begin() writes through `engine` (BEGIN IMMEDIATE / the lock).
        self.reader = self.engine.execution_options(**{READ_OPTION: True})
        self.session: sessionmaker[Session] = sessionmaker(
            self.reader, class_=LedgerSession, expire_on_commit=False, info={"ledger_write_bind": self.engine}
        )
        self._check_or_create()

    # -- opening ---------------------------------------------------------------
    def _open_file(self, path: Path, create: bool) -> None:
        self.path = path
        self.location = str(path)
        try:
            found = self.path.exists()
        except OSError as exc:  # a name past 255 bytes, a folder part that is a file
            raise LedgerError(f"ledger path {one_line(str(self.path), 120)}: {exc.strerror}") from None
        if not found:
            if not create:
                raise LedgerError(f"ledger {self.path} does not exist; run `campaign submit` first or pass --ledger")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a part of the folder is a file, or is not ours to write
                folder_is_file = isinstance(exc, FileExistsError | NotADirectoryError)
                why = "a part of its path is a file" if folder_is_file else exc.strerror
                raise LedgerError(f"ledger {self.path}: cannot make its folder: {why}") from None
        elif self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a folder, not a file")
        elif not self.path.is_file():  # SQLite would write its journal beside a device (/dev/null-journal)
            raise LedgerError(f"ledger path {self.path} is not a regular file (a device, FIFO or socket)")
        journal_mode()  # a bad CAMPAIGN_JOURNAL_MODE is one clear error, before any connection
        # URL.create keeps the path literal: in an f-string URL "led?mode=ro.sqlite" becomes a query
        # and "a%41b.sqlite" is decoded to another file.
        self.engine: Engine = create_engine(URL.create("sqlite", database=str(self.path)))
        event.listen(self.engine, "connect", on_connect)
        event.listen(self.engine, "begin", on_begin)

    def _open_read_only(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        check_ledger_file(path)
        uri = f"{path.resolve().as_uri()}?mode=ro"  # as_uri escapes ?, # and % in the name
        self.engine = create_engine(
            "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False)
        )
        event.listen(self.engine, "connect", on_connect_read_only)
        event.listen(self.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))

    def _open_url(self, url: str) -> None:
        self.location = _mask(url)
        # Job folders default to `<ledger's folder>/runs`; a database has no
        # folder, so they go under the current directory (set campaign.workdir
        # to a shared filesystem for a team ledger).
        self.path = Path.cwd() / "ledger"
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError) as exc:  # ValueError: a port that is not a number
            raise LedgerError(f"ledger URL {self.location} is not a database URL: {exc}") from None
        if not parsed.drivername.startswith("postgresql"):
            raise LedgerError(
                f"ledger URL {self.location}: only postgresql+psycopg:// URLs (or an SQLite file path) are supported"
            )
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        try:
            self.engine = create_engine(
                parsed,
                isolation_level="READ COMMITTED",
                pool_pre_ping=True,
                connect_args={"options": f"-c timezone=UTC -c lock_timeout={BUSY_TIMEOUT_MS}", "connect_timeout": 15},
            )
        except ImportError as exc:
            raise LedgerError(
                f"ledger URL {self.location} needs the PostgreSQL driver: pip install 'psycopg[binary]' ({exc})"
            ) from None
        event.listen(self.engine, "begin", on_begin_pg)

    # -- version ---------------------------------------------------------------
    def _check_or_create(self) -> None:
        if self.read_only:
            try:
                with self.reader.connect() as conn:
                    version = self._version_or_create(conn)
            except (DatabaseError, OperationalError) as exc:
                raise self._open_error(exc) from None
            if version != SCHEMA_VERSION:
                raise LedgerError(
                    f"ledger {self.location} has schema version {version}; opened read-only, it is "
                    f"not upgraded (this campaign reads version {SCHEMA_VERSION})"
                )
            return
        try:
            with self.engine.connect() as conn:  # BEGIN IMMEDIATE / the ledger lock: one opener at a time
                version = self._version_or_create(conn)
                conn.commit()
        except (DatabaseError, OperationalError) as exc:
            raise self._open_error(exc) from None
        if version < SCHEMA_VERSION:
            self._upgrade(version)

    def _open_error(self, exc: DatabaseError) -> CampaignError:
        full = (
            None
            if self.url is not None
            else sqlite_storage(
                getattr(exc, "orig", exc), self.path, self.path.stat().st_size if self.path.is_file() else None
            )
        )
        if full is not None:  # a full disk or read-only filesystem: the machine's, not the user's input
            return full
        msg = " ".join(str(getattr(exc, "orig", exc)).split())
        if msg == "database is locked":  # held by another process through the whole busy timeout
            return LedgerError(locked_text(self.location))
        if self.url is None and ("not a database" in msg or "encrypted" in msg):
            return LedgerError(f"{self.path} is not a campaign ledger (not an SQLite database): {msg}")
        return LedgerError(f"cannot open ledger {self.location}: {msg}")

    def _version_or_create(self, conn: Connection) -> int:
        """The schema version (creating the schema in an empty database)."""
        tables = set(inspect(conn).get_table_names())
        if not tables and self.read_only:
            raise LedgerError(f"ledger {self.location} is an empty database, not a campaign ledger")
        if not tables:
            Base.metadata.create_all(conn)
            conn.execute(insert(Meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            from campaign.ledger import migrate  # lazy: Alembic only for an upgrade

            migrate.stamp(conn, SCHEMA_VERSION)
            return SCHEMA_VERSION
        if "meta" not in tables:
            kind = "an SQLite database" if self.url is None else "a database"
            raise LedgerError(f"{self.location} is {kind} but not a campaign ledger (no meta table)")
        value = conn.scalar(select(Meta.value).where(Meta.key == "schema_version"))
        version = schema_number(value)
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.location} has schema version {version}, newer than this campaign "
                f"(knows {SCHEMA_VERSION}): upgrade campaign"
            )
        if version < 1:
            raise LedgerError(
                f"ledger {self.location} has no valid schema version ({value!r}); it was not written by campaign"
            )
        return version

    def _upgrade(self, seen: int) -> None:
        """Back up, then migrate in one transaction. Another process may have
        upgraded since `seen` was read: the version is read again under the lock."""
        from campaign.ledger import migrate  # lazy, as above

        try:
            with self.engine.connect() as conn:
                raw: Any = conn.connection.dbapi_connection
                if self.url is None:
                    # Batch migrations rebuild tables; foreign keys must be off
                    # for that, and SQLite ignores the pragma inside a transaction.
                    raw.execute("PRAGMA foreign_keys = OFF")
                try:
                    version = self._version_or_create(conn)
                    if version >= SCHEMA_VERSION:
                        conn.commit()
                        return
                    backup = None
                    if self.url is None:
                        mode = str(conn.exec_driver_sql("PRAGMA journal_mode").scalar())
                        backup = migrate.backup_sqlite(self.path, version, mode)
                    migrate.upgrade(conn, version, SCHEMA_VERSION, self.results_root)
                    if self.url is None:
                        bad = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                        if bad:
                            raise LedgerError(
                                f"upgrade of ledger {self.location} would break foreign keys "
                                f"({len(bad)} row(s)); it was left unchanged"
                            )
                    conn.commit()
                finally:
                    if conn.in_transaction():
                        conn.rollback()
                    if self.url is None:  # before the connection goes back to the pool
                        raw.execute("PRAGMA foreign_keys = ON")
        except (DatabaseError, OperationalError) as exc:
            raise self._open_error(exc) from None
        except CampaignError:  # a broken foreign key, a full disk under the backup: said as it is
            raise
        except Exception as exc:  # a failed migration: its transaction was rolled back
            raise LedgerError(
                f"upgrade of ledger {self.location} from schema version {seen} failed and was rolled "
                f"back, the ledger is unchanged: {type(exc).__name__}: {exc}"
            ) from exc
        where = f"; backup: {backup}" if backup else " (in one transaction; back up with pg_dump beforehand)"
        self.notes.append(f"ledger {self.location} upgraded from schema version {version} to {SCHEMA_VERSION}{where}")

    @property
    def results_root(self) -> Path | None:
        """Beside an SQLite ledger, the stand-in for campaign folders not on this machine (`results_root`)."""
        return None if self.url is not None else results_root(self.path)

    def close(self) -> None:
        self.engine.dispose()
