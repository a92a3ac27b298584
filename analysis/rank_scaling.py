"""Scaling over ranks and nodes: strong and weak scaling, a fitted serial
fraction with its interval, and communication against computation
(docs/design.md#metrics, analysis/SCHEMA.md).

A series is one configuration (the group columns but `ranks`/`nodes`), its
threads per rank and n, measured at several points (total ranks, nodes). Its
baseline is the point with the fewest ranks (then nodes). Which view applies
depends on what n means, which only the program knows: a series is weak
scaling (n is the work of each rank) when its variant is `weak` or its
params hold `scaling=weak`, else strong scaling (n is the whole problem).

- strong: speedup = t(base) / t, efficiency = speedup · ranks_base / ranks
  (`node_efficiency` the same per node); Amdahl's t(P) = A + B/P fitted by
  least squares on the medians, serial fraction s = A / (A + B).
- weak: efficiency = t(base) / t, scaled speedup = (P / P_base) · t(base) / t;
  Gustafson's S = s + (1 - s)·P' (P' = P / P_base) fitted for s.
The interval of s is a percentile bootstrap over the repeats (each point's
repeats resampled with replacement, the medians refitted; a fixed seed, so a
report is reproducible). s is clipped to [0, 1]: noise can push the least
squares outside, which no serial fraction is; a time that does not fall with
P (B <= 0: oversubscribed ranks, say) is s = 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from analysis.frames import group_codes
from analysis.schema import group_columns
from analysis.summary import rank_and_coverage

SCALE = ("ranks", "nodes")
RESAMPLES = 2000
SEED = 0
STRONG_COLUMNS = ("threads", "n", "ranks", "nodes", "median_s", "ci_lo_s", "ci_hi_s", "repeats", "base_ranks",
                  "base_nodes", "speedup", "efficiency", "node_efficiency", "job_ids")
WEAK_COLUMNS = ("threads", "n", "ranks", "nodes", "median_s", "ci_lo_s", "ci_hi_s", "repeats", "base_ranks",
                "base_nodes", "efficiency", "scaled_speedup", "job_ids")
FIT_COLUMNS = ("threads", "n", "law", "points", "min_ranks", "max_ranks", "serial_fraction", "ci_lo", "ci_hi",
               "resamples", "single_repeat")
COMM_COLUMNS = ("threads", "n", "ranks", "nodes", "median_s", "compute_s", "comm_s", "comm_fraction", "repeats",
                "job_ids")


def _config_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in group_columns(df) if c not in SCALE]


def is_weak(variant: object, params: object) -> bool:
    """Weak scaling (n per rank): variant `weak` or `scaling=weak` among the params."""
    return str(variant) == "weak" or "scaling=weak" in str(params or "").split(",")


def _empty(columns: list[str], own: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(columns=[*columns, *own])


def _points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (series, ranks, nodes): median and repeats' times, job IDs."""
    cols = [*_config_columns(results), "threads", "n", *SCALE]
    frame = results.assign(ranks=results.get("ranks", 1), nodes=results.get("nodes", 1))
    codes, _ = group_codes(frame, cols)
    frame = frame.assign(_point=codes)
    rows = []
    for _, part in frame.groupby("_point", sort=True):
        times = np.sort(part["time_s"].to_numpy(dtype=float))
        first = part.iloc[0]
        jobs = sorted({str(j) for j in part["job_id"].dropna()}) if "job_id" in part else []
        m = len(times)
        rank = _order_rank(m)
        rows.append({**{c: first[c] for c in cols}, "median_s": float(np.median(times)),
                     "ci_lo_s": float(times[rank - 1]), "ci_hi_s": float(times[m - rank]), "repeats": m,
                     "job_ids": ",".join(jobs), "_times": times})
    return pd.DataFrame(rows)


def _order_rank(m: int) -> int:
    """The order-statistic rank of the median's interval (analysis/summary.py)."""
    return rank_and_coverage(m)[0]


