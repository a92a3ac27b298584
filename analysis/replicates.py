"""Two-level estimates: repeats within a replicate (one job), replicates
(independent jobs of one configuration, campaign.planning.replicates) within a point.

Why two levels: the repeats of one job are measured back to back under one
state of the machine, so their spread cannot show a drift between jobs;
identical reruns on a shared VM moved 1.8x while each run's repeats agreed
(BENCHMARKS.md §5). Kalibera and Jones ("Rigorous Benchmarking in Reasonable
Time", ISMM 2013) put the interval over the highest level that is repeated;
here that is the replicate.

Per point with R >= 2 replicates:
- each replicate's median over its repeats (robust to the one-sided outliers
  of shared nodes, as analysis/summary.py argues);
- the point estimate: the geometric mean of the replicate medians; its
  interval: a Student t-interval on their logarithms (R - 1 degrees of
  freedom, nominal 95%). Logarithms because times are positive and ratios are
  what is compared; the t-interval because R is small (2-5) and a bootstrap
  over 3 values has 10 distinct resamples and under-covers.
- NEW/BASE: the difference of the two log means with a Welch interval
  (Welch-Satterthwaite degrees of freedom), which uses both sides' spread
  once instead of the product of two intervals (half as wide at R = 3).

With one replicate there is no between-job spread: compare keeps the
within-run (order-statistic) interval, says so, and says how many
replicates per side would give a verdict (`needed`), from the other side's
between-replicate spread when it has one.

Planning (`campaign plan-repeats`, Kalibera & Jones §4): with the pilot's
variance components on the log scale, T1^2 (repeats within a replicate,
unbiased: the pooled within-replicate variance) and T2^2 = S2^2 - T1^2/m
(replicates; S2^2 the variance of the replicate means, m repeats each), and
the costs c1 (one more repeat) and c2 (one more job: start, warm-up, first
call), the repeats per replicate that minimise machine time for a given
interval width are m* = ceil(sqrt(c2 T1^2 / (c1 T2^2))); the replicates are
then the fewest R whose interval reaches the width:
t(R) * sqrt((T2^2 + T1^2 / m*) / R) <= width.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.dist import t_quantile
from analysis.frames import group_codes
from analysis.point_stats import REPLICATE, PointStats, of_frame, point_columns, replicate_codes

LEVEL = 0.95
MAX_NEEDED = 1000  # replicates beyond this are reported as this (the machine is too noisy to plan)
MAX_REPEATS = 100  # repeats per job planned at most (replicates showing no spread of their own ask for "many")


def _quantile(df: np.ndarray | float) -> np.ndarray:
    return t_quantile(0.5 + LEVEL / 2, df)


def replicate_medians(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (point, replicate): the replicate's median time `median_s`,
    its mean log time `log_mean`, its log variance `log_var` (ddof 1; NaN for
    one repeat) and its `repeats`, from analysis.point_stats's SQL. Rows
    without a `replicate` column are one replicate (0); see replicate_codes."""
    return _replicates(results, of_frame(results, replicates=True, moments=True)).drop(columns="_point")


def _replicates(results: pd.DataFrame, stats: PointStats) -> pd.DataFrame:
    """`stats.reps` with each point's columns (its fastest row's values) and
    the replicate's code as `replicate`, the point's row in `stats.points` as `_point`."""
    reps = stats.reps
    assert reps is not None  # (asked for: of_frame(replicates=True))
    keys = results[point_columns(results)].iloc[stats.points.column("first").to_numpy()]
    out = replicate_frame(keys.reset_index(drop=True), reps)
    out.insert(len(keys.columns), REPLICATE, reps.column("rep").to_numpy())
    out["_point"] = reps.column("p").to_numpy()
    return out


def replicate_frame(keys: pd.DataFrame, reps: Any) -> pd.DataFrame:
    """The per-replicate rows of analysis.point_stats (`reps`, whose `p` is
    the point's row in `keys`) with the point's columns from `keys`, and their
    `median_s`, `repeats` (and `log_mean`, `log_var` where made)."""
    out = keys.iloc[reps.column("p").to_numpy()].reset_index(drop=True)
    for name in ("median_s", "log_mean", "log_var", "repeats"):
        if name in reps.column_names:
            out[name] = reps.column(name).to_numpy()
    return out


def between(results: pd.DataFrame) -> pd.DataFrame:
    """One row per point: `replicates`, the geometric mean of the replicate
    medians `center_s`, the standard deviation of their logs `replicate_log_sd`
    (NaN below two replicates), and the t-interval `lo_s`, `hi_s`
    (NaN below two replicates)."""
    return between_medians(replicate_medians(results), point_columns(results))


