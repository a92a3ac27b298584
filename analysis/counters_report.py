"""The report's "Measured vs predicted" section and its JSON (key `counters`).

`counters_tables` gives the section's tables as (title, DataFrame) pairs,
which analysis/report.py renders as its Blocks (Markdown and HTML alike);
`counters_json` gives the machine-readable form. The numbers come from analysis/counters.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis import counters as ct
from analysis.cost_model import CostModel

TITLE = "Measured vs predicted (hardware counters)"
INTRO = (
    "Counters of one extra, separately launched call per n under Nsight Compute "
    "(never the timed repeats), summed over the call's GPU kernels, with ncu's "
    "cache flush before each kernel. Predicted bytes are the cost model's minimum: "
    "each input read once, each output written once (docs/contracts.md); "
    "ratio = measured / predicted. Writes still in the 60 MB L2 when a kernel ends "
    "are no DRAM writes, so outputs smaller than the L2 show about 0 written. "
    "Bytes per sector: bytes the threads used per 32-byte L1 sector of global "
    "loads (ld) and stores (st); TMA and cp.async traffic (flash kernels) bypasses "
    "these counters. Atomics: global reduction + atomic instructions."
)


def _label(frame: pd.DataFrame) -> pd.Series:
    label = frame["kernel"].astype("str") + "/" + frame["variant"].astype("str") + " " + frame[
        "dtype"].astype("str")
    if "params" in frame.columns:
        params = frame["params"].fillna("").astype("str")
        label = label + (" [" + params + "]").where(params != "", "")
    return label


def _mb(v: Any) -> str:
    return "" if _missing(v) else f"{float(v) / 1e6:.4g}"


def _x(v: Any) -> str:
    return "" if _missing(v) else f"{float(v):.3g}x"


def _num(v: Any, digits: int = 3) -> str:
    return "" if _missing(v) else f"{float(v):.{digits}g}"


def _missing(v: Any) -> bool:
    try:
        return v is None or v is pd.NA or not math.isfinite(float(v))
    except (TypeError, ValueError):
        return True


def bytes_table(mvp: pd.DataFrame) -> pd.DataFrame:
    """DRAM MB read and written, each against the prediction."""
    if mvp.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "kernel": _label(mvp), "n": mvp["n"].astype("Int64"),
        "read MB": mvp["dram_read_bytes"].map(_mb),
        "predicted read MB": mvp["predicted_read_bytes"].map(_mb),
        "read ratio": mvp["read_ratio"].map(_x),
        "write MB": mvp["dram_write_bytes"].map(_mb),
        "predicted write MB": mvp["predicted_write_bytes"].map(_mb),
        "write ratio": mvp["write_ratio"].map(_x),
        "total ratio": mvp["dram_ratio"].map(_x),
        "LLC-miss MB (CPU)": mvp["llc_miss_bytes"].map(_mb),
        "LLC ratio": mvp["llc_ratio"].map(_x),
    })


def efficiency_table(mvp: pd.DataFrame) -> pd.DataFrame:
    """Sector efficiency, atomics, occupancy, stalls and times."""
    if mvp.empty:
        return pd.DataFrame()
    table = pd.DataFrame({
        "kernel": _label(mvp), "n": mvp["n"].astype("Int64"),
        "ld B/sector": mvp["ld_bytes_per_sector"].map(lambda v: _num(v)),
        "st B/sector": mvp["st_bytes_per_sector"].map(lambda v: _num(v)),
        "atomics": mvp["atomics"].map(lambda v: "" if _missing(v) else f"{float(v):.0f}"),
        "occupancy %": mvp["occupancy_pct"].map(lambda v: _num(v)),
        "theoretical %": mvp["theoretical_occupancy_pct"].map(lambda v: _num(v)),
        "stall cyc/inst": mvp["stall_cycles_per_inst"].map(lambda v: _num(v)),
        "top stalls (cyc/inst)": mvp["top_stalls"],
        "launches": mvp["launches"].map(lambda v: _num(v)),
        "profiled GPU s": mvp["gpu_time_s"].map(lambda v: _num(v)),
    })
    if "median_time_s" in mvp.columns:
        table["timed median s"] = mvp["median_time_s"].map(lambda v: _num(v))
    return table


def ratio_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """a / b between variants at the same n (atomics, bytes, stalls, time)."""
    if ratios.empty:
        return pd.DataFrame()
    cols = {"comparison": ratios["comparison"], "dtype": ratios["dtype"],
            "n": ratios["n"].astype("Int64")}
    for name in ("atomics", "dram_bytes", "dram_write_bytes", "stall_warp_cycles", "gpu_time",
                 "time"):
        if f"{name}_ratio" in ratios.columns:
            cols[name.replace("_", " ")] = ratios[f"{name}_ratio"].map(
                lambda v: "" if _missing(v) else f"{float(v):.4g}")
    return pd.DataFrame(cols)


def kernels_table(mvp: pd.DataFrame) -> pd.DataFrame:
    """Which GPU kernels each profiled call launched."""
    if mvp.empty:
        return pd.DataFrame()
    return pd.DataFrame({"kernel": _label(mvp), "n": mvp["n"].astype("Int64"),
                         "GPU kernels": mvp["kernels"]})


def _drop_empty(table: pd.DataFrame) -> pd.DataFrame:
    """Columns with no value in any row (e.g. LLC columns without perf runs)."""
    if table.empty:
        return table
    keep = [c for c in table.columns if (table[c].astype("str") != "").any()]
    return table[keep]


def counters_tables(counters: pd.DataFrame, results: pd.DataFrame | None = None,
                    models: Mapping[str, CostModel] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """The section's tables, in order, as (title, display frame)."""
    mvp = ct.measured_vs_predicted(counters, results, models)
    ratios = ct.variant_ratios(counters, results, models=models)
    fails = ct.failures(counters)
    tables = [
        ("DRAM bytes: measured vs cost model", _drop_empty(bytes_table(mvp))),
        ("Sector efficiency, atomics, occupancy, stalls", _drop_empty(efficiency_table(mvp))),
        ("Ratios between variants (a / b)", ratio_table(ratios)),
        ("GPU kernels of each profiled call", kernels_table(mvp)),
    ]
    if not fails.empty:
        tables.append(("Not profiled (PROFILE_FAILED; timings still count)",
                       fails.assign(kernel=_label(fails))[["kernel", "n", "error"]]))
    return tables


def counters_json(counters: pd.DataFrame, results: pd.DataFrame | None = None,
                  models: Mapping[str, CostModel] | None = None) -> dict[str, Any]:
    """`report --json` key `counters`: measured_vs_predicted, ratios, failures
    as lists of records (NaN -> null); `models`: the kernels' cost models."""
    return {
        "measured_vs_predicted": _records(ct.measured_vs_predicted(counters, results, models)),
        "ratios": _records(ct.variant_ratios(counters, results, models=models)),
        "failures": _records(ct.failures(counters)),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in rec.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (float, np.floating)):
                v = None if not math.isfinite(float(v)) else float(v)
            clean[str(k)] = v
        out.append(clean)
    return out
