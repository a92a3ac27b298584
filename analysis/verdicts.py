"""The verdict of a compared point, and of a group of points (a kernel and
implementation): the words `campaign compare` says and the rule behind them.
analysis/compare.py matches the points and makes their ratios and intervals.

Verdict at threshold t (default 5%):
- `slower`: the ratio interval lies above 1 (the medians' intervals do not
  overlap: the same test as `within_noise` in analysis/ratios.py) and the
  ratio exceeds 1 + t;
- `faster`: the interval lies below 1 and BASE/NEW exceeds 1 + t;
- `within-noise`: anything else (overlapping intervals, or a real change
  smaller than the threshold);
- `insufficient-repeats`: either side has fewer than `min_repeats` repeats
  (default 4). A single repeat has the interval [t, t], which never overlaps
  another, so without this rule one repeat would "prove" every change.

Why 4: under identical conditions (both sides' repeats independent draws of
one distribution) two [min, max] intervals of m and k repeats fail to
overlap with probability 2/C(m+k, m), whatever the distribution: 10% at
3 + 3 repeats (no distribution-free rule can do better with three), 2.9% at
4 + 4, 0.8% at 5 + 5; wider intervals (more repeats) only lower it. So at
>= 4 repeats per side an identical rerun is called faster or slower at
<= 2.9% of points by the rule itself; drift of the machine between the runs
(another tenant, a clock change) is real and not covered by the repeats.

Summary per kernel and implementation (plus the `by` pair): the count of
points per verdict and the group's verdict from the same model as its points,
over the points that were judged (not insufficient) and not timed on a
shared or busy machine (`shared` counts those left out): the geometric mean
of their ratios, and as its interval the geometric mean of their own
intervals (between replicates where they have them), judged by the point
rule. The points of one kernel are measured by the same jobs on the same
machine, so a drift between jobs moves them together: their errors are not
independent, and a t-interval over the points' log ratios (which shrinks as
1/sqrt(points)) can call an identical rerun faster while every point is
within noise. The averaged interval assumes nothing about that
correlation, so the group verdict never contradicts its points: when every
point's interval holds 1, so does the group's; when every point is faster,
so is the group; and a group is faster or slower only where one of its
points is (within-noise points can average to an interval off 1: the group
is then within noise too). With no point left to judge, the verdict says so
(insufficient-repeats, insufficient-replicates, or `shared-machine`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

FASTER, SLOWER, NOISE, INSUFFICIENT = "faster", "slower", "within-noise", "insufficient-repeats"
FEW_REPLICATES = "insufficient-replicates"  # fewer replicates on a side than min_replicates asks
BETTER, WORSE = "better", "worse"  # a figure of merit's verdicts: its direction, not a time's
VERDICTS: tuple[str, ...] = (FASTER, SLOWER, NOISE, INSUFFICIENT, FEW_REPLICATES)
SHARED = "shared-machine"  # a summary's verdict when every judged point was timed on a shared or busy machine
FIGURE_VERDICTS = {SLOWER: WORSE, FASTER: BETTER}
BETWEEN, WITHIN = "between-replicates", "within-run only"  # which interval judged a point
SIDE_BETWEEN, SIDE_WITHIN = "between-replicates", "within-run"  # one side's interval, where the sides differ
DEFAULT_THRESHOLD = 0.05


def interval_labels(replicates_base: np.ndarray, replicates_new: np.ndarray, welch: np.ndarray) -> np.ndarray:
    """Which interval judged each point: BETWEEN where the Welch interval over both sides' replicates
    did (`welch`), WITHIN where each side has one replicate (the repeats' order-statistic intervals),
    else each side's own: a side of >= 2 replicates brings its between-replicate t-interval, a side of
    one its within-run interval ("base between-replicates, new within-run")."""
    r_b, r_n = np.asarray(replicates_base), np.asarray(replicates_new)
    side_b = np.where(r_b >= 2, SIDE_BETWEEN, SIDE_WITHIN).astype(object)
    side_n = np.where(r_n >= 2, SIDE_BETWEEN, SIDE_WITHIN).astype(object)
    each = "base " + side_b + ", new " + side_n
    return np.where(welch, BETWEEN, np.where((r_b < 2) & (r_n < 2), WITHIN, each)).astype(object)


def verdicts(ratio: np.ndarray, lo: np.ndarray, hi: np.ndarray, repeats: np.ndarray,
             threshold: float, min_repeats: int) -> np.ndarray:
    """The verdict rule of the module doc, vectorised. `repeats`: the smaller
    side's repeat count per point."""
    slower = (lo > 1.0) & (ratio > 1.0 + threshold)
    faster = (hi < 1.0) & (1.0 / ratio > 1.0 + threshold)
    verdict = np.where(slower, SLOWER, np.where(faster, FASTER, NOISE)).astype(object)
    verdict[repeats < min_repeats] = INSUFFICIENT
    return verdict


def summary_keys(by: str | None) -> list[str]:
    """Summary rows: per kernel and implementation, and per pair of `by` values."""
    keys = ["kernel"] + ([] if by == "impl" else ["impl"])
    if by is not None:
        keys += [f"{by}_base", f"{by}_new"]
    return keys


def summarize_points(points: pd.DataFrame, by: str | None, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """Per kernel and implementation (and metric, where the points carry
    figures of merit: never one geomean over a time and a rate): the count of
    points per verdict and the group's `geomean`, interval and `verdict` from
    its judged points' own ratios and intervals (see the module doc); `shared`
    counts the judged points left out because either side was timed on a
    shared or busy machine."""
    figures = "metric" in points.columns
    keys = summary_keys(by) + (["metric"] if figures else [])
    names = list(VERDICTS) + ([BETTER, WORSE] if figures else [])
    cols = keys + ["points", "geomean", "geomean_lo", "geomean_hi"] + names + ["shared", "verdict"]
    judged = ~points["verdict"].isin([INSUFFICIENT, FEW_REPLICATES]).to_numpy()
    shared = np.zeros(len(points), dtype=bool)
    for side in ("base", "new"):
        if f"overlap_{side}" in points.columns:
            shared |= points[f"overlap_{side}"].to_numpy(dtype=bool)
    frame = points.assign(_judged=judged & ~shared, _shared=judged & shared)
    rows = []
    for key, grp in frame.groupby(keys, sort=True, dropna=False):
        use = grp[grp["_judged"].to_numpy(dtype=bool)] if grp["_judged"].any() else grp
        # (a point of a figure that can be zero or negative has no ratio: judged on its difference, no geomean)
        use = use[np.isfinite(use["ratio"].to_numpy(float))]
        logs = np.log(use[["ratio", "ratio_lo", "ratio_hi"]].to_numpy(float))
        mean, lo, hi = np.exp(logs.mean(axis=0)) if len(use) else (np.nan,) * 3
        counts = grp["verdict"].value_counts()
        verdict = verdicts(np.array([mean]), np.array([lo]), np.array([hi]),
                           np.array([int(grp["_judged"].sum())]), threshold, 1)[0]
        if verdict in (FASTER, SLOWER) and not use["verdict"].isin([verdict, FIGURE_VERDICTS[verdict]]).any():
            verdict = NOISE  # points within noise each way can average off 1: no point says it, nor does the group
        if not len(use) and grp["_judged"].any():  # only points without a ratio: their verdict where they agree
            said = set(grp.loc[grp["_judged"].to_numpy(dtype=bool), "verdict"])
            verdict = said.pop() if len(said) == 1 else NOISE
        if not grp["_judged"].any():  # nothing to judge: say why
            verdict = SHARED if grp["_shared"].any() else FEW_REPLICATES if counts.get(FEW_REPLICATES, 0) \
                else INSUFFICIENT
        key_values = key if isinstance(key, tuple) else (key,)
        if figures and key_values[-1] != "time_s":  # the ratio is oriented: > 1 is worse
            verdict = FIGURE_VERDICTS.get(verdict, verdict)
        rows.append([*key_values, len(grp), float(mean), float(lo), float(hi)]
                    + [int(counts.get(v, 0)) for v in names] + [int(grp["_shared"].sum()), verdict])
    out = pd.DataFrame(rows, columns=cols)
    return out.astype({c: "int64" for c in ["points", *names, "shared"]})
