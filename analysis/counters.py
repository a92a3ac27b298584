"""Hardware counters against the cost model: the "measured vs predicted" analysis.

The validation paper's method was not timing alone: for each kernel and n it
compared the DRAM traffic the hardware counted (Nsight Compute) with the
minimal traffic of the cost model (analysis/cost_model.py), reads and writes
apart, and explained gaps with sector efficiency (bytes used per 32-byte
sector), atomics, occupancy and warp stalls. This module does that over a long
counters frame (one row per kernel, n and metric: the columns of
COUNTER_COLUMNS, as the kernel programs write them and the ledger stores
them); it never imports campaign.

Metric names are Nsight Compute's (kernels/torch/ncu.py holds the set). Values
are normalised to bytes and seconds whatever unit ncu printed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis import cost_model

COUNTER_COLUMNS: tuple[str, ...] = (
    "kernel", "impl", "variant", "dtype", "n", "d", "metric", "value", "unit", "kernels", "error",
)
# Columns that, where present, tell configurations apart (e.g. params
# "sdpa-backend=cudnn"); the counters of different ones are never mixed.
OPTIONAL_KEYS: tuple[str, ...] = ("cluster", "partition", "params")
STALL_PREFIX = "smsp__warps_issue_stalled_"
# ncu counts the warp that issues as "selected": a state, not a stall.
NOT_A_STALL = ("selected",)
TOP_STALLS = 3
# From ncu's Occupancy section (kernels/torch/ncu.py: no counter holds it).
THEORETICAL_OCCUPANCY = "Occupancy: Theoretical Occupancy"
_UNIT_SCALE: dict[str, float] = {
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "msec": 1e-3,
}
# (a, b, what the ratio a/b shows): the paper's comparisons.
DEFAULT_PAIRS: tuple[tuple[tuple[str, str], tuple[str, str], str], ...] = (
    (("attention_fwdbwd", "fused"), ("attention_backward", "naive"), "fused fwd+bwd / naive bwd"),
    (("attention_forward", "naive"), ("attention_forward", "memopt"), "naive / memopt forward"),
    (("decode", "naive"), ("decode", "splitk"), "naive / splitk decode"),
    (("decode", "naive"), ("decode", "sdpa"), "naive / sdpa decode"),
)


def keys_of(frame: pd.DataFrame) -> list[str]:
    """The identity columns of a counters (or results) frame."""
    base = ["kernel", "impl", "variant", "dtype", "n", "d"]
    return base + [c for c in OPTIONAL_KEYS if c in frame.columns]


def _normalised(counters: pd.DataFrame) -> pd.DataFrame:
    """Rows with a value, in bytes and seconds; n and d numeric."""
    frame = counters.copy()
    for col in COUNTER_COLUMNS:
        if col not in frame.columns:
            frame[col] = ""
    for col in ("kernels", "error", "unit", "metric", *(c for c in OPTIONAL_KEYS if c in frame.columns)):
        # as text first: an all-empty column arrives as float NaN, which "" cannot fill (pandas 4)
        frame[col] = frame[col].astype("object").where(frame[col].notna(), "").astype("str")
    frame["n"] = pd.to_numeric(frame["n"], errors="coerce")
    frame["d"] = pd.to_numeric(frame["d"], errors="coerce")
    scale = frame["unit"].map(_UNIT_SCALE).fillna(1.0)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce") * scale
    return frame


def failures(counters: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, n) whose profile was not taken, with why."""
    frame = _normalised(counters)
    bad = frame[frame["error"] != ""]
    return bad[keys_of(frame) + ["error"]].drop_duplicates().reset_index(drop=True)


