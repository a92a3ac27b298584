"""Speedup and efficiency of any metric over threads, ranks or nodes, in the
metric's own direction (analysis/metric_frame.py; analysis/SCHEMA.md,
key `figure_scaling`).

A series is one point of every dimension but the axis, measured at several
axis values; its base is the smallest. Over nodes, the ranks per node stay
fixed (ranks grow with the nodes); over ranks, the nodes stay fixed.

- a metric where higher is better (a rate): speedup = v / v(base);
- lower is better (a time): speedup = v(base) / v;
- efficiency = speedup · base / axis value: the share of the ideal, where a
  rate grows and a time falls in proportion to the resources. Weak scaling
  (n per rank: analysis.rank_scaling.is_weak) of a time over ranks or nodes
  has a constant ideal, so there efficiency = v(base) / v and the speedup is
  the scaled one, efficiency · axis value / base.

A speedup needs two positive, finite values: where the point's or its
base's median is zero, negative or infinite (a rate printed as 0 at a tiny
size, a difference that can be negative), its speedup and efficiency are
NaN (null in JSON, blank in the tables) and no finding rests on it.

An efficiency above analysis.limits.SUPERLINEAR is flagged `superlinear`:
more than the added resources can give beyond noise (analysis/limits.py says
what it means instead).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.frames import group_codes, group_median, present
from analysis.limits import superlinear
from analysis.metric_frame import DIMENSIONS
from analysis.rank_scaling import is_weak

AXES = ("threads", "ranks", "nodes")
POINT_COLUMNS = ("metric", "unit", "higher_is_better")
COLUMNS = ("axis", "scaling", "base", "base_value", "value", "repeats", "speedup", "efficiency", "superlinear")


def medians(frame: pd.DataFrame) -> pd.DataFrame:
    """Median value and repeat count per point (every dimension) and metric."""
    keys = present(frame, DIMENSIONS) + list(POINT_COLUMNS)
    med = frame.groupby(keys, dropna=False, sort=True).agg(repeats=("value", "size")).reset_index()
    med.insert(len(keys), "value", group_median(frame, keys, "value"))
    return med


def series_key(med: pd.DataFrame, axis: str) -> list[str]:
    """The columns one series over `axis` holds: every dimension but the axis (over nodes the ranks
    grow with the nodes and `ranks_per_node`, which the caller adds, is held instead), the figure."""
    free = {"threads": {"threads"}, "ranks": {"ranks"}, "nodes": {"nodes", "ranks"}}[axis]
    key = [c for c in present(med, DIMENSIONS) if c not in free] + list(POINT_COLUMNS)
    return key + (["ranks_per_node"] if axis == "nodes" else [])


def scaling(frame: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Every point of a series of several `axis` values against its base (see the module doc)."""
    if axis not in AXES:
        raise ValueError(f"unknown scaling axis {axis!r}; known: {', '.join(AXES)}")
    med = medians(frame) if "repeats" not in frame.columns else frame
    if axis not in med.columns or not len(med):
        return pd.DataFrame(columns=[*present(med, DIMENSIONS), *POINT_COLUMNS, *COLUMNS])
    med = med.assign(ranks_per_node=(med["ranks"] // med["nodes"].clip(lower=1)) if axis == "nodes" else 0)
    codes, _ = group_codes(med, series_key(med, axis))
    med = med.assign(_series=codes).sort_values(["_series", axis], kind="stable")
    several = med.groupby("_series")[axis].transform("nunique").to_numpy() >= 2
    med = med[several].reset_index(drop=True)
    base_rows = med.groupby("_series").head(1).set_index("_series")
    base = med["_series"].map(base_rows[axis]).to_numpy(float)
    base_value = med["_series"].map(base_rows["value"]).to_numpy(float)
    value = med["value"].to_numpy(float)
    higher = med["higher_is_better"].to_numpy(bool)
    at = med[axis].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        speedup = np.where(higher, value / base_value, base_value / value)
        efficiency = speedup * base / at
        weak = np.array([axis != "threads" and is_weak(v, p) for v, p in
                         zip(med["variant"], med["params"] if "params" in med.columns else [""] * len(med))],
                        dtype=bool) & ~higher
        speedup = np.where(weak, speedup * at / base, speedup)
        efficiency = np.where(weak, base_value / value, efficiency)
    # a ratio of a zero, a negative or an infinite value says nothing of scaling, nor one past a double's
    # range (1e300 over 1e-300): none is made
    ratio = (value > 0) & (base_value > 0) & np.isfinite(value) & np.isfinite(base_value) & np.isfinite(speedup)
    speedup, efficiency = np.where(ratio, speedup, np.nan), np.where(ratio, efficiency, np.nan)
    out = med.drop(columns=["_series", "ranks_per_node"])
    out["axis"], out["scaling"] = axis, np.where(weak, "weak", "strong")
    out["base"], out["base_value"] = base.astype("int64"), base_value
    out["speedup"], out["efficiency"] = speedup, efficiency
    out["superlinear"] = superlinear(efficiency)
    return out[[*present(out, DIMENSIONS), *POINT_COLUMNS, *COLUMNS]]


def all_scaling(frame: pd.DataFrame) -> pd.DataFrame:
    """`scaling` over every axis the frame varies, one frame (the `axis` column tells them apart);
    `frame` may be its `medians` already, as `scaling` takes them."""
    med = medians(frame) if "repeats" not in frame.columns else frame
    parts = [scaling(med, axis) for axis in AXES if axis in med.columns]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=[*present(med, DIMENSIONS), *POINT_COLUMNS, *COLUMNS])
    return pd.concat(parts, ignore_index=True)



EXPONENT_COLUMNS = ("n_min", "n_max", "sizes", "exponent")


def exponents(frame: pd.DataFrame) -> pd.DataFrame:
    """Least-squares slope k of log v on log n, v ∝ n^k, per series of every
    dimension but n measured at two or more sizes (a program without a size
    has none). Its sign reads in the metric's direction: a rate that falls
    with n (k < 0) is a cost that grows."""
    med = medians(frame) if "repeats" not in frame.columns else frame
    key = [c for c in present(med, DIMENSIONS) if c != "n"] + list(POINT_COLUMNS)
    med = med[pd.to_numeric(med["n"], errors="coerce").gt(0) & med["value"].gt(0)] if len(med) else med
    if not len(med):
        return pd.DataFrame(columns=[*key, *EXPONENT_COLUMNS])
    codes, _ = group_codes(med, key)
    x, y = np.log(med["n"].to_numpy(float)), np.log(med["value"].to_numpy(float))
    count = np.bincount(codes)
    x_c = x - (np.bincount(codes, weights=x) / count)[codes]
    y_c = y - (np.bincount(codes, weights=y) / count)[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.bincount(codes, weights=x_c * y_c) / np.bincount(codes, weights=x_c * x_c)
    out = med.assign(_series=codes).groupby("_series", sort=True).agg(
        **{c: (c, "first") for c in key}, n_min=("n", "min"), n_max=("n", "max"), sizes=("n", "nunique"))
    out["exponent"] = slope[out.index.to_numpy()]
    return out[out["sizes"] >= 2].reset_index(drop=True)[[*key, *EXPONENT_COLUMNS]]
