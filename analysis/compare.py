"""Two result tables point by point: NEW/BASE time ratios with an interval,
a noise-aware verdict per point, and a summary per kernel and implementation.

A point is one (configuration, threads, n): every group column of
resultschema/columns.py plus `threads` and `n`. With `by` (one of
analysis.ratios.DIMENSIONS) that dimension is allowed to differ between the
two sides and is left out of the match (`cluster` also frees `partition`),
so a campaign on one cluster can be compared with one on another; the
points then carry both sides' values as `<col>_base` and `<col>_new`.

Interval (order statistics, not a bootstrap): each side's median comes with
the distribution-free sign-test interval of analysis/summary.py (coverage
`ci_coverage`; [min, max] below six repeats). The ratio's interval is
[lo_new / hi_base, hi_new / lo_base]: whenever both medians' intervals hold
their true medians, this box holds the true ratio, so its coverage is at
least the product of the two (`ci_coverage` of a point). A bootstrap of the
median with 3-10 repeats is discrete and under-covers; the order-statistic
interval states what it guarantees.

Replicates (analysis/replicates.py): where both sides have >= 2 replicates
(independent jobs) of a point, the ratio is that of the geometric means of
the replicate medians and the interval a 95% Welch t-interval on their logs
(`interval` = BETWEEN): repeats of one job cannot see a drift between jobs,
replicates can. Elsewhere the interval above stays and the point says which
intervals made it: WITHIN ("within-run only") with one replicate a side, else
each side's ("base between-replicates, new within-run": a side of >= 2
replicates brings its geometric mean and between-replicate t-interval into the
box); below `min_replicates` on a side the point is `insufficient-replicates`; `replicates_needed` says how many replicates per
side would make the interval no wider than the threshold.

The verdict of each point, and of each kernel and implementation in the
summary, follow the rule of analysis/verdicts.py. A figure that can be zero
or negative (a difference, a balance) has no ratio where either side's
interval reaches zero (`ratio_defined`): its ratio and interval are NaN and
the point is judged on NEW - BASE by the same rule (the intervals apart, the
change beyond the threshold of |BASE|), in the figure's direction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.metric_frame import set_time_figures
from analysis.overlap_points import flagged_rows
from analysis.ratios import DIMENSIONS
from analysis.replicates import LEVEL, replicates_needed, welch_ratio
from analysis.schema import group_columns
from analysis.summary import ensure_summary, is_summary
from analysis.verdicts import (
    BETTER,
    BETWEEN,
    DEFAULT_THRESHOLD,
    FASTER,
    FEW_REPLICATES,
    FIGURE_VERDICTS,
    INSUFFICIENT,
    NOISE,
    SLOWER,
    WITHIN,
    WORSE,
    interval_labels,
    summarize_points,
    verdicts,
)
from resultschema.columns import OPTIONAL_GROUP_COLUMNS, SCALE_COLUMNS, SCALE_DEFAULT

MIN_REPEATS = 4
METHOD = (
    "ratio of medians NEW/BASE; interval [lo_new/hi_base, hi_new/lo_base] from the "
    "order-statistic (sign-test) intervals of the two medians, coverage >= the product of theirs"
)
BETWEEN_METHOD = (
    "geometric mean of the replicate medians; NEW/BASE with a 95% Welch t-interval on their logs "
    "(between-replicate spread, Kalibera & Jones 2013)"
)
MIXED_METHOD = " (a side of 2 or more replicates: the geometric mean of its replicate medians and their t-interval)"
_VALUES = ["median_s", "ci_lo_s", "ci_hi_s", "ci_coverage", "repeats", "replicates", "replicate_log_sd"]


@dataclass(frozen=True)
class Comparison:
    """What `compare` found. `points`: one row per matched point (the match
    columns, `<varied>_base`/`<varied>_new` when `by` is set, `t_base`,
    `t_new`, `repeats_base`, `repeats_new`, `replicates_base`,
    `replicates_new`, `ratio`, `ratio_lo`, `ratio_hi`, `ci_coverage`,
    `interval` (BETWEEN, WITHIN, or each side's: verdicts.interval_labels), `replicates_needed` (per side, for an
    interval no wider than the threshold; 0: unknown), `verdict`); `summary`: one row per kernel+impl (see the
    module doc); `base_only` / `new_only`: points measured on one side only."""

    points: pd.DataFrame
    summary: pd.DataFrame
    base_only: pd.DataFrame
    new_only: pd.DataFrame
    threshold: float
    by: str | None
    min_repeats: int
    method: str = METHOD
    min_replicates: int = 1

    @property
    def slower(self) -> pd.DataFrame:
        """Points slower, or a figure worse, beyond the threshold (what `--fail-on slower` fails on)."""
        return self.points[self.points["verdict"].isin([SLOWER, WORSE])]


def varied_columns(by: str | None) -> list[str]:
    """Columns allowed to differ between the sides for `by`."""
    if by is None:
        return []
    if by not in DIMENSIONS:
        raise ValueError(f"unknown compare dimension {by!r}; known: {', '.join(DIMENSIONS)}")
    return ["cluster", "partition"] if by == "cluster" else [by]


def _aligned(base: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sides with the same optional group columns, so that a table without
    `params` (an imported CSV) still matches one with `params` = "". A `dtype`
    or `d` that one side lacks (an import without the column) is left out of
    the match where the other side has one value of it (nothing to tell
    apart); with several, the lacking side's points carry it as missing and
    match none (listed as measured on one side only), never a merge of an
    integer column with an empty one. A side without `ranks` or `nodes` is
    one of single-process runs (the frames drop them where every row has 1):
    its points are 1 rank on 1 node, matched with the other side's."""
    sides = [base.copy(), new.copy()]
    for col in OPTIONAL_GROUP_COLUMNS:
        if col == "params":
            for side in sides:
                side[col] = side[col].fillna("").astype("str") if col in side.columns else ""
            continue
        if (col in sides[0].columns) == (col in sides[1].columns):
            continue
        have = 0 if col in sides[0].columns else 1
        if col in SCALE_COLUMNS:
            sides[1 - have][col] = pd.Series(SCALE_DEFAULT, index=sides[1 - have].index, dtype=sides[have][col].dtype)
        elif sides[have][col].nunique(dropna=False) <= 1:
            sides[have] = sides[have].drop(columns=col)
        else:
            sides[have][col] = sides[have][col].astype(object)
            sides[1 - have][col] = pd.Series(pd.NA, index=sides[1 - have].index, dtype=object)
    return sides[0], sides[1]


