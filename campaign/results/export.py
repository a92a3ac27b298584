"""Result rows out of the ledger, as a DataFrame (export, report, advice).

Read column-wise through one SQL statement, not as ORM objects: a year of
campaigns is tens of millions of rows (bench/bench_scale.py). The JSON
`extra` column is decoded only when the caller wants every extra column;
the analysis needs just `params` (part of a configuration's identity), which
the database extracts itself.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, String, func, or_, select, type_coerce
from sqlalchemy.orm import Session

from campaign.ledger import Campaign, JobAttempt, Ledger, Provenance, ResultRow, Run
from campaign.states import JobState

EXPORT_COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
                  "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err"]
_CHUNK = 200_000  # rows fetched at a time
# Rows of these attempts are measurements too: the finished n of a job stopped
# by its walltime, a cancel or its memory limit (campaign.partial).
PARTIAL_USABLE = (JobState.TIMEOUT, JobState.CANCELLED, JobState.OUT_OF_MEMORY)


@dataclass(frozen=True)
class RowFilter:
    """Selections beyond campaign and cluster (`campaign compare`): `since` /
    `until` by the job's start time (naive, as the ledger stores it; until is
    exclusive), which imported rows do not have, so a date range leaves them
    out; `commit`: jobs submitted from a git commit starting with it."""

    since: datetime | None = None
    until: datetime | None = None
    commit: str | None = None


def _statement(campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool, all_extras: bool,
               where: RowFilter | None = None) -> Any:
    cols: list[Any] = [getattr(ResultRow, c) for c in EXPORT_COLUMNS]
    cols += [ResultRow.source, Campaign.name.label("campaign"), type_coerce(JobAttempt.state, String).label("state"),
             JobAttempt.alloc_cpus.label("alloc_cpus"),  # cores the job was given: oversubscription is judged by it
             JobAttempt.overlap]  # timed while another timed job ran (campaign.overlap)
    if all_extras:
        cols.append(type_coerce(ResultRow.extra, String).label("_extra"))
    else:
        cols.append(ResultRow.extra["params"].as_string().label("params"))
    stmt = (select(*cols).outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
            .outerjoin(Run, Run.id == JobAttempt.run_id)
            # a job row's campaign is its run's; an imported row's the one it was imported into
            .outerjoin(Campaign, Campaign.id == func.coalesce(Run.campaign_id, ResultRow.campaign_id)))
    if campaign:
        stmt = stmt.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    if cluster:
        stmt = stmt.where(ResultRow.cluster == cluster)
    if where is not None and where.since is not None:
        stmt = stmt.where(JobAttempt.started_at >= where.since)
    if where is not None and where.until is not None:
        stmt = stmt.where(JobAttempt.started_at < where.until)
    if where is not None and where.commit is not None:
        made = select(Provenance.id).where(Provenance.git_commit.startswith(where.commit, autoescape=True))
        stmt = stmt.where(JobAttempt.provenance_id.in_(made))
    if usable_only:  # rows of CHECK_FAILED / LOST_OUTPUT attempts are not measurements to analyse
        # (PROFILE_FAILED ones are: only their counters are missing)
        usable = [state for state in JobState if state.usable] + list(PARTIAL_USABLE)
        stmt = stmt.where(or_(ResultRow.attempt_id.is_(None), JobAttempt.state.in_(usable)))
    return stmt.order_by(ResultRow.id)


def results_frame(led: Ledger, *, campaign: str | Sequence[str] | None = None, cluster: str | None = None,
                  usable_only: bool = False, all_extras: bool = True, where: RowFilter | None = None) -> Any:
    """Result rows as a DataFrame: the export columns, `source`, `campaign`
    (the job's campaign, or the one rows were imported into with `import
    --campaign`; empty for other imported rows), the attempt's `state`,
    `params` and, with `all_extras`, every extra column a kernel wrote
    (flattened). `where`: see RowFilter."""
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

    stmt = _statement(campaign, cluster, usable_only, all_extras, where)
    chunks = []
    with led.session() as s, _shared_texts(s):
        keys, fetch = _rows(s, stmt)
        while batch := fetch(_CHUNK):
            chunks.append(pd.DataFrame.from_records(batch, columns=keys))
    frame = pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(columns=keys)
    if all_extras:
        texts = frame.pop("_extra")
        present = texts.notna() & (texts != "null")  # no extras may be stored as JSON null
        if present.any():
            # text on SQLite; psycopg hands PostgreSQL's json over already decoded
            decoded = pd.DataFrame.from_records([(json.loads(t) if isinstance(t, str) else t) or {}
                                                 for t in texts[present]],
                                                index=texts.index[present])
            for col in decoded.columns:
                if col not in frame.columns:
                    frame[col] = decoded[col]
                elif col == "params":
                    frame[col] = frame[col].where(frame[col].notna(), decoded[col])
    # Runs that differ only in extra program arguments are different
    # configurations: `params` is part of the analysis group key ("" = none).
    frame["params"] = frame["params"].fillna("").astype(str) if "params" in frame else ""
    for col in ("campaign", "state"):
        frame[col] = frame[col].fillna("")
    if frame["alloc_cpus"].isna().all():  # no allocation recorded (local backend, imports, older ledgers)
        frame = frame.drop(columns="alloc_cpus")
    return frame


Fetch = Callable[[int], Sequence[tuple[Any, ...]]]


@contextmanager
def _shared_texts(s: Session) -> Iterator[None]:
    """On SQLite, one str object per distinct text while the rows are read: the driver otherwise
    makes a new one per cell, and a million rows repeat a few cluster, kernel or state names
    ten times over. The values are the same; the frame takes half the memory (1.4 -> 0.75 GB
    per million rows) and grouping by these columns hashes each text once. Restored after."""
    driver = getattr(s.connection().connection, "driver_connection", None)
    if not isinstance(driver, sqlite3.Connection):
        yield
        return
    memo: dict[bytes, str] = {}

    def shared(raw: bytes) -> str:
        text = memo.get(raw)
        if text is None:
            text = memo[raw] = raw.decode()
        return text

    before = driver.text_factory
    driver.text_factory = shared
    try:
        yield
    finally:
        driver.text_factory = before


def _rows(s: Session, stmt: Any) -> tuple[list[str], Fetch]:
    """The statement's column names and a `fetchmany` of plain tuples."""
    result = s.connection().execute(stmt)
    fetch = raw_fetch(result)
    if fetch is None:  # plain tuples: a Row has attributes (one is "dtype") that pandas would misread
        return list(result.keys()), lambda size: [tuple(r) for r in result.fetchmany(size)]
    return list(result.keys()), fetch


def raw_fetch(result: CursorResult[Any]) -> Fetch | None:
    """`fetchmany` of the driver's own rows, or None where SQLAlchemy would
    change them (a result processor, a tuple filter). Here it changes nothing:
    every column is a str, int or float the driver already returns as such,
    and building a Row per result row, then a tuple of it, was ~70% of the
    read (issue 18). The fetch strategy still serves rows it buffered."""
    meta, strategy = getattr(result, "_metadata", None), getattr(result, "cursor_strategy", None)
    processors = getattr(meta, "_processors", None)
    if (strategy is None or processors is None or any(p is not None for p in processors)
            or getattr(meta, "_tuplefilter", None) is not None):
        return None
    return lambda size: strategy.fetchmany(result, result.cursor, size)  # type: ignore[no-any-return]


def frame_records(frame: Any) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out
