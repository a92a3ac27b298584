"""`jobs --no-sync` on an SQLite ledger through the standard library's sqlite3.

Why: the command only reads a few columns, yet SQLAlchemy's import alone
(~0.25 s on the 2-core dev VM, more under load) is most of the 0.3 s a
command that does not sync may take (issue 28; BENCHMARKS.md section 6).

The rule that keeps it honest: this reader answers only for a ledger file of
the schema version it was written for, read-only, and returns None for
anything else (a URL, another version, an unknown campaign or state, any
sqlite3 error), so the caller takes the ORM path, which owns every error
message, lock and migration. tests/cli/test_ledger_read.py compares its rows
with campaign.cli.views.job_rows on a real ledger, and checks that the
version and the default ledger path agree with campaign.ledger's.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from campaign.states import FAILED_STATES, JobState

SCHEMA_VERSION = 11  # campaign.ledger.models.SCHEMA_VERSION this SQL was written for
BUSY_TIMEOUT_S = 60.0  # campaign.ledger.db.BUSY_TIMEOUT_MS: wait for a writer rather than fail
JOB_COLUMNS = ["job_id", "campaign", "kernel", "impl", "variant", "partition", "threads", "dtype", "attempt", "state",
               "node", "reason"]
_SELECT = ("SELECT a.job_id, c.name, r.kernel, r.impl, r.variant, r.partition, r.threads, r.dtype, a.attempt, "
           "a.state, a.node, a.reason FROM job_attempt a JOIN run r ON r.id = a.run_id "
           "JOIN campaign c ON c.id = r.campaign_id")


def ledger_file(ledger: Path | None) -> Path | None:
    """The SQLite file `--ledger`/$CAMPAIGN_LEDGER/the default names, or None
    when it is a URL or anything but a plain path (the ORM path decides)."""
    if ledger is None:
        env = os.environ.get("CAMPAIGN_LEDGER")
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        ledger = Path(env) if env else Path(data) / "campaign" / "ledger.sqlite"
    return None if ":" in str(ledger) else ledger


def job_rows(ledger: Path | None, campaign: str | None, state: str | None, *,
             all_attempts: bool, failed: bool = False) -> list[list[Any]] | None:
    """What views.job_rows returns, or None: take the ORM path."""
    path = ledger_file(ledger)
    if path is None or not path.is_file():
        return None
    try:
        wanted = [JobState(state.upper()).name] if state else []
    except ValueError:
        return None
    if failed:
        wanted += [st.name for st in FAILED_STATES]
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except (sqlite3.Error, ValueError):
        return None
    try:
        with con:  # one read transaction: a consistent snapshot
            version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version is None or version[0] != str(SCHEMA_VERSION):
                return None
            camp_id = None
            if campaign is not None:
                found = con.execute("SELECT id FROM campaign WHERE name = ?", (campaign,)).fetchone()
                if found is None:
                    return None  # the ORM path's error names the close campaigns
                camp_id = found[0]
            sql, params = _statement(camp_id, wanted, latest=not all_attempts)
            rows = con.execute(sql, params).fetchall()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return [[*row[:9], JobState[row[9]].value, *row[10:]] for row in rows]


def _statement(camp_id: int | None, states: list[str], *, latest: bool) -> tuple[str, list[Any]]:
    """campaign.ledger.queries.attempt_columns in SQL: the newest attempt of each run (latest) or all."""
    sql = _SELECT
    params: list[Any] = []
    if latest:
        inner = "SELECT run_id, max(attempt) AS a FROM job_attempt"
        if camp_id is not None:
            inner += " WHERE run_id IN (SELECT id FROM run WHERE campaign_id = ?)"
            params.append(camp_id)
        sql += f" JOIN ({inner} GROUP BY run_id) n ON a.run_id = n.run_id AND a.attempt = n.a"
    where = []
    if camp_id is not None:
        where.append("r.campaign_id = ?")
        params.append(camp_id)
    if states:
        where.append(f"a.state IN ({', '.join('?' * len(states))})")
        params += states
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY a.id", params
