"""How many threads to use: speedup, efficiency, best thread count, the penalty
of running at the maximum, thread-doubling penalties at NUMA and core
boundaries, and crossovers between thread counts (docs/design.md#metrics).

All functions take results or their summary (medians over repeats) and work on
matched (group, n) cells; a group without the thread count a metric needs is
omitted from that metric, never guessed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.frames import group_codes
from analysis.limits import superlinear
from analysis.schema import group_columns
from analysis.summary import ensure_summary

_CELL = ["_gid", "n"]
CROSSOVER_COLUMNS = ("threads_a", "threads_b", "crossed", "n_before", "n_at", "within_noise")


def _with_gid(df: pd.DataFrame) -> pd.DataFrame:
    """Summary with an integer `_gid` per group (threads and n excluded)."""
    summary = ensure_summary(df).copy()
    summary["_gid"], _ = group_codes(summary, group_columns(summary))
    return summary


def _overlap(lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray) -> np.ndarray:
    """True where two intervals overlap: the difference is inside the noise."""
    return (lo_a <= hi_b) & (lo_b <= hi_a)


def _within_noise(s: pd.DataFrame, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows `a` and `b` of the summary `s` pairwise: their intervals overlap,
    or either is a single repeat, whose interval [t, t] is none (it overlaps
    nothing, yet shows no difference: a ratio on it is within_noise too)."""
    lo, hi = s["ci_lo_s"].to_numpy(), s["ci_hi_s"].to_numpy()
    single = s["repeats"].to_numpy() <= 1 if "repeats" in s.columns else np.zeros(len(s), dtype=bool)
    return _overlap(lo[a], hi[a], lo[b], hi[b]) | single[a] | single[b]


def speedup(df: pd.DataFrame) -> pd.DataFrame:
    """S(T) = t(1)/t(T) and E(T) = S(T)/T per (group, n, T).

    Cells whose group has no T = 1 measurement at that n are omitted.
    Output: group columns, `n`, `threads`, `median_s`, `speedup`, `efficiency`,
    `superlinear` (efficiency above analysis.limits.SUPERLINEAR: not a result).
    """
    s = _with_gid(df)
    base = s.loc[s["threads"] == 1, _CELL + ["median_s"]].rename(columns={"median_s": "_t1"})
    merged = s.merge(base, on=_CELL, how="inner")
    out = merged[group_columns(s) + ["n", "threads", "median_s"]].copy()
    out["speedup"] = merged["_t1"].to_numpy() / merged["median_s"].to_numpy()
    out["efficiency"] = out["speedup"] / out["threads"]
    out["superlinear"] = superlinear(out["efficiency"])
    return out.reset_index(drop=True)


def best_threads(df: pd.DataFrame) -> pd.DataFrame:
    """T*(n) = argmin_T t(T, n) and the max-thread penalty t(Tmax, n)/t(T*, n).

    Ties go to the smaller thread count (fewer cores for the same time).
    `penalty_within_noise` says the intervals at Tmax and T* overlap, i.e. the
    penalty is not distinguishable from 1. Output: group columns, `n`,
    `best_threads`, `t_best`, `max_threads`, `t_max_threads`,
    `max_thread_penalty`, `penalty_within_noise`.
    """
    s = _with_gid(df)
    n, _ = group_codes(s, ["n"])  # a code per size: a NULL n (no problem size) is one cell, not one per row
    gid, thr = s["_gid"].to_numpy(), s["threads"].to_numpy()
    t = s["median_s"].to_numpy()
    by_time = np.lexsort((thr, t, n, gid))
    by_thr = np.lexsort((-thr, n, gid))
    best = _first_per_cell(by_time, gid, n)
    top = _first_per_cell(by_thr, gid, n)
    out = s.iloc[best][group_columns(s) + ["n"]].reset_index(drop=True)
    out["best_threads"] = thr[best]
    out["t_best"] = t[best]
    out["max_threads"] = thr[top]
    out["t_max_threads"] = t[top]
    out["max_thread_penalty"] = t[top] / t[best]
    out["penalty_within_noise"] = _within_noise(s, top, best)
    return out


