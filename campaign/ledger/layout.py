"""What a ledger is on disk, in the standard library only: its schema
version, where it lives by default, how long to wait for a writer, and the
SQL of the `jobs` listing with the one shaping of its rows (`listing_row`,
which applies campaign.job.element_type's rule, itself standard library
only).

Why one module: the ORM side (campaign.ledger.db, models, campaign.cli.views)
and the standard library's read path (campaign.ledger.sqlite_read, which
answers `jobs --no-sync` and `show --no-sync` without importing SQLAlchemy:
every command that does not sync within 0.3 s) must agree on these facts, so
they are written once, here, where importing them costs nothing.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.job.element_type import untyped
from campaign.job.problem_size import DRIVER
from campaign.planning.run_label import params_text
from campaign.plumbing.states import JobState

# v1 had no campaign.python; v3..v7: one per change of that round (v7: build_step and preflight_step);
# v8: compare; v9: claim heartbeat; v10: ordered natural keys; v11: result blocks;
# v12: result files; v13: imported rows in files too, the row store dropped; v14: the machine's
# state per attempt; v15: the index of runs by configuration; v16: the submit that named a run last
# (see migrations/versions)
SCHEMA_VERSION = 16
LEDGER_ENV = "CAMPAIGN_LEDGER"
BUSY_TIMEOUT_MS = 60_000  # wait this long for a writer's lock rather than fail


def locked_text(location: object) -> str:
    """The one line for a ledger whose lock another process held through the whole busy timeout."""
    return (
        f"cannot open ledger {location}: database is locked (another process held it for "
        f"{BUSY_TIMEOUT_MS / 1000:g} s); run the command again once that one is done"
    )


# The `jobs`/`status` listing: its columns, in order (`listing_row` shapes a row of jobs_statement into them).
# What tells runs of one kernel apart, as their label (campaign.planning.run_label) reads it: threads, cores
# per rank (`cpus`), GPUs per node, nodes, ranks in all, GPUs per rank, the grid values (`params`, spelt as
# the result rows spell them) and the replicate; `dtype` null for a program without one.
JOB_COLUMNS = [
    "job_id",
    "campaign",
    "kernel",
    "impl",
    "variant",
    "partition",
    "threads",
    "dtype",
    "cpus",
    "gpus",
    "nodes",
    "ranks",
    "gpus_per_rank",
    "params",
    "replicate",
    "attempt",
    "state",
    "node",
    "reason",
]


def _spec(path: str, dialect: str) -> str:
    """One field of the run's spec (a JSON path of keys and indices, `argv.3`) as SQL of the dialect:
    SQLite's json_extract, PostgreSQL's operators on its JSON column (text at the last step)."""
    steps = path.split(".")
    if dialect == "postgresql":
        ops = [f"{'->>' if i == len(steps) - 1 else '->'} {s if s.isdigit() else repr(s)}" for i, s in enumerate(steps)]
        return f"(r.spec {' '.join(ops)})"
    return "json_extract(r.spec, '$" + "".join(f"[{s}]" if s.isdigit() else f".{s}" for s in steps) + "')"


def _int(path: str, dialect: str, neutral: str) -> str:
    """An integer field of the spec, its neutral value where an older spec lacks it."""
    return f"coalesce(CAST({_spec(path, dialect)} AS INTEGER), {neutral})"


def _job_select(dialect: str) -> str:
    nodes = _int("nodes", dialect, "1")
    return (
        "SELECT a.job_id, c.name, r.kernel, r.impl, r.variant, r.partition, r.threads, r.dtype, "
        f"coalesce(nullif(CAST({_spec('cpus', dialect)} AS INTEGER), 0), r.threads), r.gpus, {nodes}, "
        f"{nodes} * {_int('ranks_per_node', dialect, '1')}, {_int('gpus_per_rank', dialect, '0')}, "
        f"{_spec('extra_args', dialect)}, {_int('replicate', dialect, '0')}, "
        f"CASE WHEN {_spec('argv.2', dialect)} = '{DRIVER}' THEN {_spec('argv.3', dialect)} END, "
        "a.attempt, a.state, a.node, a.reason FROM job_attempt a JOIN run r ON r.id = a.run_id "
        "JOIN campaign c ON c.id = r.campaign_id"
    )


def default_ledger_path() -> Path:
    """`$CAMPAIGN_LEDGER`, else `$XDG_DATA_HOME/campaign/ledger.sqlite`
    (`~/.local/share/campaign/ledger.sqlite`). `$CAMPAIGN_LEDGER` may be a URL;
    Ledger() accepts the Path this makes of it."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "campaign" / "ledger.sqlite"


def jobs_statement(
    campaign_id: int | None, states: list[str], *, latest: bool, page: int | None = None, dialect: str = "sqlite"
) -> tuple[str, dict[str, Any]]:
    """The SQL of the listing and its named parameters (`:name`, which both
    sqlite3 and SQLAlchemy's text() bind): the newest attempt of each run
    (latest: no later attempt of its run, found through the run's attempt
    index) or every attempt, of one campaign or all, of the given state
    names or any, in attempt order. With `page`: at most that many rows
    after the attempt id `:after` (the caller binds it), the last column the
    attempt's id, so that a listing is read a page at a time, each page one
    short statement (a reader never holds the file's lock while a pipe waits). `dialect`: the
    ledger's (SQLAlchemy's name, `sqlite` or `postgresql`), for the fields of the run's spec."""
    sql = _job_select(dialect)
    if page is not None:
        sql = sql.replace(" FROM job_attempt ", ", a.id FROM job_attempt ", 1)
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


_STATE_VALUES = {state.name: state.value for state in JobState}  # as stored (JobState's names) -> as listed


def listing_row(row: Sequence[Any]) -> list[Any]:
    """A row of jobs_statement as JOB_COLUMNS (the attempt id of a page left out): the dtype of a
    program without one None, the grid values as text, the state by its value. Cheap per row: the
    two look-ups are cached (a listing's runs share a few specs and grids)."""
    driver = row[15]
    return [
        *row[:7],
        None if driver is not None and untyped(driver) else row[7],
        *row[8:13],
        _params(row[13]),
        row[14],
        row[16],
        _STATE_VALUES[row[17]],
        row[18],
        row[19],
    ]


@functools.lru_cache(maxsize=65536)
def _params(extra_args: str | None) -> str:
    """A spec's extra_args (its JSON text; SQL NULL or 'null' where it has none) as the result rows'
    `params` text."""
    return params_text(json.loads(extra_args) if extra_args is not None else None)
