"""What a ledger is on disk, in the standard library only: its schema
version, where it lives by default, how long to wait for a writer, and the
SQL of the `jobs` listing.

Why one module: the ORM side (campaign.ledger.db, models, campaign.cli.views)
and the standard library's read path (campaign.ledger.sqlite_read, which
answers `jobs --no-sync` and `show --no-sync` without importing SQLAlchemy:
every command that does not sync within 0.3 s) must agree on these facts, so
they are written once, here, where importing them costs nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# v1 had no campaign.python; v3..v7: one per change of that round (v7: build_step and preflight_step);
# v8: compare; v9: claim heartbeat; v10: ordered natural keys; v11: result blocks;
# v12: result files; v13: imported rows in files too, the row store dropped; v14: the machine's
# state per attempt (see migrations/versions)
SCHEMA_VERSION = 14
LEDGER_ENV = "CAMPAIGN_LEDGER"
BUSY_TIMEOUT_MS = 60_000  # wait this long for a writer's lock rather than fail

# The `jobs`/`status` listing: its columns, in order (state as the JobState's name in the table).
JOB_COLUMNS = ["job_id", "campaign", "kernel", "impl", "variant", "partition", "threads", "dtype", "attempt", "state",
               "node", "reason"]
_JOB_SELECT = ("SELECT a.job_id, c.name, r.kernel, r.impl, r.variant, r.partition, r.threads, r.dtype, a.attempt, "
               "a.state, a.node, a.reason FROM job_attempt a JOIN run r ON r.id = a.run_id "
               "JOIN campaign c ON c.id = r.campaign_id")


def default_ledger_path() -> Path:
    """`$CAMPAIGN_LEDGER`, else `$XDG_DATA_HOME/campaign/ledger.sqlite`
    (`~/.local/share/campaign/ledger.sqlite`). `$CAMPAIGN_LEDGER` may be a URL;
    Ledger() accepts the Path this makes of it."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "campaign" / "ledger.sqlite"


def jobs_statement(campaign_id: int | None, states: list[str], *, latest: bool,
                   page: int | None = None) -> tuple[str, dict[str, Any]]:
    """The SQL of the listing and its named parameters (`:name`, which both
    sqlite3 and SQLAlchemy's text() bind): the newest attempt of each run
    (latest: no later attempt of its run, found through the run's attempt
    index) or every attempt, of one campaign or all, of the given state
    names or any, in attempt order. With `page`: at most that many rows
    after the attempt id `:after` (the caller binds it), the last column the
    attempt's id, so that a listing is read a page at a time, each page one
    short statement (a reader never holds the file's lock while a pipe waits)."""
    sql = _JOB_SELECT.replace(" FROM ", ", a.id FROM ", 1) if page is not None else _JOB_SELECT
    params: dict[str, Any] = {}
    where = []
    if campaign_id is not None:
        params["campaign_id"] = campaign_id
        where.append("r.campaign_id = :campaign_id")
    if latest:
        where.append("NOT EXISTS (SELECT 1 FROM job_attempt b WHERE b.run_id = a.run_id AND b.attempt > a.attempt)")
    if states:
        names = [f"state_{i}" for i in range(len(states))]
        params.update(zip(names, states))
        where.append(f"a.state IN ({', '.join(':' + n for n in names)})")
    if page is not None:
        where.append("a.id > :after")
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY a.id"
    if page is not None:
        sql += f" LIMIT {int(page)}"
    return sql, params