_BETWEEN = ("replicates", "center_s", "replicate_log_sd", "lo_s", "hi_s")


def between_medians(reps: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """between() from the replicates' medians (`reps`: one row per point
    and replicate, `median_s`, in the order of `cols` then the replicate)."""
    reps = reps.copy()
    reps["_lm"] = np.log(reps["median_s"].to_numpy(dtype=float))
    grouped = reps.groupby(cols, sort=True, dropna=False)["_lm"]
    out = grouped.size().rename("replicates").astype("int64").to_frame()
    mean, sd = grouped.mean(), grouped.std(ddof=1)
    count = out["replicates"].to_numpy()
    half = _quantile(np.maximum(count - 1, 1)) * sd.to_numpy(dtype=float) / np.sqrt(count)
    out["center_s"] = np.exp(mean.to_numpy(dtype=float))
    out["replicate_log_sd"] = np.where(count >= 2, sd.to_numpy(dtype=float), np.nan)
    out["lo_s"] = np.where(count >= 2, np.exp(mean.to_numpy(dtype=float) - half), np.nan)
    out["hi_s"] = np.where(count >= 2, np.exp(mean.to_numpy(dtype=float) + half), np.nan)
    return out.reset_index()


def add_between(summary: pd.DataFrame, results: pd.DataFrame, found: pd.DataFrame | None = None) -> pd.DataFrame:
    """`summary` (analysis/summary.py's, one row per point) with `replicates`
    and `replicate_log_sd`; where a point has >= 2 replicates its
    `median_s` is the geometric mean of the replicate medians and its
    interval the between-replicate t-interval (`ci_coverage` then the
    nominal 95%). Points of one replicate keep the within-run interval.
    `found`: between() of the rows, when made elsewhere (from aggregates;
    `results` is then not read)."""
    if found is None:
        if REPLICATE not in results or not len(results) or len(np.unique(replicate_codes(results))) < 2:
            found = None
        else:
            found = between(results)
    if found is None:
        summary["replicates"] = np.ones(len(summary), dtype="int64")
        summary["replicate_log_sd"] = np.nan
        return summary
    summary = summary.copy()
    cols = [c for c in found.columns if c in summary.columns and c not in _BETWEEN]
    codes, _ = group_codes(pd.concat([summary[cols], found[cols]], ignore_index=True), cols)
    where = pd.Series(np.arange(len(found)), index=codes[len(summary):])
    take = where.reindex(codes[:len(summary)]).to_numpy()
    missing = np.isnan(take)
    index = np.where(missing, 0, take).astype("int64")
    count = np.where(missing, 1, found["replicates"].to_numpy()[index]).astype("int64")
    use = count >= 2
    for col, src in (("median_s", "center_s"), ("ci_lo_s", "lo_s"), ("ci_hi_s", "hi_s")):
        summary[col] = np.where(use, found[src].to_numpy(dtype=float)[index], summary[col].to_numpy(dtype=float))
    summary["ci_coverage"] = np.where(use, LEVEL, summary["ci_coverage"].to_numpy(dtype=float))
    summary["replicates"] = count
    summary["replicate_log_sd"] = np.where(use, found["replicate_log_sd"].to_numpy(dtype=float)[index], np.nan)
    return summary


def welch_ratio(t_base: np.ndarray, sd_base: np.ndarray, r_base: np.ndarray, t_new: np.ndarray,
                sd_new: np.ndarray, r_new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NEW/BASE of two geometric means of replicate medians and its Welch
    interval on the log scale (LEVEL). sd: the logs' standard deviation, r:
    the replicates; both r >= 2 (else the interval is NaN)."""
    t_base, t_new = np.asarray(t_base, dtype=float), np.asarray(t_new, dtype=float)
    vb = np.asarray(sd_base, dtype=float) ** 2 / np.asarray(r_base, dtype=float)
    vn = np.asarray(sd_new, dtype=float) ** 2 / np.asarray(r_new, dtype=float)
    se = np.sqrt(vb + vn)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vb + vn) ** 2 / (vb ** 2 / (np.asarray(r_base) - 1) + vn ** 2 / (np.asarray(r_new) - 1))
    # identical replicate medians on both sides: no spread, the interval is the point
    df = np.where(np.isfinite(df) & (df > 0), df, np.minimum(np.asarray(r_base), np.asarray(r_new)) - 1)
    log_ratio = np.log(t_new) - np.log(t_base)
    half = _quantile(np.maximum(df, 1)) * se
    return np.exp(log_ratio), np.exp(log_ratio - half), np.exp(log_ratio + half)


def replicates_needed(sd: np.ndarray | float, threshold: float) -> np.ndarray:
    """Per point, the fewest replicates per side (>= 2) whose Welch interval of
    NEW/BASE, at a between-replicate log spread `sd` on both sides, is no
    wider than the threshold on either side: t(2R - 2) * sd * sqrt(2 / R) <=
    log(1 + threshold). 0 where sd is unknown (NaN); MAX_NEEDED at most."""
    sd = np.atleast_1d(np.asarray(sd, dtype=float))
    width = math.log1p(threshold)
    out = np.zeros(len(sd), dtype="int64")
    known = np.isfinite(sd)
    if not known.any():
        return out
    r = np.arange(2, MAX_NEEDED + 1)
    factor = _quantile(2 * r - 2) * np.sqrt(2.0 / r)  # increasing sd * factor: first R under the width
    limit = np.where(sd[known] > 0, width / np.where(sd[known] > 0, sd[known], 1), np.inf)
    first = np.searchsorted(-factor, -limit, side="left")  # factor decreases with R
    out[known] = np.minimum(r[np.minimum(first, len(r) - 1)], MAX_NEEDED)
    return out


def variance_components(results: pd.DataFrame) -> pd.DataFrame:
    """Per point, Kalibera & Jones's unbiased components on the log scale:
    `t1_sq` (repeats within a replicate: the mean within-replicate variance),
    `t2_sq` (replicates: S2^2 - t1_sq / m, at least 0), the pilot's
    `replicates`, mean `repeats` per replicate, and `median_s` (the pooled
    median time of one repeat: the summary's median of its rows pooled)."""
    stats = of_frame(results, replicates=True, moments=True)
    reps = _replicates(results, stats)
    grouped = reps.groupby(reps.pop("_point").to_numpy(), sort=True)  # in point order
    out = results[point_columns(results)].iloc[stats.points.column("first").to_numpy()].reset_index(drop=True)
    out["replicates"] = grouped.size().to_numpy().astype("int64")
    out["repeats"] = grouped["repeats"].mean().to_numpy()
    out["t1_sq"] = grouped["log_var"].mean().to_numpy()
    s2 = grouped["log_mean"].var(ddof=1).to_numpy()
    out["t2_sq"] = np.maximum(s2 - np.nan_to_num(out["t1_sq"].to_numpy()) / out["repeats"].to_numpy(), 0.0)
    out["median_s"] = stats.points.column("median_s").to_numpy()
    return out


def optimal_repeats(c1: float, c2: float, t1_sq: float, t2_sq: float) -> int:
    """K&J's repeats per replicate at least machine time: ceil(sqrt(c2 T1^2 / (c1 T2^2))),
    1 when repeats vary not at all, MAX_REPEATS when replicates do not (only repeats help)."""
    if not t1_sq > 0:
        return 1
    if not t2_sq > 0 or not c1 > 0:
        return MAX_REPEATS
    return int(min(MAX_REPEATS, max(1, math.ceil(math.sqrt(c2 * t1_sq / (c1 * t2_sq))))))


def replicates_for(width: float, t1_sq: float, t2_sq: float, repeats: int, *, sides: int = 2) -> int:
    """The fewest replicates R >= 2 with t(df) * sqrt(sides * (T2^2 + T1^2/m) / R) <= log(1 + width)
    (sides 2: the interval of a ratio of two campaigns run alike, df = 2R - 2; 1: one point, df = R - 1)."""
    var = max(t2_sq, 0.0) + max(t1_sq, 0.0) / max(repeats, 1)
    target = math.log1p(width)
    for r in range(2, MAX_NEEDED + 1):
        df = sides * r - sides
        if float(_quantile(df)) * math.sqrt(sides * var / r) <= target:
            return r
    return MAX_NEEDED


def width_at(replicates: int, t1_sq: float, t2_sq: float, repeats: int, *, sides: int = 2) -> float:
    """The half-width replicates_for solves for, at a given R: what a plan
    capped at R replicates can resolve (expm1 of t(df) * sqrt(sides * var / R))."""
    var = max(t2_sq, 0.0) + max(t1_sq, 0.0) / max(repeats, 1)
    r = max(replicates, 2)
    return math.expm1(float(_quantile(sides * r - sides)) * math.sqrt(sides * var / r))
