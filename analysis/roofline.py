"""How close to the machine's ceiling: throughput, bandwidth, and their
fractions of the partition's peak FLOP/s and memory bandwidth.

The FLOP ceiling depends on the dtype: fp32 (and a missing dtype) uses
`peak_flops_fp32`, bf16 `peak_flops_bf16`, fp16 `peak_flops_fp16` where the
partition declares it (AMD MI100: twice bf16's rate), else bf16's (the same
tensor rate on NVIDIA GPUs); other dtypes have no ceiling (NaN). `roof_flops` is the attainable rate min(peak, intensity * bw)
of the classical roofline, and `frac_roof` the fraction of it achieved.
A fraction above 100% is not physical (analysis/limits.py): such a point is
`above_ceiling`, and no finding rests on it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.limits import above_ceiling
from analysis.penalties import facts_columns
from analysis.schema import group_columns
from analysis.summary import ensure_summary

_PEAK_COLUMN = {"fp32": "peak_flops_fp32", "bf16": "peak_flops_bf16", "fp16": "peak_flops_fp16"}
_FALLBACK = {"peak_flops_fp16": "peak_flops_bf16"}  # an undeclared fp16 peak is bf16's


def peak_field(dtype: object) -> str:
    """The partition fact (cluster YAML) that is the FLOP ceiling of `dtype` (none: fp32)."""
    return _PEAK_COLUMN.get(str(dtype) if isinstance(dtype, str) and dtype else "fp32", "peak_flops_fp32")


def roofline(df: pd.DataFrame, partitions: pd.DataFrame | None) -> pd.DataFrame:
    """Per (group, threads, n): achieved FLOP/s and bytes/s against the ceilings.

    Output: group columns, `n`, `threads`, `median_s`, `flops`, `bytes`,
    `flops_per_s`, `bytes_per_s`, `intensity` (flops/byte), `peak_flops`,
    `mem_bw`, `frac_peak_flops`, `frac_mem_bw`, `roof_flops`, `frac_roof`,
    `above_ceiling` (the FLOP/s above the peak or the bytes/s above the memory
    bandwidth: the roof is min of the two, so its fraction is above 100% too).
    """
    s = ensure_summary(df)
    facts = facts_columns(partitions, ["peak_flops_fp32", "peak_flops_bf16", "peak_flops_fp16", "mem_bw"])
    keyed = s[group_columns(s) + ["n", "threads", "median_s", "flops", "bytes"]].copy()
    keyed["_k_cluster"] = keyed["cluster"].astype("str")
    keyed["_k_partition"] = keyed["partition"].astype("str")
    merged = keyed.merge(
        facts.rename(columns={"cluster": "_k_cluster", "partition": "_k_partition"}),
        on=["_k_cluster", "_k_partition"],
        how="left",
    )
    dtype = (
        merged["dtype"].astype(object).fillna("fp32") if "dtype" in merged else pd.Series("fp32", index=merged.index)
    )
    peak = np.full(len(merged), np.nan)
    for name, column in _PEAK_COLUMN.items():
        rows = (dtype == name).to_numpy()
        declared = merged[column].to_numpy(dtype=float)
        if column in _FALLBACK:
            declared = np.where(np.isnan(declared), merged[_FALLBACK[column]].to_numpy(dtype=float), declared)
        peak[rows] = declared[rows]
    t = merged["median_s"].to_numpy(dtype=float)
    fl = merged["flops"].to_numpy(dtype=float)
    by = merged["bytes"].to_numpy(dtype=float)
    bw = merged["mem_bw"].to_numpy(dtype=float)
    out = merged[group_columns(s) + ["n", "threads", "median_s", "flops", "bytes"]].copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["flops_per_s"] = fl / t
        out["bytes_per_s"] = by / t
        out["intensity"] = fl / by
        out["peak_flops"] = peak
        out["mem_bw"] = bw
        out["frac_peak_flops"] = out["flops_per_s"] / peak
        out["frac_mem_bw"] = out["bytes_per_s"] / bw
        out["roof_flops"] = np.fmin(peak, out["intensity"].to_numpy() * bw)
        # fmin ignores one NaN; the roof needs both ceilings, and a FLOP rate to be a roof of (a copy
        # benchmark's bytes alone have none); FLOPs without bytes have the peak alone (intensity unknown).
        out.loc[np.isnan(peak) | np.isnan(bw) | np.isnan(fl), "roof_flops"] = np.nan
        out["frac_roof"] = out["flops_per_s"] / out["roof_flops"]
    out["above_ceiling"] = above_ceiling(out["frac_peak_flops"]) | above_ceiling(out["frac_mem_bw"])
    return out.reset_index(drop=True)
