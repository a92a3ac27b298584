"""Result rows out of the ledger, as a DataFrame (export, report, advice)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select

from campaign.ledger import Campaign, JobAttempt, Ledger, Provenance, ResultRow, Run
from campaign.states import JobState

EXPORT_COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
                  "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err"]


def results_frame(led: Ledger, *, campaign: str | None = None, cluster: str | None = None,
                  usable_only: bool = False, since: datetime | None = None,
                  until: datetime | None = None, commit: str | None = None) -> Any:
    """All result rows as a DataFrame (extra columns flattened). With
    `usable_only`, rows of CHECK_FAILED / LOST_OUTPUT attempts are left out.
    A campaign's rows are its jobs' rows and the rows imported into it
    (`import --campaign`). `since`/`until` select by the job's start time
    (naive, as the ledger stores it; until is exclusive), which imported rows
    do not have: a date range leaves them out. `commit` keeps the rows of jobs
    submitted from a git commit starting with it (their provenance record)."""
    import pandas as pd

    stmt = (select(ResultRow, JobAttempt.state)
            .outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
            .outerjoin(Run, Run.id == JobAttempt.run_id))
    if campaign:
        cid = select(Campaign.id).where(Campaign.name == campaign).scalar_subquery()
        stmt = stmt.where(or_(Run.campaign_id == cid, ResultRow.campaign_id == cid))
    if cluster:
        stmt = stmt.where(ResultRow.cluster == cluster)
    if since is not None:
        stmt = stmt.where(JobAttempt.started_at >= since)
    if until is not None:
        stmt = stmt.where(JobAttempt.started_at < until)
    if commit is not None:
        made = select(Provenance.id).where(Provenance.git_commit.startswith(commit, autoescape=True))
        stmt = stmt.where(JobAttempt.provenance_id.in_(made))
    records = []
    with led.session() as s:
        for row, state in s.execute(stmt):
            if usable_only and state is not None and state is not JobState.COMPLETED:
                continue
            rec = {c: getattr(row, c) for c in EXPORT_COLUMNS}
            rec["source"] = row.source
            if row.extra:
                for k, v in row.extra.items():
                    rec.setdefault(k, v)
            records.append(rec)
    frame = pd.DataFrame.from_records(records, columns=None if records else EXPORT_COLUMNS + ["source"])
    # Runs that differ only in extra program arguments are different
    # configurations: `params` is part of the analysis group key ("" = none).
    frame["params"] = frame["params"].fillna("").astype(str) if "params" in frame else ""
    return frame


def frame_records(frame: Any) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out