def compare(
    base: pd.DataFrame,
    new: pd.DataFrame,
    *,
    by: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    min_repeats: int = MIN_REPEATS,
    min_replicates: int = 1,
) -> Comparison:
    """Match the points of `base` and `new` (raw results or summaries) and judge
    each NEW/BASE ratio; see the module doc. Raises ValueError for an unknown
    `by`, a threshold outside (0, 1), min_repeats < 1 or min_replicates < 1."""
    varied = varied_columns(by)
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be between 0 and 1 (a fraction, 0.05 = 5%), got {threshold}")
    if min_repeats < 1:
        raise ValueError(f"min_repeats must be >= 1, got {min_repeats}")
    if isinstance(min_replicates, bool) or not isinstance(min_replicates, int) or min_replicates < 1:
        raise ValueError(f"min_replicates must be a whole number >= 1, got {min_replicates!r}")
    if is_summary(base) != is_summary(new):
        raise ValueError("compare both raw results or both summaries")
    raw_b, raw_n = _aligned(figures_as_values(base), figures_as_values(new))
    sb, sn = ensure_summary(raw_b), ensure_summary(raw_n)
    match = [c for c in group_columns(sb) if c not in varied] + ["threads", "n"]
    sb, sn = _with_replicates(sb), _with_replicates(sn)
    left = sb[match + varied + _VALUES]
    right = sn[match + varied + _VALUES]
    merged = left.merge(right, on=match, how="outer", suffixes=("_base", "_new"), indicator=True)
    both = merged[merged["_merge"] == "both"].reset_index(drop=True)
    points = _points(both, match, varied, threshold, min_repeats)
    _judge_replicates(points, both, threshold, min_replicates)
    directions = _directions(raw_b, raw_n)
    _orient(points, directions)
    keys = _texts(points, match)  # a point timed on a shared machine on either side
    for side, raw in (("base", raw_b), ("new", raw_n)):
        flagged = _flagged_keys(raw, match)
        points[f"overlap_{side}"] = [k in flagged for k in keys]
    only = {}
    for side, tag in (("base", "left_only"), ("new", "right_only")):
        part = merged[merged["_merge"] == tag]
        cols = match + [f"{c}_{side}" for c in varied] + [f"median_s_{side}", f"repeats_{side}"]
        frame = part[cols].rename(
            columns={f"{c}_{side}": c for c in varied} | {f"median_s_{side}": "t", f"repeats_{side}": "repeats"}
        )
        frame["repeats"] = frame["repeats"].astype("int64")
        if directions:  # as the matched points: which figure a point is, and its direction
            _name_metrics(frame, directions)
        only[side] = frame.reset_index(drop=True)
    welch = (points["interval"] == BETWEEN).to_numpy()
    other = METHOD + (MIXED_METHOD if (~welch & (points["interval"] != WITHIN).to_numpy()).any() else "")
    method = (
        other
        if not welch.any()
        else BETWEEN_METHOD
        if welch.all()
        else f"{BETWEEN_METHOD}; points of one replicate on a side: {other}"
    )
    return Comparison(
        points,
        summarize_points(points, by, threshold),
        only["base"],
        only["new"],
        threshold,
        by,
        min_repeats,
        method,
        min_replicates,
    )