def _series(points: pd.DataFrame) -> list[pd.DataFrame]:
    """Each series' points with more than one (ranks, nodes), sorted from its baseline."""
    keys = [*_config_columns(points), "threads", "n"]
    codes, _ = group_codes(points, keys)
    out = []
    for code in np.unique(codes):
        part = points[codes == code].sort_values(["ranks", "nodes"]).reset_index(drop=True)
        if len(part) > 1:
            out.append(part)
    return out


def _scaling_frames(results: pd.DataFrame) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """(strong series, weak series) of the rows that have a rank count."""
    if "ranks" not in results.columns or not len(results):
        return [], []
    strong: list[pd.DataFrame] = []
    weak: list[pd.DataFrame] = []
    for part in _series(_points(results)):
        first = part.iloc[0]
        (weak if is_weak(first["variant"], first.get("params", "")) else strong).append(part)
    return strong, weak


def _per_point(series: list[pd.DataFrame], results: pd.DataFrame, columns: tuple[str, ...],
               measures: Callable[[pd.DataFrame, pd.Series], dict[str, Any]]) -> pd.DataFrame:
    """Each series' points against its first (the baseline): `measures(part, base)` gives the
    columns that differ between strong and weak scaling."""
    cols = _config_columns(results)
    if not series:
        return _empty(cols, columns)
    frames = [part.assign(base_ranks=part.iloc[0]["ranks"], base_nodes=part.iloc[0]["nodes"],
                          **measures(part, part.iloc[0])) for part in series]
    return pd.concat(frames, ignore_index=True)[[*cols, *columns]]


def _strong(part: pd.DataFrame, base: pd.Series) -> dict[str, Any]:
    speedup = base["median_s"] / part["median_s"]
    return {"speedup": speedup, "efficiency": speedup * base["ranks"] / part["ranks"],
            "node_efficiency": speedup * base["nodes"] / part["nodes"]}


def _weak(part: pd.DataFrame, base: pd.Series) -> dict[str, Any]:
    efficiency = base["median_s"] / part["median_s"]
    return {"efficiency": efficiency, "scaled_speedup": efficiency * part["ranks"] / base["ranks"]}


def strong_scaling(results: pd.DataFrame) -> pd.DataFrame:
    """Speedup and efficiency against the baseline, per point of each strong series."""
    return _per_point(_scaling_frames(results)[0], results, STRONG_COLUMNS, _strong)


def weak_scaling(results: pd.DataFrame) -> pd.DataFrame:
    """Efficiency t(base)/t and scaled speedup, per point of each weak series."""
    return _per_point(_scaling_frames(results)[1], results, WEAK_COLUMNS, _weak)


