"""The read of the result files: the pointers the filters select (in the
ledger), their files checked against their hashes, the rows through DuckDB
(campaign.ledger.files.read), each row given its attempt's ledger values.

The frame has the columns of the general read of imported rows
(campaign.results.query.statement), so that both stack into one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import String, or_, select, type_coerce
from sqlalchemy.orm import Session

from campaign.ledger import Campaign, JobAttempt, ResultFile, files
from campaign.results.query import EXPORT_COLUMNS, PARTIAL_USABLE, RowFilter, attempt_filter
from campaign.states import JobState

# what the ledger adds to each row: its campaign's name and its attempt's facts
_LEDGER = ("campaign", "state", "alloc_cpus", "overlap", "attempt")


def pointers(s: Session, campaign: str | Sequence[str] | None, usable_only: bool, where: RowFilter | None,
             root: Path | None) -> tuple[list[tuple[Path, str]], list[tuple[Any, ...]]]:
    """The selected files (path, recorded hash), oldest first, and the
    ledger's values (_LEDGER) of each."""
    stmt = (select(ResultFile.path, ResultFile.sha256, ResultFile.campaign_id, Campaign.workdir, Campaign.name,
                   type_coerce(JobAttempt.state, String), JobAttempt.alloc_cpus, JobAttempt.overlap,
                   JobAttempt.attempt)
            .join(JobAttempt, JobAttempt.id == ResultFile.attempt_id)
            .join(Campaign, Campaign.id == ResultFile.campaign_id)
            .order_by(ResultFile.id))
    if campaign:
        stmt = stmt.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    stmt = attempt_filter(stmt, where)
    if where is not None and where.without_runs is not None:
        stmt = stmt.where(or_(JobAttempt.run_id.is_(None), JobAttempt.run_id.not_in(select(where.without_runs.c.run_id))))
    if usable_only:
        stmt = stmt.where(JobAttempt.state.in_([state for state in JobState if state.usable] + list(PARTIAL_USABLE)))
    paths, values = [], []
    for path, digest, campaign_id, workdir, *ledger in s.execute(stmt):
        paths.append((files.campaign_folder(root, campaign_id, workdir) / path, digest))
        values.append(tuple(ledger))
    return paths, values


def frame(s: Session, campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool,
          all_extras: bool, where: RowFilter | None, root: Path | None, attempt: bool = False) -> Any:
    """The selected files' rows as a DataFrame: EXPORT_COLUMNS, source, the
    ledger's columns (the attempt's number too with `attempt`), then `_extra`
    (the JSON text) or `params`."""
    import numpy as np
    import pandas as pd

    paths, values = pointers(s, campaign, usable_only, where, root)
    last = "extra" if all_extras else "params"
    columns = [*EXPORT_COLUMNS, "source", last]
    ledger = _LEDGER if attempt else _LEDGER[:-1]
    names = [*EXPORT_COLUMNS, "source", *ledger, "_extra" if all_extras else "params"]
    if not paths:
        return pd.DataFrame(columns=names)
    table = files.read(files.verified(paths), columns, cluster)
    index = table.column("file_index").to_numpy().astype(np.int64)
    out: dict[str, Any] = {}
    for name in columns:
        if name in table.column_names:
            out[name] = table.column(name).to_pandas(types_mapper={}.get)
        else:
            out[name] = pd.Series([None] * table.num_rows, dtype=object)
    for i, name in enumerate(ledger):
        column = np.empty(len(values), dtype=object)
        column[:] = [v[i] for v in values]
        out[name] = pd.Series(column[index] if len(index) else column[:0], dtype=object)
    frame_ = pd.DataFrame({k: (v.to_numpy(dtype=object) if v.dtype.kind in "OTU" or str(v.dtype) in ("str", "string")
                               else v.to_numpy()) for k, v in out.items()})
    frame_ = frame_.rename(columns={"extra": "_extra"})
    return frame_[names]
