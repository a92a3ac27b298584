"""The one path of a point's summary (analysis/point_stats.py's SQL, through
summarize and replicate_medians), on the cases the two former paths were held
equal on: NaN and infinite times, ties, a single repeat, huge and tiny times,
replicates (within and across campaigns), missing dtype/d columns, missing
key values, the output's order. Expected numbers are written out by hand
from the definitions (analysis/summary.py's module doc)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.point_stats import rank_and_coverage
from analysis.replicates import replicate_medians, variance_components
from analysis.summary import summarize
from tests.analysis.conftest import make_rows


def _point(summary: pd.DataFrame, **key: object) -> pd.Series:
    mask = np.ones(len(summary), dtype=bool)
    for col, value in key.items():
        mask &= (summary[col] == value).to_numpy()
    assert mask.sum() == 1, (key, summary)
    return summary[mask].iloc[0]


def test_median_and_interval_are_the_order_statistics_of_the_sorted_times() -> None:
    """m = 4: median (x2 + x3) / 2, r = 1: [x1, x4]; m = 12: r = 3: [x3, x10]."""
    rows = make_rows({(1, 64): [4.0, 1.0, 3.0, 2.0], (1, 128): [float(t) for t in range(12, 0, -1)]})
    s = summarize(rows)
    four, twelve = _point(s, n=64), _point(s, n=128)
    assert (four["median_s"], four["ci_lo_s"], four["ci_hi_s"], four["repeats"]) == (2.5, 1.0, 4.0, 4)
    assert four["ci_coverage"] == rank_and_coverage(4)[1] == 0.875
    assert (twelve["median_s"], twelve["ci_lo_s"], twelve["ci_hi_s"]) == (6.5, 3.0, 10.0)
    assert not four["single_repeat"] and four["replicates"] == 1 and math.isnan(four["replicate_log_sd"])


def test_nan_and_infinite_times_sort_after_every_time() -> None:
    """NaN is the slowest value (after inf): it counts as a repeat and can be
    the median's upper neighbour or the interval's upper end."""
    rows = make_rows({(1, 64): [3.0, float("nan"), 1.0, 2.0], (1, 128): [float("inf"), 1.0, float("nan")],
                      (1, 256): [float("nan"), float("nan")]})
    s = summarize(rows)
    a, b, c = _point(s, n=64), _point(s, n=128), _point(s, n=256)
    assert (a["median_s"], a["ci_lo_s"], a["repeats"]) == (2.5, 1.0, 4) and math.isnan(a["ci_hi_s"])
    assert (b["median_s"], b["ci_lo_s"]) == (float("inf"), 1.0) and math.isnan(b["ci_hi_s"])
    assert math.isnan(c["median_s"]) and c["repeats"] == 2


def test_fastest_repeat_gives_flops_bytes_and_allocation_and_ties_go_to_the_earlier_row() -> None:
    rows = make_rows({(1, 64): [2.0, 1.0, 1.0, 3.0]})
    rows["flops"] = [10.0, 20.0, 30.0, 40.0]
    rows["bytes"] = [1.0, 2.0, 3.0, 4.0]
    rows["alloc_cpus"] = [1, 2, 3, 4]
    p = summarize(rows).iloc[0]
    assert (p["flops"], p["bytes"], p["alloc_cpus"]) == (20.0, 2.0, 2)
    nan_first = make_rows({(1, 64): [float("nan"), float("nan")]}).assign(flops=[5.0, 6.0])
    assert summarize(nan_first).iloc[0]["flops"] == 5.0  # all NaN: the first row


def test_a_single_repeat_is_its_own_degenerate_interval() -> None:
    p = summarize(make_rows({(4, 64): [0.25]})).iloc[0]
    assert (p["median_s"], p["ci_lo_s"], p["ci_hi_s"], p["ci_coverage"], p["repeats"]) == (0.25, 0.25, 0.25, 0.0, 1)
    assert p["single_repeat"]


def test_huge_and_tiny_times_keep_their_exact_float_operations() -> None:
    """The median is 0.5 * (a + b) where a + b is finite, and 0.5 * a + 0.5 * b
    where the sum of two finite values overflows: never inf for finite times."""
    s = summarize(make_rows({(1, 64): [1e300, 1.5e300], (1, 128): [1e-300, 3e-300], (1, 256): [1.5e308, 1.7e308]}))
    assert _point(s, n=64)["median_s"] == 0.5 * (1e300 + 1.5e300)
    assert _point(s, n=128)["median_s"] == 0.5 * (1e-300 + 3e-300)
    assert _point(s, n=256)["median_s"] == 1.6e308 == 0.5 * 1.5e308 + 0.5 * 1.7e308
    reps = make_rows({(1, 64): [1.5e308, 1.7e308, 1.0, 3.0]}).assign(replicate=[0, 0, 1, 1])
    assert replicate_medians(reps)["median_s"].tolist() == [1.6e308, 2.0]


def test_replicates_take_the_geometric_mean_of_their_medians() -> None:
    """Each replicate's median skips NaN (the middle value or the mean of the
    two middle ones); the point takes exp(mean(log)) of them and the
    t-interval; `repeats` stays the point's rows."""
    rows = make_rows({(1, 64): [1.0, 2.0, 9.0, 4.0, 8.0, float("nan"), 2.0, 2.0]})
    rows["replicate"] = [0, 0, 0, 1, 1, 1, 2, 2]
    reps = replicate_medians(rows)
    assert reps["median_s"].tolist() == [2.0, 6.0, 2.0] and reps["repeats"].tolist() == [3, 3, 2]
    assert reps["replicate"].tolist() == [0, 1, 2]
    assert reps["log_mean"].iloc[2] == pytest.approx(math.log(2.0)) and reps["log_var"].iloc[2] == 0.0
    p = summarize(rows).iloc[0]
    assert p["replicates"] == 3 and p["repeats"] == 8 and p["ci_coverage"] == 0.95
    assert p["median_s"] == pytest.approx((2.0 * 6.0 * 2.0) ** (1 / 3), rel=1e-15)
    assert p["ci_lo_s"] < p["median_s"] < p["ci_hi_s"]