def counters_wide(counters: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and n, one column per metric, plus `kernels`."""
    frame = _normalised(counters)
    good = frame[(frame["error"] == "") & (frame["metric"] != "")]
    keys = keys_of(frame)
    if good.empty:
        return pd.DataFrame(columns=keys + ["kernels"])
    wide = good.pivot_table(index=keys, columns="metric", values="value", aggfunc="first",
                            dropna=False)
    wide.columns = [str(c) for c in wide.columns]
    names = good.groupby(keys, dropna=False)["kernels"].first()
    wide = wide.join(names).reset_index()
    return wide.dropna(subset=[c for c in wide.columns if c not in keys and c != "kernels"],
                       how="all").reset_index(drop=True)


def _col(frame: pd.DataFrame, name: str) -> pd.Series:
    if name in frame.columns:
        return pd.to_numeric(frame[name], errors="coerce")
    return pd.Series(np.nan, index=frame.index)


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    return a / b.where(b > 0)


def _top_stalls(frame: pd.DataFrame, issued: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Total stall warp-cycles, and the top reasons as text 'reason cycles/inst, ...'."""
    cols = [c for c in frame.columns if c.startswith(STALL_PREFIX)
            and c[len(STALL_PREFIX):].split(".")[0] not in NOT_A_STALL]
    if not cols:
        return pd.Series(np.nan, index=frame.index), pd.Series("", index=frame.index)
    stalls = frame[cols].apply(pd.to_numeric, errors="coerce")
    total = stalls.sum(axis=1, min_count=1)
    texts = []
    for idx, row in stalls.iterrows():
        per_inst = row / issued[idx] if issued[idx] and math.isfinite(issued[idx]) else row
        top = per_inst.dropna().sort_values(ascending=False).head(TOP_STALLS)
        texts.append(", ".join(f"{c[len(STALL_PREFIX):].split('.')[0]} {v:.3g}"
                               for c, v in top.items()))
    return total, pd.Series(texts, index=frame.index)


def median_times(results: pd.DataFrame | None) -> pd.DataFrame | None:
    """Median time_s per configuration and n of a results frame."""
    if results is None or results.empty or "time_s" not in results.columns:
        return None
    frame = results.copy()
    for col in ("n", "d"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce") if col in frame else np.nan
    for col in OPTIONAL_KEYS:
        if col in frame.columns:
            frame[col] = frame[col].fillna("").astype("str")
    keys = [k for k in keys_of(frame) if k in frame.columns]
    frame["time_s"] = pd.to_numeric(frame["time_s"], errors="coerce")
    return frame.groupby(keys, dropna=False)["time_s"].median().rename("median_time_s").reset_index()


def measured_vs_predicted(counters: pd.DataFrame, results: pd.DataFrame | None = None,
                          models: Mapping[str, cost_model.CostModel] | None = None) -> pd.DataFrame:
    """Per configuration and n: DRAM bytes read/written against the cost
    model's minimal reads/writes, L2/L1 traffic, bytes used per sector,
    atomics, occupancy, stalls, the profiled GPU time and (given results)
    the median timed repeat."""
    wide = counters_wide(counters)
    keys = keys_of(wide)
    out = wide[keys + ["kernels"]].copy()
    if wide.empty:
        return out
    # the kernels' declared cost models (analysis/cost_model.py), the shipped ones unless given
    predicted = cost_model.costs(wide, models, ("bytes", "write_bytes"))
    pred_total, pred_write = predicted["bytes"], predicted["write_bytes"]
    read, write = _col(wide, "dram__bytes_read.sum"), _col(wide, "dram__bytes_write.sum")
    out["dram_read_bytes"] = read
    out["predicted_read_bytes"] = pred_total - pred_write
    out["read_ratio"] = _ratio(read, out["predicted_read_bytes"])
    out["dram_write_bytes"] = write
    out["predicted_write_bytes"] = pred_write
    out["write_ratio"] = _ratio(write, out["predicted_write_bytes"])
    out["dram_ratio"] = _ratio(read + write, pd.Series(pred_total, index=wide.index))
    # CPU (perf): last-level-cache misses x 64 B, the memory traffic perf can see.
    out["llc_miss_bytes"] = _col(wide, "llc_miss_bytes")
    out["llc_ratio"] = _ratio(out["llc_miss_bytes"], pd.Series(pred_total, index=wide.index))
    out["l2_read_sectors"] = _col(wide, "lts__t_sectors_op_read.sum")
    out["l2_write_sectors"] = _col(wide, "lts__t_sectors_op_write.sum")
    out["l1_ld_sectors"] = _col(wide, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    out["l1_st_sectors"] = _col(wide, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    out["ld_bytes_per_sector"] = _ratio(_col(wide, "smsp__sass_data_bytes_mem_global_op_ld.sum"),
                                        out["l1_ld_sectors"])
    out["st_bytes_per_sector"] = _ratio(_col(wide, "smsp__sass_data_bytes_mem_global_op_st.sum"),
                                        out["l1_st_sectors"])
    out["atomics"] = (_col(wide, "smsp__inst_executed_op_global_red.sum").fillna(0)
                      + _col(wide, "smsp__sass_inst_executed_op_global_atom.sum").fillna(0))
    achieved = _col(wide, "sm__warps_active.avg.pct_of_peak_sustained_active")
    theoretical = _col(wide, THEORETICAL_OCCUPANCY)
    out["occupancy_pct"] = achieved
    out["theoretical_occupancy_pct"] = theoretical
    out["occupancy_of_theoretical"] = _ratio(achieved, theoretical)
    issued = _col(wide, "smsp__inst_issued.sum")
    out["stall_warp_cycles"], out["top_stalls"] = _top_stalls(wide, issued)
    out["stall_cycles_per_inst"] = _ratio(out["stall_warp_cycles"], issued)
    out["launches"] = _col(wide, "launches")
    out["gpu_time_s"] = _col(wide, "gpu__time_duration.sum")
    times = median_times(results)
    if times is not None:
        on = [k for k in keys if k in times.columns]
        out = out.merge(times, on=on, how="left")
    return out.sort_values(keys).reset_index(drop=True)


RATIO_METRICS: tuple[tuple[str, str], ...] = (
    ("atomics", "atomics"), ("dram_bytes", "dram_total"), ("dram_write_bytes", "dram_write_bytes"),
    ("stall_warp_cycles", "stall_warp_cycles"), ("gpu_time", "gpu_time_s"),
    ("time", "median_time_s"),
)


def variant_ratios(counters: pd.DataFrame, results: pd.DataFrame | None = None,
                   pairs: tuple[tuple[tuple[str, str], tuple[str, str], str], ...] = DEFAULT_PAIRS,
                   models: Mapping[str, cost_model.CostModel] | None = None) -> pd.DataFrame:
    """a / b of atomics, DRAM bytes, stalls and times between two kernel
    variants at the same dtype, n and d (e.g. fused vs naive atomics)."""
    table = measured_vs_predicted(counters, results, models)
    if table.empty:
        return pd.DataFrame()
    table = table.assign(dram_total=table["dram_read_bytes"] + table["dram_write_bytes"])
    match = ["impl", "dtype", "n", "d"] + [c for c in ("cluster", "partition") if c in table]
    rows = []
    for (ka, va), (kb, vb), what in pairs:
        a = table[(table["kernel"] == ka) & (table["variant"] == va)]
        b = table[(table["kernel"] == kb) & (table["variant"] == vb)]
        if a.empty or b.empty:
            continue
        both = a.merge(b, on=match, suffixes=("_a", "_b"))
        for _, r in both.iterrows():
            row: dict[str, Any] = {"comparison": what, "a": f"{ka}/{va}", "b": f"{kb}/{vb}"}
            for c in ("params",):
                if f"{c}_a" in r:
                    row[f"{c}_a"], row[f"{c}_b"] = r[f"{c}_a"], r[f"{c}_b"]
            row.update({c: r[c] for c in match})
            for name, col in RATIO_METRICS:
                if f"{col}_a" in r:
                    va_, vb_ = float(r[f"{col}_a"]), float(r[f"{col}_b"])
                    row[f"{name}_ratio"] = va_ / vb_ if vb_ > 0 else math.nan
            rows.append(row)
    return pd.DataFrame(rows)
