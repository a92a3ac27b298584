"""Result rows out of the ledger, as a DataFrame (export, report, advice).

Read column-wise from the result files (campaign.results.scan, through
DuckDB), job and imported rows alike, never as ORM objects: a year of
campaigns is tens of millions of rows. The JSON `extra` column is
decoded only when the caller wants every extra column; the analysis needs
just `params` (part of a configuration's identity), which the read extracts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from campaign.ledger import Ledger
from campaign.results import scan
from campaign.results.latest import Superseded, holder
from campaign.results.latest import find as superseded
from campaign.results.query import EXPORT_COLUMNS, PARTIAL_USABLE, RowFilter, settled_dtypes
from resultschema.columns import OPTIONAL_COLUMNS, SCALE_COLUMNS, SCALE_DEFAULT

__all__ = ["EXPORT_COLUMNS", "PARTIAL_USABLE", "RowFilter", "Superseded", "latest_frame",
           "results_frame"]


def results_frame(led: Ledger, *, campaign: str | Sequence[str] | None = None, cluster: str | None = None,
                  usable_only: bool = False, all_extras: bool = True, where: RowFilter | None = None) -> Any:
    """Result rows as a DataFrame: the export columns, `source`, `campaign`
    (the job's campaign, or the one rows were imported into with `import
    --campaign`; empty for other imported rows), the attempt's `state`,
    `params` and, with `all_extras`, every extra column a kernel wrote
    (flattened). `where`: see RowFilter. Every run, whatever its identity:
    what aggregates reads latest_frame."""
    return _read(led, campaign, cluster, usable_only, all_extras, where, latest=False)[0]


def latest_frame(led: Ledger, *, campaign: str | Sequence[str] | None = None, cluster: str | None = None,
                 usable_only: bool = True, all_extras: bool = False,
                 where: RowFilter | None = None) -> tuple[Any, Superseded]:
    """results_frame without the runs of a superseded identity
    (campaign.results.latest), and what was left out: what every view that
    pools rows (report, compare, advise) reads. An optional column (d, dtype,
    job_id, gpu_model, flops, bytes, rel_err) empty in every row is dropped:
    it is then absent, as in a CSV that never had it, everywhere (once
    an all-NULL dtype of objects met a float one in a merge)."""
    frame, found = _read(led, campaign, cluster, usable_only, all_extras, where, latest=True)
    empty = [c for c in OPTIONAL_COLUMNS if c in frame.columns and frame[c].isna().all()]
    # ranks/nodes of 1 in every row: single-process runs, as before the columns existed; no GPU in any row
    empty += [c for c in SCALE_COLUMNS if (frame[c] == SCALE_DEFAULT).all()]
    empty += [c for c in ("gpus",) if c in frame.columns and not (frame[c].fillna(0) > 0).any()]
    return (frame.drop(columns=empty) if empty else frame), found


def _read(led: Ledger, campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool,
          all_extras: bool, where: RowFilter | None, latest: bool) -> tuple[Any, Superseded]:
    import pandas as pd  # lazy: `jobs`/`status` never build frames (pandas ~0.4 s)

    with led.session() as s:
        found = superseded(s, campaign, usable_only, where) if latest else Superseded()
        table = holder(s, found)
        if table is not None:
            where = replace(where or RowFilter(), without_runs=table)
        try:
            frame = scan.frame(s, campaign, cluster, usable_only, all_extras, where, led.results_root)
        finally:
            if table is not None:
                table.drop(s.connection())
    # a figure no row has is absent, as a key no row's extra object had (gpus: recorded from schema 3 on)
    frame = frame.drop(columns=[c for c in (*scan.FIGURE_COLUMNS, "gpus") if c in frame and frame[c].isna().all()])
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
    # ranks, nodes: the row's (every row of a file of schema 3), else its run's planned shape, else 1 (scan.shape)
    planned = [frame.pop(c).to_numpy() for c in scan.PLANNED_SCALE]
    given = {c: frame[c].to_numpy() for c in SCALE_COLUMNS if c in frame}
    frame = frame.assign(**scan.shape(given, *planned))
    frame = settled_dtypes(frame)
    # replicate 0 is every row of an unreplicated run, and of imported rows that name none (scan.own_facts)
    frame["replicate"] = frame["replicate"].fillna(0).astype("int64")
    if frame["alloc_cpus"].isna().all():  # no allocation recorded (local backend, imports, older ledgers)
        frame = frame.drop(columns="alloc_cpus")
    return frame, found
