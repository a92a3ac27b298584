"""The long-form metric frame: one row per measured value of one run, any
metric, with the run's dimensions beside it (docs/design.md#metrics).

Why one frame: a program's figure of merit (events/s, GB/s) and the time of
a repeat are the same kind of data, a value in a unit with a direction
(higher or lower is better) measured at one point of the sweep. Built once
from the result rows, it is what the metric-generic analyses read
(analysis/metric_scaling.py), so none of them assumes time, and none pools
points that differ in any dimension (nodes, ranks, threads, a grid value).

Columns: DIMENSIONS (those the rows have; `nodes` and `ranks` default to 1,
`n` may be missing), `repeat`, `replicate`, `overlap` (the row's note that
the machine was shared, where the rows have it), then `metric`, `value`, `unit`
and `higher_is_better`. Time is the metric `time_s` (s, lower is better)
for rows that carry no figure. Rows of a figure-printing program carry
their figure instead: their time_s is the figure's time or the process's
wall time (campaign.job.fom), which the `time` figure already says. A
fixed-duration program (its kernel YAML's `fixed_duration`: it runs for a
set time, e.g. sysbench --time=5) keeps every figure it declared, times
too (a latency percentile is a measurement), but never its wall time, nor a
figure declared `duration` (its report of the set time): both measure the
setting.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.frames import present
from resultschema.columns import DIMENSIONS, SCALE_COLUMNS, SCALE_DEFAULT

# A run's dimensions (resultschema.columns), in the order a point is named: every one tells points apart.
SCALE_DEFAULTS = dict.fromkeys(SCALE_COLUMNS, SCALE_DEFAULT)  # a row that does not say ran on one node, one rank
TIME = "time_s"
VALUE_COLUMNS = ("metric", "value", "unit", "higher_is_better")
FIXED = "fixed_duration"  # the row's extra key a fixed-duration program's rows carry (campaign.job.fom)
SET_TIME = "set_time"  # the row's extra key of a figure declared `duration` (campaign.job.fom)


def without_metric(text: object) -> str:
    """One row's params without the figure's own `metric=` pair (a run's grid and arguments only)."""
    return ",".join(p for p in str(text if text is not None else "").split(",") if p and not p.startswith("metric="))


def strip_metric(params: pd.Series) -> pd.Series:
    """`params` without the figure's own `metric=` pair, row by row (without_metric)."""
    return pd.Series([without_metric(text) for text in params], index=params.index, dtype=object)


def fixed_duration(results: pd.DataFrame) -> pd.Series:
    """Rows of a fixed-duration program (their extra `fixed_duration` is 1/true)."""
    return _flagged(results, FIXED)


def set_time_figures(rows: pd.DataFrame) -> np.ndarray:
    """Rows of a figure declared `duration` (their extra `set_time` is 1/true): a
    fixed-duration program's report of the time it was set to run, which says
    the setting, not the program, so no analysis of figures reads it. Every
    other figure of such a program, a latency in ms too, is a measurement."""
    return _flagged(rows, SET_TIME).to_numpy()


def _flagged(results: pd.DataFrame, column: str) -> pd.Series:
    """Rows whose extra `column` is 1/true (a flag campaign.job.fom writes)."""
    if column not in results.columns:
        return pd.Series(False, index=results.index)
    return results[column].astype("string").str.lower().fillna("").isin(["1", "1.0", "true", "yes"])


def metric_frame(results: pd.DataFrame) -> pd.DataFrame:
    """The long-form frame of raw result rows (see the module doc)."""
    rows = results.reset_index(drop=True)
    dims = present(rows, DIMENSIONS)
    out = rows[dims + present(rows, ("repeat", "replicate", "overlap"))].copy()
    for col, default in SCALE_DEFAULTS.items():
        out[col] = pd.to_numeric(rows[col], errors="coerce").fillna(default).astype("int64") \
            if col in rows.columns else default
    out["params"] = strip_metric(rows["params"]) if "params" in rows.columns else ""
    if "n" not in out.columns:
        out["n"] = pd.array([pd.NA] * len(out), dtype="Int64")
    has_figure = (rows["metric"].notna() & (rows["metric"].astype("string") != "")).to_numpy() \
        if "metric" in rows.columns else np.zeros(len(rows), dtype=bool)
    if has_figure.any():
        out["metric"] = np.where(has_figure, rows["metric"].astype(object), TIME)
        value = pd.to_numeric(rows["value"], errors="coerce").to_numpy(float)
        out["value"] = np.where(has_figure, value, rows["time_s"].to_numpy(float))
        out["unit"] = np.where(has_figure, rows["unit"].fillna("").astype(str), "s")
        higher = pd.to_numeric(rows["higher_is_better"], errors="coerce").fillna(0).to_numpy() != 0
        out["higher_is_better"] = np.where(has_figure, higher, False)
    else:
        out["metric"], out["value"], out["unit"], out["higher_is_better"] = TIME, rows["time_s"].to_numpy(float), \
            "s", False
    # a fixed-duration program's wall time, and a figure that reports its set time, say the setting
    keep = ~(fixed_duration(rows).to_numpy() & (out["metric"] == TIME).to_numpy()) & ~set_time_figures(rows)
    return out[keep].reset_index(drop=True)
