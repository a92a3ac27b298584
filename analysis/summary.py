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

import numpy as np
import pandas as pd

from analysis.cost_model import add_cost_columns
from analysis.point_stats import of_frame, point_columns, rank_and_coverage
from analysis.replicates import add_between, between_medians, replicate_frame

__all__ = ["ALLOC_COLUMN", "ensure_summary", "is_summary", "rank_and_coverage", "summarize", "with_statistics"]

# Optional: the cores allocated to the job that measured a row (campaign
# records it with each attempt); threads above it oversubscribe on purpose.
ALLOC_COLUMN = "alloc_cpus"


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
    analysis/replicates.py). Sorted by the key columns, threads, n. The order
    statistics are analysis.point_stats's SQL over the rows; the key columns
    and flops, bytes, allocation are the fastest repeat's (ties: the earlier row).
    """
    cols = point_columns(results)
    stats = of_frame(results, pooled=False)  # add_between gives a point of several replicates their estimate
    keep = cols + [c for c in ("flops", "bytes", ALLOC_COLUMN) if c in results.columns]
    points = results.iloc[stats.points.column("first").to_numpy()][keep].reset_index(drop=True)
    median, lo, hi, m = (stats.points.column(c).to_numpy() for c in ("median_s", "lo", "hi", "m"))
    found = None if stats.reps is None else between_medians(replicate_frame(points[cols], stats.reps), cols)
    return add_between(add_cost_columns(with_statistics(points, median, lo, hi, m)), results, found)


def with_statistics(points: pd.DataFrame, median: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    counts: np.ndarray) -> pd.DataFrame:
    """`points` with the median `0.5 * (x_((m+1)//2) + x_(m//2+1))` of its m
    repeats, the interval [x_(r), x_(m-r+1)] (r: rank_and_coverage), its
    coverage, `repeats` and `single_repeat`: the one set of summary columns,
    whether the rows were a DataFrame or the result files
    (campaign.results.points); the order statistics are analysis.point_stats's."""
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
