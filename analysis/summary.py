"""Medians over repeats, with a distribution-free 95% interval of the median.

Every metric starts here (docs/design.md#metrics: "medians over repeats first"). Timings on
shared nodes have outliers that are one-sided (a slow repeat, never a fast
one), so the interval is one of order statistics, not a t-interval on the
mean, which one outlier would drag and widen:

    [x_(r), x_(m-r+1)] with r the largest rank such that
    2 * P(Binomial(m, 1/2) <= r - 1) <= 0.05,

i.e. the classical sign-test interval for the median. With fewer than six
repeats no such r exists and the interval is [min, max], whose exact coverage
1 - 2^(1-m) (93.75% at m = 5) is reported in `ci_coverage` so nobody mistakes
it for 95%. A single repeat has the degenerate interval [t, t], coverage 0, and
is flagged `single_repeat`.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

from analysis.cost_model import add_cost_columns
from analysis.dist import sign_test_rank
from analysis.frames import group_codes
from analysis.replicates import add_between
from analysis.schema import group_columns

# Optional: the cores allocated to the job that measured a row (campaign
# records it with each attempt); threads above it oversubscribe on purpose.
ALLOC_COLUMN = "alloc_cpus"


@cache
def rank_and_coverage(m: int) -> tuple[int, float]:
    """Order-statistic rank r (1-based) of the interval and its exact coverage."""
    best, coverage = sign_test_rank(m, 0.05)
    return best, max(coverage, 0.0)


def is_summary(df: pd.DataFrame) -> bool:
    """True if `df` is already the output of `summarize`."""
    return "median_s" in df.columns


def ensure_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Metrics accept raw results or a summary; summarise only when needed."""
    return df if is_summary(df) else summarize(df)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, threads, n): median time over repeats and its interval.

    Columns: the group key columns, `threads`, `n`, `median_s`, `ci_lo_s`,
    `ci_hi_s` (interval of the median, see module doc), `ci_coverage` (its exact
    confidence level), `repeats`, `single_repeat`, `flops`, `bytes` (from the
    rows if given, else the cost model), `replicates` and `replicate_log_sd`
    (a point of >= 2 replicates takes its estimate and interval over them:
    analysis/replicates.py). Sorted by the key columns, threads, n.
    """
    cell_cols = group_columns(results) + ["threads", "n"]
    codes, _ = group_codes(results, cell_cols)
    times = results["time_s"].to_numpy(dtype=float)
    order = np.lexsort((times, codes))
    counts = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)[:len(counts)]  # none: no rows
    keep = cell_cols + [c for c in ("flops", "bytes", ALLOC_COLUMN) if c in results.columns]
    points = results.iloc[order[starts]][keep].reset_index(drop=True)
    return add_between(add_cost_columns(with_order_statistics(points, times[order], counts)), results)


def with_order_statistics(points: pd.DataFrame, sorted_t: np.ndarray, counts: np.ndarray) -> pd.DataFrame:
    """`points` (one row per point, the fastest repeat's) with the median,
    its interval and coverage, `repeats` and `single_repeat`, from each
    point's times sorted (`sorted_t`, the points' runs of `counts` one after
    another)."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    ranks = interval_ranks(counts)
    return with_statistics(points, 0.5 * (sorted_t[starts + (counts - 1) // 2] + sorted_t[starts + counts // 2]),
                           sorted_t[starts + ranks - 1], sorted_t[starts + counts - ranks], counts)


def interval_ranks(counts: np.ndarray) -> np.ndarray:
    """The interval's order-statistic rank r (1-based) of each count of repeats."""
    ranks = np.empty_like(counts)
    for m in np.unique(counts):
        ranks[counts == m] = rank_and_coverage(int(m))[0]
    return ranks


def with_statistics(points: pd.DataFrame, median: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    counts: np.ndarray) -> pd.DataFrame:
    """`points` with the median `0.5 * (x_((m+1)//2) + x_(m//2+1))` of its m
    repeats, the interval [x_(r), x_(m-r+1)] of interval_ranks, its coverage,
    `repeats` and `single_repeat`: the one set of summary columns, whether
    the order statistics were taken here or by DuckDB over the result files
    (campaign.results.points)."""
    counts = np.asarray(counts, dtype=np.int64)
    coverage = np.empty(len(counts), dtype=float)
    for m in np.unique(counts):
        coverage[counts == m] = rank_and_coverage(int(m))[1]
    out = points
    out["median_s"] = median
    out["ci_lo_s"] = lo
    out["ci_hi_s"] = hi
    out["ci_coverage"] = coverage
    out["repeats"] = counts.astype("int64")
    out["single_repeat"] = counts == 1
    return out
