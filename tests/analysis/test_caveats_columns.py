"""Flags.first_reason reads whole columns; it must give what any_reason gives
over the rows one by one (the Series path it replaced), hostile keys included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.caveats import Flags


def _summary() -> pd.DataFrame:
    """Points of two configurations; a None/NaN key, a nullable Int64 and float n among them."""
    return pd.DataFrame({
        "cluster": ["vm"] * 6, "partition": ["p"] * 6,
        "device": ["cpu", "cpu", "cpu", None, None, None],
        "kernel": ["gemm", "gemm", "gemm", "stream", "stream", None],
        "impl": ["c", "c", "c", "c", "c", "c"],
        "variant": ["naive", "naive", "naive", np.nan, np.nan, "x"],
        "threads": pd.array([1, 2, 4, 1, 2, 8], dtype="Int64"),
        "n": [64.0, 64.0, 64.0, 128.0, 128.0, 256.0],
        "repeats": [3, 1, 3, 3, 2, 1],
        "median_s": [1.0, 0.6, 0.4, 2.0, 1.2, 3.0],
    })


def _results(summary: pd.DataFrame) -> pd.DataFrame:
    rows = summary.drop(columns=["repeats", "median_s"]).assign(time_s=summary["median_s"])
    rows["overlap"] = [None, None, "shared with job 7 on vm", None, None, None]
    rows["state"] = ["COMPLETED", "COMPLETED", "COMPLETED", "CHECK_FAILED", "COMPLETED", "COMPLETED"]
    return rows


def _doublings() -> pd.DataFrame:
    """Penalty-like rows (threads and the half it doubled from), mixed dtypes."""
    return pd.DataFrame({
        "cluster": ["vm"] * 5, "partition": ["p"] * 5, "device": ["cpu", "cpu", np.nan, None, "cpu"],
        "kernel": ["gemm", "gemm", "stream", None, "gemm"],
        "impl": ["c"] * 5,
        "variant": ["naive", "naive", None, "x", "naive"],
        "threads": [2, 4, 2, 16, 8],
        "threads_half": [1.0, 2.0, 1.0, 8.0, 4.0],
        "n": [64, 64, 128, 256, 64],
        "penalty": [0.6, 0.7, 0.6, 0.9, 1.0],
    })


def _by_rows(flags: Flags, frame: pd.DataFrame) -> str | None:
    busy = (flags.any_reason([(row, {}), (row, {"threads": row["threads_half"]})])
            for _, row in frame.iterrows())
    return next((why for why in busy if why), None)


def test_first_reason_equals_row_by_row() -> None:
    summary = _summary()
    flags = Flags(_results(summary), summary)
    assert flags.why  # the frames do flag points: few repeats, a shared machine, a failed check
    frame = _doublings()
    reasons: list[Any] = []
    for start in range(len(frame)):  # every suffix: each row's own first reason, and none at all
        part = frame.iloc[start:]
        got = flags.first_reason(part, {}, {"threads": "threads_half"})
        assert got == _by_rows(flags, part)
        reasons.append(got)
    assert None not in reasons[:2] and len(set(reasons)) >= 2, reasons  # distinct reasons were found
    clean = frame[frame["kernel"] == "nothing"]
    assert flags.first_reason(clean, {}, {"threads": "threads_half"}) is None


def test_first_reason_without_flags_or_columns() -> None:
    summary = _summary().assign(repeats=5)
    assert Flags(None, summary).first_reason(_doublings(), {}) is None  # nothing flagged
    flags = Flags(_results(_summary()), _summary())
    missing = _doublings().drop(columns=["device"])  # an absent column reads as None, as row.get
    got = flags.first_reason(missing, {}, {"threads": "threads_half"})
    assert got is not None and got == _by_rows(flags, missing)
