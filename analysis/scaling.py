"""How cost grows with n: local exponents between consecutive sizes and a fitted
power law with its 95% interval (docs/design.md#metrics).

Both work per (group, threads) series of medians sorted by n. A local exponent
near 1 where a fit over the whole range says 2 is exactly the kind of masked
scaling (cold start, cache regimes) the papers ran into, so both are reported.
A program without a problem size (NULL n) has no exponent over n: its points
are left out of both.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.dist import t_quantile
from analysis.frames import group_codes
from analysis.schema import group_columns
from analysis.summary import ensure_summary


def _sized(summary: pd.DataFrame) -> pd.DataFrame:
    """The points that have a problem size."""
    return summary[summary["n"].notna().to_numpy()]


def _series(summary: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """Summary sorted by (group, threads, n) and the series code of each row."""
    keys = group_columns(summary) + ["threads"]
    codes, _ = group_codes(summary, keys)
    order = np.lexsort((summary["n"].to_numpy(), codes))
    return summary.iloc[order].reset_index(drop=True), codes[order]


def local_exponents(df: pd.DataFrame) -> pd.DataFrame:
    """log(t(n_hi)/t(n_lo)) / log(n_hi/n_lo) for each pair of consecutive n.

    Input: results or their summary. Output: group columns, `threads`, `n_lo`,
    `n_hi`, `t_lo`, `t_hi` (medians, s) and `exponent`; one row per pair.
    """
    summary, series = _series(_sized(ensure_summary(df)))
    same = series[1:] == series[:-1]
    hi = np.flatnonzero(same) + 1
    lo = hi - 1
    n = summary["n"].to_numpy(dtype=float)
    t = summary["median_s"].to_numpy(dtype=float)
    out = summary.iloc[hi][group_columns(summary) + ["threads"]].reset_index(drop=True)
    out["n_lo"] = summary["n"].to_numpy()[lo]
    out["n_hi"] = summary["n"].to_numpy()[hi]
    out["t_lo"] = t[lo]
    out["t_hi"] = t[hi]
    out["exponent"] = np.log(t[hi] / t[lo]) / np.log(n[hi] / n[lo])
    return out


def fitted_exponents(df: pd.DataFrame, n_min: float | None = None,
                     n_max: float | None = None) -> pd.DataFrame:
    """Least-squares slope of log t on log n per (group, threads), with 95% CI.

    The interval is slope ± t_{0.975, p-2} · SE(slope) (Student t with p-2
    degrees of freedom for p points); with two points it is NaN (no residual
    to estimate the noise from). `n_min`/`n_max` restrict the fitted range.
    Output: group columns, `threads`, `slope`, `stderr`, `ci_lo`, `ci_hi`,
    `n_min`, `n_max`, `points`.
    """
    summary = _sized(ensure_summary(df))
    mask = np.ones(len(summary), dtype=bool)
    if n_min is not None:
        mask &= summary["n"].to_numpy() >= n_min
    if n_max is not None:
        mask &= summary["n"].to_numpy() <= n_max
    summary, series = _series(summary[mask])
    x = np.log(summary["n"].to_numpy(dtype=float))
    y = np.log(summary["median_s"].to_numpy(dtype=float))
    points = np.bincount(series).astype(float)
    x_c = x - (np.bincount(series, weights=x) / points)[series]
    y_c = y - (np.bincount(series, weights=y) / points)[series]
    sxx = np.bincount(series, weights=x_c * x_c)
    sxy = np.bincount(series, weights=x_c * y_c)
    syy = np.bincount(series, weights=y_c * y_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = sxy / sxx
        resid = np.clip(syy - slope * sxy, 0.0, None)
        dof = points - 2
        stderr = np.where(dof > 0, np.sqrt(resid / np.where(dof > 0, dof, 1) / sxx), np.nan)
        half = t_quantile(0.975, np.where(dof > 0, dof, 1)) * stderr
    firsts = np.flatnonzero(np.r_[True, series[1:] != series[:-1]])[:len(series)]  # none without rows
    out = summary.iloc[firsts][group_columns(summary) + ["threads"]].reset_index(drop=True)
    out["slope"] = slope
    out["stderr"] = stderr
    out["ci_lo"] = slope - half
    out["ci_hi"] = slope + half
    n_vals = summary["n"].to_numpy()
    out["n_min"] = n_vals[firsts]
    lasts = np.r_[firsts[1:] - 1, len(series) - 1] if len(series) else firsts
    out["n_max"] = n_vals[lasts]
    out["points"] = points.astype("int64")
    return out