def _with_replicates(summary: pd.DataFrame) -> pd.DataFrame:
    """A summary made before replicates (an imported summary) is one replicate per point."""
    if "replicates" in summary.columns:
        return summary
    return summary.assign(replicates=1, replicate_log_sd=np.nan)


def _judge_replicates(points: pd.DataFrame, both: pd.DataFrame, threshold: float, min_replicates: int) -> None:
    """Points with >= 2 replicates on both sides: ratio, interval and verdict over the
    replicates (analysis/replicates.py); the others keep the within-run interval, or are
    `insufficient-replicates` below min_replicates. Every point: the replicates per side
    that would give an interval no wider than the threshold (from a side's spread)."""
    r_b = both["replicates_base"].to_numpy().astype("int64")
    r_n = both["replicates_new"].to_numpy().astype("int64")
    sd_b = both["replicate_log_sd_base"].to_numpy(float)
    sd_n = both["replicate_log_sd_new"].to_numpy(float)
    points["replicates_base"], points["replicates_new"] = r_b, r_n
    use = (r_b >= 2) & (r_n >= 2) & np.isfinite(points["ratio"].to_numpy(float))  # (NaN: no ratio, ratio_defined)
    with np.errstate(divide="ignore", invalid="ignore"):  # (a point without a ratio: not used below)
        ratio, lo, hi = welch_ratio(
            points["t_base"], sd_b, np.maximum(r_b, 2), points["t_new"], sd_n, np.maximum(r_n, 2)
        )
    use &= np.isfinite(ratio) & np.isfinite(lo) & np.isfinite(hi)
    for col, value in (("ratio", ratio), ("ratio_lo", lo), ("ratio_hi", hi)):
        points[col] = np.where(use, value, points[col].to_numpy(float))
    points["ci_coverage"] = np.where(use, LEVEL, points["ci_coverage"].to_numpy(float))
    points["interval"] = interval_labels(r_b, r_n, use)
    # the spread of the side(s) that have one: the larger, so the count is not optimistic
    spread = np.fmax(np.where(r_b >= 2, sd_b, np.nan), np.where(r_n >= 2, sd_n, np.nan))
    points["replicates_needed"] = replicates_needed(spread, threshold)
    verdict = points["verdict"].to_numpy(object).copy()
    judged = verdicts(
        points["ratio"].to_numpy(float),
        points["ratio_lo"].to_numpy(float),
        points["ratio_hi"].to_numpy(float),
        np.full(len(points), 1),
        threshold,
        1,
    )
    verdict = np.where(use, judged, verdict)
    verdict[np.minimum(r_b, r_n) < min_replicates] = FEW_REPLICATES
    points["verdict"] = verdict


