"""What selects result rows (export, report, advice, compare): the columns,
the usable states, the date and commit filter (`attempt_filter`, shared by
the read of the result files, campaign.results.scan, and the judgement of
identities, campaign.results.latest, so both select the same attempts), and
the dtypes of the frame read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.ledger import JobAttempt, Provenance
from campaign.ledger.result_schema import MEASURED
from campaign.plumbing.states import PARTIAL_STATES, JobState

EXPORT_COLUMNS = list(MEASURED)  # the stored measured columns (campaign.ledger.result_schema), in file order
# Columns that hold numbers (or nothing): one dtype whichever read made the frame (settled_dtypes)
NUMERIC_COLUMNS = ("threads", "n", "d", "repeat", "time_s", "flops", "bytes", "rel_err", "alloc_cpus", "replicate",
                   "ranks", "nodes", "gpus", "value")
# Rows of these attempts are measurements too (campaign.plumbing.states.PARTIAL_STATES), in one order
PARTIAL_USABLE = tuple(sorted(PARTIAL_STATES, key=lambda st: st.value))
# The states whose rows count in the analysis: usable ones and the partial ones (a job's rows of such an
# attempt, an imported row that names one: campaign.results.scan)
COUNTED_STATES = (*(state for state in JobState if state.usable), *PARTIAL_USABLE)


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
    one definition for the rows read (campaign.results.scan) and the runs whose identity
    is judged (campaign.results.latest), so both select the same attempts."""
    if where is not None and where.since is not None:
        stmt = stmt.where(JobAttempt.started_at >= where.since)
    if where is not None and where.until is not None:
        stmt = stmt.where(JobAttempt.started_at < where.until)
    if where is not None and where.commit is not None:
        made = select(Provenance.id).where(Provenance.git_commit.startswith(where.commit, autoescape=True))
        stmt = stmt.where(JobAttempt.provenance_id.in_(made))
    return stmt


Fetch = Callable[[int], Sequence[tuple[Any, ...]]]


def fetch_rows(s: Session, stmt: Any) -> tuple[list[str], Fetch]:
    """The statement's column names and a `fetchmany` of plain tuples (a Row
    has attributes, one is "dtype", that pandas would misread): the
    identities campaign.results.latest judges, a group at a time."""
    result = s.connection().execute(stmt)
    return list(result.keys()), lambda size: [tuple(r) for r in result.fetchmany(size)]


def settled_dtypes(frame: Any) -> Any:
    """Each column's dtype from its values alone: a chunk of rows whose values
    are all NULL comes out as objects (None), and concatenated with chunks of
    numbers or texts leaves the whole column as objects, depending on where
    the chunks fell. Numbers become numbers, texts (with missing) pandas' str."""
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

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
