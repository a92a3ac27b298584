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
from typing import Any

from sqlalchemy import String, or_, select, type_coerce

from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.states import JobState

EXPORT_COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
                  "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err"]
_CHUNK = 200_000  # rows fetched at a time


def _statement(campaign: str | None, cluster: str | None, usable_only: bool, all_extras: bool) -> Any:
    cols: list[Any] = [getattr(ResultRow, c) for c in EXPORT_COLUMNS]
    cols += [ResultRow.source, Campaign.name.label("campaign"), type_coerce(JobAttempt.state, String).label("state")]
    if all_extras:
        cols.append(type_coerce(ResultRow.extra, String).label("_extra"))
    else:
        cols.append(ResultRow.extra["params"].as_string().label("params"))
    stmt = (select(*cols).outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
            .outerjoin(Run, Run.id == JobAttempt.run_id).outerjoin(Campaign, Campaign.id == Run.campaign_id))
    if campaign:
        stmt = stmt.where(Campaign.name == campaign)
    if cluster:
        stmt = stmt.where(ResultRow.cluster == cluster)
    if usable_only:  # rows of CHECK_FAILED / LOST_OUTPUT attempts are not measurements to analyse
        # (PROFILE_FAILED ones are: only their counters are missing)
        usable = [state for state in JobState if state.usable]
        stmt = stmt.where(or_(ResultRow.attempt_id.is_(None), JobAttempt.state.in_(usable)))
    return stmt.order_by(ResultRow.id)


def results_frame(led: Ledger, *, campaign: str | None = None, cluster: str | None = None,
                  usable_only: bool = False, all_extras: bool = True) -> Any:
    """Result rows as a DataFrame: the export columns, `source`, `campaign`
    (empty for imported rows), the attempt's `state`, `params` and, with
    `all_extras`, every extra column a kernel wrote (flattened)."""
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

    stmt = _statement(campaign, cluster, usable_only, all_extras)
    chunks = []
    with led.session() as s:
        result = s.execute(stmt)
        keys = list(result.keys())
        while batch := result.fetchmany(_CHUNK):
            # plain tuples: a Row has attributes (one is "dtype") that pandas would misread
            chunks.append(pd.DataFrame.from_records([tuple(r) for r in batch], columns=keys))
    frame = pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(columns=keys)
    if all_extras:
        texts = frame.pop("_extra")
        present = texts.notna()
        if present.any():
            decoded = pd.DataFrame.from_records([json.loads(t) for t in texts[present]], index=texts.index[present])
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
    return frame


def frame_records(frame: Any) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out