def _texts(frame: pd.DataFrame, cols: list[str]) -> list[tuple[str, ...]]:
    """Each row's values of `cols` as texts (NaN and NA alike), to match points across frames."""
    if not len(frame):
        return []
    return list(zip(*(frame[c].astype("string").fillna("").tolist() for c in cols)))


def _flagged_keys(raw: pd.DataFrame, match: list[str]) -> set[tuple[str, ...]]:
    """The points of raw results with rows timed on a shared machine (the `overlap` note);
    none for summaries, which carry no rows."""
    if is_summary(raw) or not all(c in raw.columns for c in match):
        return set()
    flagged = flagged_rows(raw).to_numpy()
    return set(_texts(raw[flagged], match)) if flagged.any() else set()


def _points(
    both: pd.DataFrame, match: list[str], varied: list[str], threshold: float, min_repeats: int
) -> pd.DataFrame:
    """Ratio, interval and verdict of every matched point."""
    out = both[match + [f"{c}_{s}" for c in varied for s in ("base", "new")]].copy()
    t_b, t_n = both["median_s_base"].to_numpy(float), both["median_s_new"].to_numpy(float)
    out["t_base"], out["t_new"] = t_b, t_n
    rep_b = both["repeats_base"].to_numpy().astype("int64")
    rep_n = both["repeats_new"].to_numpy().astype("int64")
    out["repeats_base"], out["repeats_new"] = rep_b, rep_n
    bounds = {
        name: both[name].to_numpy(float) for name in ("ci_lo_s_base", "ci_hi_s_base", "ci_lo_s_new", "ci_hi_s_new")
    }
    defined = ratio_defined(
        bounds["ci_lo_s_base"], bounds["ci_lo_s_new"], bounds["ci_hi_s_base"], bounds["ci_hi_s_new"]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(defined, t_n / t_b, np.nan)
        lo = np.where(defined, bounds["ci_lo_s_new"] / bounds["ci_hi_s_base"], np.nan)
        hi = np.where(defined, bounds["ci_hi_s_new"] / bounds["ci_lo_s_base"], np.nan)
    out["ratio"], out["ratio_lo"], out["ratio_hi"] = ratio, lo, hi
    out["ci_coverage"] = both["ci_coverage_base"].to_numpy(float) * both["ci_coverage_new"].to_numpy(float)
    repeats = np.minimum(rep_b, rep_n)
    out["verdict"] = np.where(
        defined,
        verdicts(ratio, lo, hi, repeats, threshold, min_repeats),
        difference_verdicts(t_b, t_n, bounds, repeats, threshold, min_repeats),
    )
    return out


def ratio_defined(*bounds: np.ndarray) -> np.ndarray:
    """Where a NEW/BASE ratio means what the verdict rule reads in it: both
    sides' intervals (so their medians) positive and finite. A figure that
    can be zero or negative (a difference, a balance) has no such ratio: -6
    over -3 is "2x" while the value fell, and a sign flip gives a ratio below
    zero that no threshold reads."""
    return np.logical_and.reduce([np.isfinite(b) & (b > 0) for b in bounds])


def difference_verdicts(
    t_b: np.ndarray,
    t_n: np.ndarray,
    bounds: dict[str, np.ndarray],
    repeats: np.ndarray,
    threshold: float,
    min_repeats: int,
) -> np.ndarray:
    """The verdict of a point without a ratio (ratio_defined), by the same
    rule on the difference: NEW above BASE (`slower`, as a time's ratio above
    1) where the intervals do not overlap and the change exceeds the threshold
    of |BASE| (any change does where BASE is 0); below symmetrically."""
    change = t_n - t_b
    big = np.abs(change) > threshold * np.abs(t_b)
    with np.errstate(invalid="ignore"):
        up = (bounds["ci_lo_s_new"] > bounds["ci_hi_s_base"]) & big & (change > 0)
        down = (bounds["ci_hi_s_new"] < bounds["ci_lo_s_base"]) & big & (change < 0)
    verdict = np.where(up, SLOWER, np.where(down, FASTER, NOISE)).astype(object)
    verdict[repeats < min_repeats] = INSUFFICIENT
    return verdict


def figures_as_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of figures of merit (docs/byob.md) compared on the figure's value,
    not on the run's time_s they share; a figure that reports a fixed-duration
    program's set time left out (metric_frame.set_time_figures). Other rows unchanged. `plan-repeats`
    plans from the same values (campaign.commands.repeat_plan)."""
    if is_summary(frame) or "metric" not in frame.columns or "value" not in frame.columns:
        return frame
    fig = frame["metric"].notna().to_numpy()
    value = pd.to_numeric(frame["value"], errors="coerce").to_numpy(float)
    out = frame.assign(time_s=np.where(fig, value, frame["time_s"].to_numpy(float)))
    return out[~(fig & set_time_figures(frame))].reset_index(drop=True)


def _higher(frame: pd.DataFrame) -> np.ndarray:
    """Each row's direction; lower is better where the rows say none (no column: a figure
    imported without its direction), as a kernel YAML's `higher_is_better` defaults."""
    if "higher_is_better" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return pd.to_numeric(frame["higher_is_better"], errors="coerce").fillna(0).to_numpy() != 0


