"""The measured points whose rows were timed while the machine was shared
(the results' `overlap` note: another timed job on a local machine,
campaign/results/overlap.py; more busy CPUs than a Slurm node has,
campaign/results/shared_nodes.py). Every view names them: a
median taken from such rows may be an artifact of the sharing, not of the
kernel.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis.metric_frame import strip_metric
from analysis.schema import group_columns

MAX_NOTES = 3


def flagged_rows(results: pd.DataFrame) -> pd.Series:
    """True for rows that carry an overlap note."""
    if "overlap" not in results.columns or not len(results):
        return pd.Series(False, index=results.index)
    text = results["overlap"].astype("string").fillna("").str.strip()
    return text != ""


def overlap_points(results: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per point (group columns, threads, n) with flagged rows:
    `rows_flagged`, `rows` (all the point's rows) and `notes` (up to
    MAX_NOTES distinct notes)."""
    flagged = flagged_rows(results)
    if not flagged.any():
        return []
    keys = [c for c in group_columns(results) if c in results.columns] + ["threads", "n"]
    frame = results[keys].copy()
    if "params" in frame.columns:  # a point is its run's: one record over all of its figures
        frame["params"] = strip_metric(frame["params"]).to_numpy()
    frame["_flag"] = flagged.to_numpy()
    frame["_note"] = results["overlap"].astype("string").fillna("").to_numpy()
    out: list[dict[str, Any]] = []
    for key, rows in frame.groupby(keys, dropna=False, sort=True, observed=True):
        hit = rows[rows["_flag"]]
        if not len(hit):
            continue
        record = {k: _plain(v) for k, v in zip(keys, key if isinstance(key, tuple) else (key,))}
        notes = list(dict.fromkeys(str(v) for v in hit["_note"]))
        record.update(rows_flagged=int(len(hit)), rows=int(len(rows)), notes=notes[:MAX_NOTES])
        out.append(record)
    return out


def _plain(value: Any) -> Any:
    """A JSON-ready scalar (numpy integers as int, missing as None)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value
