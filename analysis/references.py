"""Reference values, as ReFrame users expect: measured medians outside a
reference's tolerance are flagged.

A reference names one point (cluster, partition, kernel, impl, variant,
threads, n; optionally dtype and params, else any; params "" = a run without
extra program arguments) and either an expected
`time_s` or an expected `flops_per_s` (a rate, from the cost model's
`flops`), with a relative `tolerance` (0.1 = +-10%). The measured value is the
median over repeats (analysis/summary.py). Status: `ok` inside the band,
`slow` / `fast` outside it (a rate below the band is slow), `missing` when no
measurement matches. Both directions are flagged: a time far below its
reference usually means the kernel did less work than it should.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.cost_model import add_cost_columns
from analysis.summary import ensure_summary

REFERENCE_KEYS: tuple[str, ...] = ("cluster", "partition", "kernel", "impl", "variant", "threads", "n")
REFERENCE_OPTIONAL: tuple[str, ...] = ("dtype", "params")
REFERENCE_COLUMNS: tuple[str, ...] = REFERENCE_KEYS + REFERENCE_OPTIONAL + (
    "metric", "expected", "measured", "deviation", "tolerance", "status")
DEFAULT_TOLERANCE = 0.1


def check_references(results: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """One row per (reference, matching measured group); see the module doc.

    `refs` columns: REFERENCE_KEYS, optional dtype/params (NaN or "" = any),
    `time_s` and/or `flops_per_s` (exactly one non-null per row), and
    `tolerance` (NaN = DEFAULT_TOLERANCE). `deviation` = measured/expected - 1.
    """
    s = add_cost_columns(ensure_summary(results)) if len(results) else ensure_summary(results)
    out = []
    for ref in refs.to_dict("records"):
        metric, expected = _expected(ref)
        tol = ref.get("tolerance")
        tol = DEFAULT_TOLERANCE if tol is None or pd.isna(tol) else float(tol)
        sel = np.ones(len(s), dtype=bool)
        for col in REFERENCE_KEYS:
            sel &= (s[col].astype("str") == str(ref[col])).to_numpy()
        for col in REFERENCE_OPTIONAL:
            want = ref.get(col)  # None/NaN: any value; "" for params: a run without extra arguments
            if want is not None and not pd.isna(want):
                have = s[col].fillna("").astype("str") if col in s else pd.Series("", index=s.index)
                sel &= (have == str(want)).to_numpy()
        base = {c: ref.get(c) for c in REFERENCE_KEYS + REFERENCE_OPTIONAL}
        matched = s[sel]
        if matched.empty:
            out.append({**base, "metric": metric, "expected": expected, "measured": np.nan,
                        "deviation": np.nan, "tolerance": tol, "status": "missing"})
            continue
        for row in matched.to_dict("records"):
            measured = row["median_s"] if metric == "time_s" else row["flops"] / row["median_s"]
            dev = measured / expected - 1.0
            if abs(dev) <= tol:
                status = "ok"
            elif metric == "time_s":
                status = "slow" if dev > 0 else "fast"
            else:
                status = "fast" if dev > 0 else "slow"
            got = {**base, **{c: row[c] for c in REFERENCE_OPTIONAL if c in row}}
            out.append({**got, "metric": metric, "expected": expected, "measured": float(measured),
                        "deviation": float(dev), "tolerance": tol, "status": status})
    return pd.DataFrame(out, columns=list(REFERENCE_COLUMNS))


def _expected(ref: dict[str, object]) -> tuple[str, float]:
    have = [m for m in ("time_s", "flops_per_s") if ref.get(m) is not None and not pd.isna(ref.get(m))]
    if len(have) != 1:
        where = "/".join(str(ref.get(c)) for c in ("kernel", "impl", "variant"))
        raise ValueError(f"reference {where} n={ref.get('n')}: give exactly one of time_s, flops_per_s")
    value = float(ref[have[0]])  # type: ignore[arg-type]
    if not value > 0:
        raise ValueError(f"reference {ref.get('kernel')}: {have[0]} must be > 0, got {value}")
    return have[0], value


def outside(checked: pd.DataFrame) -> pd.DataFrame:
    """The references a report or `compare --reference` flags."""
    return checked[checked["status"] != "ok"].reset_index(drop=True)