def _directions(*frames: pd.DataFrame) -> dict[tuple[str, str], bool]:
    """(kernel, metric) -> higher is better, from the raw rows' figures."""
    out: dict[tuple[str, str], bool] = {}
    for frame in frames:
        if is_summary(frame) or "metric" not in frame.columns:  # (no direction said: lower is better, _higher)
            continue
        fig = frame[frame["metric"].notna().to_numpy()]
        for kernel, metric, higher in zip(fig["kernel"].astype(str), fig["metric"].astype(str), _higher(fig)):
            out[(kernel, metric)] = bool(higher)
    return out


def _name_metrics(points: pd.DataFrame, directions: dict[tuple[str, str], bool]) -> None:
    """Each point's metric (its params' `metric=`, else the run's time) and direction."""
    params = points["params"] if "params" in points.columns else pd.Series("", index=points.index)
    metric = [next((p[7:] for p in str(text).split(",") if p.startswith("metric=")), "time_s") for text in params]
    points["metric"] = metric
    points["higher_is_better"] = np.array(
        [directions.get((str(k), m), False) for k, m in zip(points["kernel"], metric)], dtype=bool
    )


def _orient(points: pd.DataFrame, directions: dict[tuple[str, str], bool]) -> None:
    """Each point's metric and direction; a higher-is-better figure's ratio
    turned into BASE/NEW (so > 1 is worse, as a time's NEW/BASE) and its
    verdicts said as better/worse. Without figures the points are unchanged."""
    if not directions:
        return
    _name_metrics(points, directions)
    metric, higher = points["metric"].tolist(), points["higher_is_better"].to_numpy(bool)
    ratio, lo, hi = (points[c].to_numpy(float) for c in ("ratio", "ratio_lo", "ratio_hi"))
    with np.errstate(divide="ignore"):
        points["ratio"] = np.where(higher, 1.0 / ratio, ratio)
        points["ratio_lo"] = np.where(higher, 1.0 / hi, lo)
        points["ratio_hi"] = np.where(higher, 1.0 / lo, hi)
    figure = np.array([m != "time_s" for m in metric], dtype=bool)
    # judged on NEW/BASE of the value: for a rate a ratio below 1 ("faster") is a drop, so worse
    rising = {SLOWER: BETTER, FASTER: WORSE}
    points["verdict"] = [
        (rising if h else FIGURE_VERDICTS).get(v, v) if f else v for v, f, h in zip(points["verdict"], figure, higher)
    ]