def _first_per_cell(order: np.ndarray, gid: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Row positions of the first row of each (gid, n) cell in `order`."""
    g, nn = gid[order], n[order]
    first = np.r_[True, (g[1:] != g[:-1]) | (nn[1:] != nn[:-1])][: len(order)]  # none without rows
    return order[first]


def crossovers(df: pd.DataFrame) -> pd.DataFrame:
    """For every pair a < b of thread counts: the first n with t(b) < t(a).

    Only sizes measured at both a and b count. Reported as the bracket
    (`n_before`, `n_at`): `n_before` is the previous such n, NaN when b is
    already faster at the first n; both NaN when b never wins (`crossed` False).
    `within_noise` says the two intervals overlap at `n_at`.
    Output: group columns, `threads_a`, `threads_b`, `crossed`, `n_before`,
    `n_at`, `within_noise`. A program without a problem size (NULL n) has no
    sizes to cross at: its rows are left out.
    """
    s = _with_gid(df)
    s = s[s["n"].notna()]
    found = first_crossings(s, "threads")
    if found.empty:
        return pd.DataFrame(columns=group_columns(s) + list(CROSSOVER_COLUMNS))
    keys = s.drop_duplicates("_gid").set_index("_gid")[group_columns(s)]
    out = keys.loc[found["_gid"].to_numpy()].reset_index(drop=True)
    out["threads_a"] = found["a"].to_numpy()
    out["threads_b"] = found["b"].to_numpy()
    for column in CROSSOVER_COLUMNS[2:]:
        out[column] = found[column].to_numpy()
    return out


def first_crossings(s: pd.DataFrame, axis: str) -> pd.DataFrame:
    """The crossover rule over any axis and direction, for every pair a < b of
    `axis` values of one series (`_gid`) over n: the bracket (`n_before`,
    `n_at`) of the first n, among those measured at both, where b is better
    than a, `crossed` and `within_noise` (see crossovers). `s`: points with
    `_gid`, `n` (none null), `axis`, `median_s`, `ci_lo_s`, `ci_hi_s`, and a
    figure's `higher_is_better` where b is better by a higher value (a time,
    or a frame without the column: by a lower one). Output: `_gid`, `a`, `b`,
    `crossed`, `n_before`, `n_at`, `within_noise`, one row per pair."""
    cols = _CELL + [axis, "median_s", "ci_lo_s", "ci_hi_s"]
    points = s[cols].assign(
        _row=np.arange(len(s)),
        _higher=s["higher_is_better"].to_numpy(bool) if "higher_is_better" in s.columns else False,
    )
    pairs = points.merge(points.drop(columns="_higher"), on=_CELL, suffixes=("_a", "_b"))
    pairs = pairs[pairs[f"{axis}_a"] < pairs[f"{axis}_b"]]
    if pairs.empty:
        return pd.DataFrame(columns=["_gid", "a", "b", *CROSSOVER_COLUMNS[2:]])
    pairs = pairs.sort_values(["_gid", f"{axis}_a", f"{axis}_b", "n"], kind="stable")
    pid, _ = group_codes(pairs, ["_gid", f"{axis}_a", f"{axis}_b"])
    n = pairs["n"].to_numpy(dtype=float)
    med_a, med_b = pairs["median_s_a"].to_numpy(), pairs["median_s_b"].to_numpy()
    better = np.where(pairs["_higher"].to_numpy(bool), med_b > med_a, med_b < med_a)
    starts = np.flatnonzero(np.r_[True, pid[1:] != pid[:-1]])
    # Position of the first better row per pair: min over rows where better.
    pos = np.where(better, np.arange(len(pid)), len(pid))
    first = np.minimum.reduceat(pos, starts)
    crossed = first < len(pid)
    safe = np.where(crossed, first, starts)
    n_at = np.where(crossed, n[safe], np.nan)
    has_prev = crossed & (safe > starts)
    n_before = np.where(has_prev, n[np.maximum(safe - 1, 0)], np.nan)
    rows_a, rows_b = pairs["_row_a"].to_numpy(), pairs["_row_b"].to_numpy()
    noise = _within_noise(s, rows_a[safe], rows_b[safe]) & crossed
    heads = pairs.iloc[starts]
    return pd.DataFrame(
        {
            "_gid": heads["_gid"].to_numpy(),
            "a": heads[f"{axis}_a"].to_numpy(),
            "b": heads[f"{axis}_b"].to_numpy(),
            "crossed": crossed,
            "n_before": n_before,
            "n_at": n_at,
            "within_noise": noise,
        }
    )
