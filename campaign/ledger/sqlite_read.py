"""`jobs --no-sync` and `show --no-sync` on an SQLite ledger through the
standard library's sqlite3: the ledger's light read path, beside its ORM in
this package (the only place in campaign/ that imports sqlite3).

Why: these commands only read, yet SQLAlchemy's import alone (~0.25 s on the
2-core dev VM, more under load) is most of the 0.3 s a command that does not
sync may take (BENCHMARKS.md section 6). The listing comes a page at a time
(`job_batches`), so `jobs --no-sync | head` prints its first line before the
last of 200,000 jobs is read; each page is one short statement, so a reader
whose pipe waits (`| less`) never holds the file's lock against a sync.

The rule that keeps it honest: this reader answers only for a ledger file of
the schema version it was written for (campaign.ledger.layout, which the ORM
side uses too), read-only, and returns None for anything else (a URL,
another version, an unknown campaign, state or job ID, any sqlite3 error or
value it cannot read but a lock held through the whole busy timeout, which it
says as the ORM path would, rather than make that path wait as long again), so
the caller takes the ORM path, which owns every
error message, lock and migration. tests/cli/test_ledger_read.py compares its
rows and show facts with campaign.cli.views' on real ledgers. Once the first
page is read the listing is committed to this path: a later page that cannot
be read is a LedgerError (the rows before it are out already).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from campaign.ledger.layout import (
    BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    default_ledger_path,
    jobs_statement,
    listing_row,
    locked_text,
)
from campaign.ledger.layout import JOB_COLUMNS as JOB_COLUMNS  # the listing's columns, for the callers
from campaign.plumbing.errors import LedgerError
from campaign.plumbing.states import FAILED_STATES, JobState

if TYPE_CHECKING:  # imported by show_facts: `jobs` does not pay for the dataclasses (start-up time)
    from campaign.ledger.facts import AttemptFacts, JobFacts, StepFacts

T = TypeVar("T")
FIRST_PAGE = 200  # rows of the listing's first page (what `| head` waits for); each next page twice as many
LAST_PAGE = 51_200
_ATTEMPT = (
    "id, attempt, previous_id, job_id, state, reason, scheduler_cluster, array_job_id, array_index, node, "
    "exit_code, walltime_min, mem_gb, alloc_cpus, alloc_gpus, n, missing_n, submitted_at, started_at, "
    "ended_at, workdir, output_path, stdout_path, stderr_path"
)


def ledger_file(ledger: Path | None) -> Path | None:
    """The SQLite file `--ledger`/$CAMPAIGN_LEDGER/the default names, or None
    when it is a URL or anything but a plain path (the ORM path decides)."""
    path = ledger if ledger is not None else default_ledger_path()
    return None if ":" in str(path) else path


def _connect(ledger: Path | None) -> sqlite3.Connection | None:
    """A read-only connection to a ledger file of this schema version, or None (take the ORM path)."""
    path = ledger_file(ledger)
    try:
        if path is None or not path.is_file():
            return None
    except OSError:  # a name past 255 bytes: the ORM path names the problem
        return None
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except (sqlite3.Error, ValueError):
        return None
    try:
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error as exc:
        con.close()
        _refuse_locked(exc, path)
        version = None
    if version is None or version[0] != str(SCHEMA_VERSION):
        con.close()
        return None
    return con


def _refuse_locked(exc: sqlite3.Error, path: Path) -> None:
    """A lock held through the whole busy timeout is said here: the ORM path would wait as long again."""
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_BUSY":
        raise LedgerError(locked_text(path)) from None


def _read(ledger: Path | None, query: Callable[[sqlite3.Connection], T | None]) -> T | None:
    """query(connection) in one read-only transaction of a ledger of this
    schema version, or None (take the ORM path)."""
    con = _connect(ledger)
    if con is None:
        return None
    try:
        with con:  # one read transaction: a consistent snapshot
            return query(con)
    except sqlite3.Error as exc:
        _refuse_locked(exc, Path(str(ledger_file(ledger))))
        return None
    except (ValueError, KeyError, TypeError):  # a value this reader cannot read: the ORM decides
        return None
    finally:
        con.close()


def job_batches(
    ledger: Path | None, campaign: str | None, state: str | None, *, all_attempts: bool, failed: bool = False
) -> Iterator[list[list[Any]]] | None:
    """The rows views.job_rows returns, a page at a time (the first one read
    before this returns), or None: take the ORM path."""
    try:
        wanted = [JobState(state.upper()).name] if state else []
    except ValueError:
        return None
    if failed:
        wanted += [st.name for st in FAILED_STATES if st.name not in wanted]
    con = _connect(ledger)
    if con is None:
        return None
    try:
        camp_id = None
        if campaign is not None:
            found = con.execute("SELECT id FROM campaign WHERE name = ?", (campaign,)).fetchone()
            if found is None:
                con.close()
                return None  # the ORM path's error names the close campaigns
            camp_id = found[0]
        first, after = _page(con, camp_id, wanted, all_attempts, FIRST_PAGE, 0)
    except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        con.close()
        if isinstance(exc, sqlite3.Error):
            _refuse_locked(exc, Path(str(ledger_file(ledger))))
        return None
    return _pages(con, camp_id, wanted, all_attempts, first, after)


def _page(
    con: sqlite3.Connection, camp_id: int | None, wanted: list[str], all_attempts: bool, size: int, after: int
) -> tuple[list[list[Any]], int | None]:
    """One page of the listing and the attempt id it ended at (None: the listing is done)."""
    sql, params = jobs_statement(camp_id, wanted, latest=not all_attempts, page=size)
    rows = con.execute(sql, {**params, "after": after}).fetchall()
    return [listing_row(row) for row in rows], (rows[-1][-1] if len(rows) == size else None)


def _pages(
    con: sqlite3.Connection,
    camp_id: int | None,
    wanted: list[str],
    all_attempts: bool,
    first: list[list[Any]],
    after: int | None,
) -> Iterator[list[list[Any]]]:
    size = FIRST_PAGE
    try:
        yield first
        while after is not None:
            size = min(2 * size, LAST_PAGE)
            page, after = _page(con, camp_id, wanted, all_attempts, size, after)
            yield page
    except (sqlite3.Error, ValueError, KeyError) as exc:
        raise LedgerError(f"the ledger could not be read to the end of the listing: {exc}") from None
    finally:
        con.close()


def job_dicts(rows: list[list[Any]]) -> list[dict[str, Any]]:
    """The listing's rows as JSON objects (`jobs`/`status --format json`)."""
    return [dict(zip(JOB_COLUMNS, r)) for r in rows]


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _time(text: str | None) -> datetime | None:
    """campaign.ledger.types.UTCDateTime as stored in SQLite: naive UTC text."""
    if text is None:
        return None
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _attempt(row: sqlite3.Row) -> AttemptFacts:
    from campaign.ledger.facts import AttemptFacts

    return AttemptFacts(
        id=row["id"],
        attempt=row["attempt"],
        previous_id=row["previous_id"],
        job_id=row["job_id"],
        state=JobState[row["state"]],
        reason=row["reason"],
        scheduler_cluster=row["scheduler_cluster"],
        array_job_id=row["array_job_id"],
        array_index=row["array_index"],
        node=row["node"],
        exit_code=row["exit_code"],
        walltime_min=row["walltime_min"],
        mem_gb=row["mem_gb"],
        alloc_cpus=row["alloc_cpus"],
        alloc_gpus=row["alloc_gpus"],
        n=_json(row["n"]),
        missing_n=_json(row["missing_n"]),
        submitted_at=_time(row["submitted_at"]),
        started_at=_time(row["started_at"]),
        ended_at=_time(row["ended_at"]),
        workdir=row["workdir"],
        output_path=row["output_path"],
        stdout_path=row["stdout_path"],
        stderr_path=row["stderr_path"],
    )