def test_replicate_zero_of_two_campaigns_is_two_replicates_and_order_follows_the_campaign() -> None:
    rows = make_rows({(1, 64): [1.0, 3.0, 4.0, 8.0]}).assign(replicate=0, campaign=["b", "b", "a", "a"])
    reps = replicate_medians(rows)
    assert reps["median_s"].tolist() == [6.0, 2.0]  # campaign a first
    assert summarize(rows).iloc[0]["replicates"] == 2
    assert summarize(rows[rows["campaign"] == "a"]).iloc[0]["replicates"] == 1


def test_variance_components_pool_the_points_rows_for_their_median() -> None:
    rows = make_rows({(1, 64): [1.0, 2.0, 4.0, 4.0]}).assign(replicate=[0, 0, 1, 1])
    comps = variance_components(rows)
    assert comps["median_s"].tolist() == [3.0] and comps["replicates"].tolist() == [2]
    assert comps["t1_sq"].iloc[0] == pytest.approx(0.5 * math.log(2.0) ** 2 / 2)


def test_missing_dtype_and_d_columns_are_no_key() -> None:
    rows = make_rows({(1, 64): [1.0, 2.0]}).drop(columns=["dtype", "d"])
    s = summarize(rows)
    assert "dtype" not in s.columns and "d" not in s.columns and len(s) == 1 and s.iloc[0]["median_s"] == 1.5


def test_missing_key_values_are_a_group_of_their_own_sorted_last() -> None:
    """None and NaN in a key column are one missing value, after every value;
    a nullable integer column keeps its dtype."""
    rows = pd.concat([make_rows({(1, 64): [1.0, 3.0]}, variant=None, d=None),
                      make_rows({(1, 64): [5.0]}, variant=float("nan"), d=None),
                      make_rows({(1, 64): [2.0]}, variant="b", d=32),
                      make_rows({(1, 64): [4.0]}, variant="a", d=64)], ignore_index=True)
    rows["d"] = rows["d"].astype("Int64")
    s = summarize(rows)
    assert s["variant"].tolist()[:2] == ["a", "b"] and s["variant"].iloc[2:].isna().all()
    assert len(s) == 3 and str(s["d"].dtype) == "Int64"
    missing = s[s["variant"].isna()]
    assert missing["repeats"].tolist() == [3] and missing["median_s"].tolist() == [3.0]


def test_output_is_sorted_by_the_key_columns_then_threads_then_n() -> None:
    """Text by code point (upper case before lower case before accents), numbers as numbers."""
    rows = pd.concat([make_rows({(t, n): [1.0]}, cluster=c) for c in ("é", "b", "B", "a")
                      for t in (16, 2) for n in (1000, 64)], ignore_index=True)
    s = summarize(rows)
    assert s["cluster"].tolist() == ["B"] * 4 + ["a"] * 4 + ["b"] * 4 + ["é"] * 4
    assert s["threads"].tolist()[:4] == [2, 2, 16, 16] and s["n"].tolist()[:4] == [64, 1000, 64, 1000]


def test_an_empty_frame_has_an_empty_summary() -> None:
    s = summarize(make_rows({(1, 64): [1.0]}).iloc[:0])
    assert s.empty and {"median_s", "ci_lo_s", "ci_hi_s", "repeats", "replicates"} <= set(s.columns)


def test_a_forked_child_summarises_with_a_database_of_its_own() -> None:
    """The frames share one DuckDB database per process; a fork copies it
    without its threads, so the child must open its own (else it waits on
    threads that do not exist)."""
    import os
    import signal
    import time

    rows = make_rows({(1, 64): [3.0, 1.0, 2.0]})
    assert summarize(rows).iloc[0]["median_s"] == 2.0  # the parent's database exists
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os._exit(0 if summarize(rows).iloc[0]["median_s"] == 2.0 else 3)
    deadline = time.monotonic() + 120
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0
