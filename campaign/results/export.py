"""Result rows out of the ledger, as a DataFrame (export, report, advice)."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select

from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.states import JobState

EXPORT_COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
                  "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err"]


def results_frame(led: Ledger, *, campaign: str | None = None, cluster: str | None = None,
                  usable_only: bool = False) -> Any:
    """All result rows as a DataFrame (extra columns flattened). With
    `usable_only`, rows of CHECK_FAILED / LOST_OUTPUT attempts are left out."""
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

    stmt = select(ResultRow, JobAttempt.state).outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
    if campaign:
        stmt = stmt.join(Run, Run.id == JobAttempt.run_id).join(Campaign).where(Campaign.name == campaign)
    if cluster:
        stmt = stmt.where(ResultRow.cluster == cluster)
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
