"""Synthetic result tables with exactly known answers for the analysis tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd
import pytest

KEY = dict(cluster="anvil", partition="wholenode", kernel="attention_forward", impl="c",
           variant="naive", device="cpu", dtype="fp32", d=64)

RowMaker = Callable[..., pd.DataFrame]


def make_rows(times: dict[tuple[int, int], float | Iterable[float]], **key: object) -> pd.DataFrame:
    """Rows from {(threads, n): time or [repeat times]}; key overrides KEY."""
    fields = {**KEY, **key}
    rows = []
    for (threads, n), value in times.items():
        repeats = [value] if isinstance(value, (int, float)) else list(value)
        for r, t in enumerate(repeats):
            rows.append({**fields, "threads": threads, "n": n, "repeat": r, "time_s": float(t)})
    return pd.DataFrame(rows)


@pytest.fixture
def rows() -> RowMaker:
    return make_rows


@pytest.fixture
def partitions() -> pd.DataFrame:
    """One partition: 128 cores in 8 NUMA domains of 16 cores."""
    return pd.DataFrame([dict(cluster="anvil", partition="wholenode", cores=128, sockets=2,
                              numa_domains=8, threads_per_core=1, peak_flops_fp32=4e12,
                              peak_flops_bf16=8e12, mem_bw=2e11)])