def amdahl_fraction(ranks: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Serial fraction of t(P) = A + B/P by least squares, per row of `times`
    (shape (k, points) or (points,)); NaN with fewer than two distinct P."""
    x = 1.0 / np.asarray(ranks, dtype=float)
    t = np.atleast_2d(np.asarray(times, dtype=float))
    xc = x - x.mean()
    sxx = float(xc @ xc)
    if sxx == 0.0:
        return np.full(len(t), np.nan)
    slope = (t - t.mean(axis=1, keepdims=True)) @ xc / sxx
    intercept = t.mean(axis=1) - slope * x.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        s = intercept / (intercept + slope)
    # no parallel part (time flat or growing with P): all of it serial; superlinear (A < 0): none
    return np.where(slope <= 0, 1.0, np.clip(s, 0.0, 1.0))


def gustafson_fraction(ranks: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Serial fraction of the scaled speedup S = s + (1 - s)·P' (P' = P / P[0],
    S = P' · t[0] / t) by least squares through S(1) = 1, per row of `times`."""
    p = np.asarray(ranks, dtype=float) / float(ranks[0])
    t = np.atleast_2d(np.asarray(times, dtype=float))
    scaled = p * t[:, :1] / t
    dp = p - 1.0
    denom = float(dp @ dp)
    if denom == 0.0:
        return np.full(len(t), np.nan)
    return np.clip(((p - scaled) @ dp) / denom, 0.0, 1.0)


def _bootstrap(part: pd.DataFrame, fit: object, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of the fitted fraction over resampled repeats."""
    medians = np.empty((RESAMPLES, len(part)))
    for j, times in enumerate(part["_times"]):
        draw = rng.integers(0, len(times), size=(RESAMPLES, len(times)))
        medians[:, j] = np.median(times[draw], axis=1)
    fractions = fit(part["ranks"].to_numpy(), medians)  # type: ignore[operator]
    fractions = fractions[np.isfinite(fractions)]
    if not len(fractions):
        return float("nan"), float("nan")
    lo, hi = np.percentile(fractions, [2.5, 97.5])
    return float(lo), float(hi)


def serial_fractions(results: pd.DataFrame) -> pd.DataFrame:
    """Amdahl's serial fraction of each strong series, Gustafson's of each weak one, with intervals."""
    strong, weak = _scaling_frames(results)
    cols = _config_columns(results)
    rng = np.random.default_rng(SEED)
    rows = []
    for law, fit, series in (("amdahl", amdahl_fraction, strong), ("gustafson", gustafson_fraction, weak)):
        for part in series:
            ranks = part["ranks"].to_numpy()
            if len(np.unique(ranks)) < 2:
                continue  # the same rank count on more nodes: no fraction to fit
            s = float(fit(ranks, part["median_s"].to_numpy())[0])
            lo, hi = _bootstrap(part, fit, rng)
            first = part.iloc[0]
            rows.append({**{c: first[c] for c in cols}, "threads": first["threads"], "n": first["n"], "law": law,
                         "points": len(part), "min_ranks": int(ranks.min()), "max_ranks": int(ranks.max()),
                         "serial_fraction": s, "ci_lo": lo, "ci_hi": hi, "resamples": RESAMPLES,
                         "single_repeat": bool((part["repeats"] == 1).any())})
    return pd.DataFrame(rows, columns=[*cols, *FIT_COLUMNS])


def comm_compute(results: pd.DataFrame) -> pd.DataFrame:
    """Per point, the medians of the program's own `compute_s` and `comm_s`
    (the slowest rank's, as the program reports them) and comm's share of
    their sum (NaN where the program times communication only)."""
    cols = _config_columns(results)
    if "comm_s" not in results.columns or not len(results):
        return _empty(cols, COMM_COLUMNS)
    rows = results[pd.to_numeric(results["comm_s"], errors="coerce").notna().to_numpy()]
    if not len(rows):
        return _empty(cols, COMM_COLUMNS)
    rows = rows.assign(comm_s=pd.to_numeric(rows["comm_s"], errors="coerce"),
                       compute_s=pd.to_numeric(rows.get("compute_s", np.nan), errors="coerce"),
                       ranks=rows.get("ranks", 1), nodes=rows.get("nodes", 1))
    keys = [*cols, "threads", "n", *SCALE]
    out = []
    for _, part in rows.groupby(group_codes(rows, keys)[0], sort=True):
        first = part.iloc[0]
        comm, compute = float(part["comm_s"].median()), float(part["compute_s"].median())
        jobs = sorted({str(j) for j in part["job_id"].dropna()}) if "job_id" in part else []
        out.append({**{c: first[c] for c in keys}, "median_s": float(part["time_s"].median()),
                    "compute_s": compute, "comm_s": comm,
                    "comm_fraction": comm / (comm + compute) if np.isfinite(compute) and comm + compute > 0
                    else float("nan"), "repeats": len(part), "job_ids": ",".join(jobs)})
    return pd.DataFrame(out, columns=[*cols, *COMM_COLUMNS])
