"""The one SELECT of result rows (export, report, advice, compare) and how it
is fetched: filters by campaign, cluster, usable state, dates and commit, and
plain tuples in chunks.

The date and commit filter (`attempt_filter`) is shared with the read of
the result files (campaign.results.scan), so both select the same attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, func, or_, select, type_coerce
from sqlalchemy.orm import Session

from analysis.columns import SCALE_COLUMNS
from campaign.ledger import Campaign, JobAttempt, Provenance, ResultRow, Run
from campaign.ledger.result_schema import MEASURED
from campaign.plumbing.states import JobState

EXPORT_COLUMNS = list(MEASURED)  # the stored measured columns (campaign.ledger.result_schema), in file order
CHUNK = 200_000  # rows fetched at a time
# Columns that hold numbers (or nothing): one dtype whichever read made the frame (settled_dtypes)
NUMERIC_COLUMNS = ("threads", "n", "d", "repeat", "time_s", "flops", "bytes", "rel_err", "alloc_cpus", "replicate")
# Rows of these attempts are measurements too: the finished n of a job stopped
# by its walltime, a cancel or its memory limit (campaign.results.partial).
PARTIAL_USABLE = (JobState.TIMEOUT, JobState.CANCELLED, JobState.OUT_OF_MEMORY)


@dataclass(frozen=True)
class RowFilter:
    """Selections beyond campaign and cluster (`campaign compare`): `since` /
    `until` by the job's start time (aware UTC, as the ledger stores it: a naive
    one would be compared as UTC; until is exclusive), which imported rows do not
    have, so a date range leaves them out; `commit`: jobs submitted from a git
    commit starting with it; `without_runs`: a table of run ids whose rows are
    left out (campaign.results.latest: superseded identities)."""

    since: datetime | None = None
    until: datetime | None = None
    commit: str | None = None
    without_runs: Any = None  # a sqlalchemy Table with a run_id column


def attempt_filter(stmt: Any, where: RowFilter | None) -> Any:
    """`where`'s dates and commit on a statement that selects from JobAttempt:
    one definition for the rows read (statement) and the runs whose identity
    is judged (campaign.results.latest), so both select the same attempts."""
    if where is not None and where.since is not None:
        stmt = stmt.where(JobAttempt.started_at >= where.since)
    if where is not None and where.until is not None:
        stmt = stmt.where(JobAttempt.started_at < where.until)
    if where is not None and where.commit is not None:
        made = select(Provenance.id).where(Provenance.git_commit.startswith(where.commit, autoescape=True))
        stmt = stmt.where(JobAttempt.provenance_id.in_(made))
    return stmt


def statement(campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool, all_extras: bool,
              where: RowFilter | None = None, imported: bool = False) -> Any:
    """The rows kept in the ledger's `result` table (imported rows; job rows
    of a ledger not yet upgraded to files); `imported`: only rows without an attempt."""
    cols: list[Any] = [getattr(ResultRow, c) for c in EXPORT_COLUMNS]
    cols += [ResultRow.source, Campaign.name.label("campaign"), type_coerce(JobAttempt.state, String).label("state"),
             JobAttempt.alloc_cpus.label("alloc_cpus"),  # cores the job was given: oversubscription is judged by it
             JobAttempt.overlap,  # timed while another timed job ran (campaign.results.overlap)
             # which independent job of its configuration (campaign.planning.replicates); null: imported, or replicate 0
             # of a run planned before replicates (its spec has no such entry)
             Run.spec["replicate"].as_integer().label("replicate"),
             # the shape its run asked Slurm for (campaign.results.scan.PLANNED_SCALE)
             Run.spec["nodes"].as_integer().label("planned_nodes"),
             Run.spec["ranks_per_node"].as_integer().label("planned_ranks_per_node")]
    if all_extras:
        cols.append(type_coerce(ResultRow.extra, String).label("_extra"))
    else:
        cols.append(ResultRow.extra["params"].as_string().label("params"))
        # ranks, nodes (analysis/columns.py SCALE_COLUMNS): one value in a job's rows (campaign.results.expected),
        # so the SQLite read may take them from each attempt's first row as it takes params
        cols += [ResultRow.extra[c].as_string().label(c) for c in SCALE_COLUMNS]
    stmt = (select(*cols).outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
            .outerjoin(Run, Run.id == JobAttempt.run_id)
            # a job row's campaign is its run's; an imported row's the one it was imported into
            .outerjoin(Campaign, Campaign.id == func.coalesce(Run.campaign_id, ResultRow.campaign_id)))
    if campaign:
        stmt = stmt.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    if imported:
        stmt = stmt.where(ResultRow.attempt_id.is_(None))
    if cluster:
        stmt = stmt.where(ResultRow.cluster == cluster)
    stmt = attempt_filter(stmt, where)
    if where is not None and where.without_runs is not None:
        left = select(where.without_runs.c.run_id)
        stmt = stmt.where(or_(JobAttempt.run_id.is_(None), JobAttempt.run_id.not_in(left)))
    if usable_only:  # rows of CHECK_FAILED / LOST_OUTPUT attempts are not measurements to analyse
        # (PROFILE_FAILED ones are: only their counters are missing)
        usable = [state for state in JobState if state.usable] + list(PARTIAL_USABLE)
        stmt = stmt.where(or_(ResultRow.attempt_id.is_(None), JobAttempt.state.in_(usable)))
    return stmt.order_by(ResultRow.id)


Fetch = Callable[[int], Sequence[tuple[Any, ...]]]


def fetch_rows(s: Session, stmt: Any) -> tuple[list[str], Fetch]:
    """The statement's column names and a `fetchmany` of plain tuples (a Row
    has attributes, one is "dtype", that pandas would misread)."""
    result = s.connection().execute(stmt)
    return list(result.keys()), lambda size: [tuple(r) for r in result.fetchmany(size)]


def read_frame(s: Session, stmt: Any, *, objects: bool = False) -> Any:
    """The statement's rows as one DataFrame, fetched CHUNK rows at a time;
    with `objects`, every column of the driver's values as they came (no
    dtype inferred), for a caller that settles dtypes on a subset of them."""
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

    keys, fetch = fetch_rows(s, stmt)
    chunks = []
    while batch := fetch(CHUNK):
        if objects:
            chunks.append(pd.DataFrame({k: pd.Series(c, dtype=object) for k, c in zip(keys, zip(*batch))}))
        else:
            chunks.append(pd.DataFrame.from_records(batch, columns=keys))
    return pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(columns=keys)


def settled_dtypes(frame: Any) -> Any:
    """Each column's dtype from its values alone: a chunk of rows whose values
    are all NULL comes out as objects (None), and concatenated with chunks of
    numbers or texts leaves the whole column as objects, depending on where
    the chunks fell. Numbers become numbers, texts (with missing) pandas' str."""
    import pandas as pd  # lazy, as in read_frame

    for col in frame.columns:
        if frame[col].dtype != object:
            continue
        if col in NUMERIC_COLUMNS:
            settled = frame[col].infer_objects()
            # none recorded (flops, bytes of most kernels): NaN, which the analysis reads without a pass per cell
            frame[col] = settled.astype("float64") if settled.dtype == object and settled.isna().all() else settled
        elif pd.api.types.infer_dtype(frame[col], skipna=True) == "string":
            frame[col] = frame[col].astype("str")
    return frame