def _step(row: sqlite3.Row, key: str = "", info: dict[str, Any] | None = None) -> StepFacts:
    from campaign.ledger.facts import StepFacts

    return StepFacts(
        job_id=row["job_id"],
        state=JobState[row["state"]],
        reason=row["reason"],
        folder=row["folder"],
        key=key,
        info=info,
    )


def show_facts(ledger: Path | None, job_id: str) -> JobFacts | None:
    """What views.show_facts returns, or None: take the ORM path (an unknown job ID included)."""
    from campaign.ledger.facts import JobFacts

    def query(con: sqlite3.Connection) -> JobFacts | None:
        con.row_factory = sqlite3.Row
        if con.execute(
            "SELECT 1 FROM preflight_step WHERE job_id = ? UNION ALL SELECT 1 FROM build_step WHERE job_id = ?",
            (job_id, job_id),
        ).fetchone():
            return None  # a build or preflight job's ID (its runs may carry it): the ORM path shows the step
        att = con.execute(
            f"SELECT {_ATTEMPT}, run_id, provenance_id FROM job_attempt WHERE job_id = ? ORDER BY id DESC LIMIT 1",
            (job_id,),
        ).fetchone()
        if att is None:
            return None  # the ORM path's error says what to do
        run = con.execute(
            "SELECT r.*, c.name AS campaign_name, c.cluster, c.backend FROM run r "
            "JOIN campaign c ON c.id = r.campaign_id WHERE r.id = ?",
            (att["run_id"],),
        ).fetchone()
        lineage = con.execute(
            f"SELECT {_ATTEMPT} FROM job_attempt WHERE run_id = ? ORDER BY attempt", (att["run_id"],)
        ).fetchall()
        preflight = build = None
        for step in con.execute(
            "SELECT * FROM preflight_step WHERE campaign_id = ? AND partition = ? ORDER BY id DESC",
            (run["campaign_id"], run["partition"]),
        ):
            if att["id"] in _json(step["attempt_ids"]):  # campaign.cli.chain_view.chain_steps
                preflight = _step(step)
                if step["build_id"] is not None:
                    b = con.execute("SELECT * FROM build_step WHERE id = ?", (step["build_id"],)).fetchone()
                    build = None if b is None else _step(b, b["key"], _json(b["info"]))
                break
        # the submit's provenance: a rerun's attempt runs the program of its run's first attempt (views.show_facts)
        env = con.execute(
            "SELECT environment FROM provenance WHERE id = coalesce(?, (SELECT provenance_id FROM "
            "job_attempt WHERE run_id = ? AND attempt = 1))",
            (att["provenance_id"], att["run_id"]),
        ).fetchone()
        return JobFacts(
            attempt=_attempt(att),
            campaign=run["campaign_name"],
            cluster=run["cluster"],
            backend=run["backend"],
            run_key=run["key"],
            kernel=run["kernel"],
            impl=run["impl"],
            variant=run["variant"],
            partition=run["partition"],
            device=run["device"],
            dtype=run["dtype"],
            threads=run["threads"],
            gpus=run["gpus"],
            spec=_json(run["spec"]),
            lineage=[_attempt(a) for a in lineage],
            preflight=preflight,
            build=build,
            environment=None if env is None else _json(env["environment"]),
        )

    return _read(ledger, query)
