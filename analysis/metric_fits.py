"""A figure of merit's serial fraction over threads, ranks and nodes, and its
crossovers over n between two values of one axis, each in the figure's
direction: `report --json` keys `figure_serial_fractions` and
`figure_crossovers` and the report's figures section (analysis/SCHEMA.md).

Serial fraction: Amdahl's t(P) = A + B/P (analysis.rank_scaling.amdahl_fraction)
fitted to each strong series of analysis.metric_scaling (one point of every
dimension but the axis, two or more axis values) with the figure turned into
a time-like cost: 1/value where higher is better (a rate is work over time,
so at a fixed work its inverse is the time), the value where lower is
better. A series with a median that is not positive and finite gets none (a
cost of a zero rate is no time), nor does a weak series over ranks or nodes
(n per rank, analysis.rank_scaling.is_weak): Amdahl's law is strong scaling's.

Crossovers: for every pair a < b of values of one axis in a series over n,
the first n at which b is better than a in the figure's direction
(analysis.threads.first_crossings, the time crossovers' rule), over the
figures' point summaries as figure_ratios makes them (analysis.summary: the
median and its order-statistic interval), so `within_noise` is the time
crossovers' too. Rows without n (a program without a problem size) have none.

A record names its series by its first point's dimensions (the fewest
`axis`, the a side of a crossover: over nodes its ranks, so the ranks per
node are ranks / nodes), as figure_ratios names a pair by its a side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Table
from analysis.frames import group_codes, present
from analysis.merit import axes_text, figure_frame, figure_labels, has_figures
from analysis.metric_frame import DIMENSIONS, SCALE_DEFAULTS
from analysis.metric_ratios import figure_rows, name_figures
from analysis.metric_scaling import AXES, POINT_COLUMNS, all_scaling, medians, series_key
from analysis.rank_scaling import amdahl_fraction, is_weak
from analysis.report_tables import NOTE_MARKS, marks, size_text
from analysis.summary import summarize
from analysis.threads import CROSSOVER_COLUMNS, first_crossings

FRACTION_COLUMNS = ("axis", "law", "points", "min_axis", "max_axis", "serial_fraction", "single_repeat")
CROSSING_COLUMNS = ("axis", "a", "b", *CROSSOVER_COLUMNS[2:])
_HELD = [c for c in DIMENSIONS if c != "n"]  # a crossover's series holds every dimension but n (and its axis)


def _with_ranks_per_node(frame: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Over nodes a series holds the ranks per node (metric_scaling.series_key)."""
    return frame.assign(ranks_per_node=frame["ranks"] // frame["nodes"].clip(lower=1)) if axis == "nodes" else frame


def serial_fractions(frame: pd.DataFrame) -> pd.DataFrame:
    """Amdahl's serial fraction of each strong series of each figure (see the
    module doc); `frame`: a figure frame (analysis.merit.figure_frame) or its medians."""
    med = medians(frame) if "repeats" not in frame.columns else frame
    scale = all_scaling(med)
    dims = present(scale, DIMENSIONS)
    fits = []
    for axis, part in scale.groupby("axis", sort=False):
        part = _with_ranks_per_node(part, str(axis))
        codes, _ = group_codes(part, series_key(part, str(axis)))
        fits += [_amdahl(series.sort_values(str(axis), kind="stable"), str(axis), dims)
                 for _, series in part.groupby(codes, sort=True)]
    return pd.DataFrame([f for f in fits if f is not None], columns=[*dims, *POINT_COLUMNS, *FRACTION_COLUMNS])


def _amdahl(series: pd.DataFrame, axis: str, dims: list[str]) -> dict[str, object] | None:
    """One series' fit, or None where it has no serial fraction (see the module doc)."""
    first = series.iloc[0]
    if axis != "threads" and is_weak(first["variant"], first.get("params", "")):
        return None
    value = series["value"].to_numpy(float)
    if not ((value > 0) & np.isfinite(value)).all():
        return None
    cost = 1.0 / value if bool(first["higher_is_better"]) else value
    at = series[axis].to_numpy(float)
    return {**{c: first[c] for c in [*dims, *POINT_COLUMNS]}, "axis": axis, "law": "amdahl",
            "points": len(series), "min_axis": int(at.min()), "max_axis": int(at.max()),
            "serial_fraction": float(amdahl_fraction(at, cost)[0]),
            "single_repeat": bool((series["repeats"].to_numpy() == 1).any())}


def figure_crossovers(results: pd.DataFrame, cluster: str | None = None) -> pd.DataFrame:
    """Every figure's crossovers over n along threads, ranks and nodes (see the
    module doc); with `cluster`, that cluster's."""
    rows = figure_rows(results) if has_figures(results) and "n" in results.columns else results.iloc[:0]
    if cluster is not None and len(rows):
        rows = rows[(rows["cluster"].astype(str) == cluster).to_numpy()]
    rows = rows[rows["n"].notna().to_numpy()] if len(rows) else rows
    if not len(rows):
        return pd.DataFrame(columns=[*_HELD, *POINT_COLUMNS, *CROSSING_COLUMNS])
    points = name_figures(summarize(rows), rows)
    points = points.assign(**{c: d for c, d in SCALE_DEFAULTS.items() if c not in points.columns})
    dims = [c for c in present(points, DIMENSIONS) if c != "n"]
    parts = [_crossings(_with_ranks_per_node(points, axis), axis, dims) for axis in AXES if axis in points.columns]
    out = pd.concat(parts, ignore_index=True)[[*dims, *POINT_COLUMNS, *CROSSING_COLUMNS]]
    return out.astype({"n_before": float, "n_at": float})  # (sizes: whole numbers, integers in JSON)


def _crossings(points: pd.DataFrame, axis: str, dims: list[str]) -> pd.DataFrame:
    """The crossovers of every series over `axis`, each named by its a side's point."""
    key = [c for c in series_key(points, axis) if c != "n"]
    points = points.assign(_gid=group_codes(points, key)[0])
    found = first_crossings(points, axis)
    named = [c for c in [*dims, *POINT_COLUMNS] if c != axis]
    sides = points.drop_duplicates(["_gid", axis]).set_index(["_gid", axis])[named]
    out = sides.loc[list(zip(found["_gid"], found["a"], strict=True))].reset_index()
    out[axis] = out[axis].astype("int64") if len(out) else out[axis]
    out["axis"] = axis
    for column in CROSSING_COLUMNS[1:]:
        out[column] = found[column].to_numpy()
    return out.drop(columns="_gid")


def fraction_tables(fractions: pd.DataFrame) -> list[Table]:
    """One table per figure: each series' serial fraction and the range it was fitted over."""
    out: list[Table] = []
    for (metric, higher), part in fractions.groupby(["metric", "higher_is_better"], sort=True):
        part = part.reset_index(drop=True)
        mark = marks(np.zeros(len(part), dtype=bool), part["single_repeat"])
        rows = pd.DataFrame({
            "configuration": figure_labels(part).tolist(),
            "at": [axes_text(r) for _, r in part.iterrows()],
            "n": [size_text(v) for v in part["n"]],
            "axis": part["axis"].to_numpy(),
            "range": [f"{a} … {b}" for a, b in zip(part["min_axis"], part["max_axis"], strict=True)],
            "points": part["points"].astype(str).to_numpy(),
            "serial fraction": [f"{s:.3f}{m}" for s, m in zip(part["serial_fraction"], mark, strict=True)]})
        cost = "1/value" if higher else "the value"
        out.append(Table(f"Serial fraction of {metric} (Amdahl, {'higher' if higher else 'lower'} is better)", rows,
                         f"Amdahl's t(P) = A + B/P fitted to {cost} over the series' medians; serial fraction "
                         f"A / (A + B), clipped to [0, 1]. `at`: what the series holds. {NOTE_MARKS}"))
    return out


def crossover_tables(crossings: pd.DataFrame) -> list[Table]:
    """One table per figure: the pairs where the larger axis value becomes better at some n."""
    out: list[Table] = []
    done = crossings[crossings["crossed"].to_numpy(bool)]
    for (metric, higher), part in done.groupby(["metric", "higher_is_better"], sort=True):
        part = part.reset_index(drop=True)
        rows = pd.DataFrame({
            "configuration": figure_labels(part).tolist(),
            "at": [axes_text(r) for _, r in part.iterrows()],
            "a → b": [f"{a} → {b} {axis}" for a, b, axis in zip(part["a"], part["b"], part["axis"], strict=True)],
            "b better from": [f"{display.size(lo)} < n ≤ {display.size(hi)}" if display.finite(lo) else
                              f"the first n ({display.size(hi)})" for lo, hi in
                              zip(part["n_before"], part["n_at"], strict=True)],
            "at that n": np.where(part["within_noise"].to_numpy(bool), "within noise", "outside noise")})
        way = "higher" if higher else "lower"
        out.append(Table(f"Crossovers of {metric} over n ({way} is better)", rows,
                         f"The first n, among those measured at both, where b gives a {way} median {metric} than "
                         "a; the crossover lies between the previous such n and it. Pairs where b is never "
                         "better are not listed."))
    return out


def fit_tables(results: pd.DataFrame, cluster: str) -> list[Table]:
    """The serial fractions' and crossovers' tables of `cluster`'s figures (none where empty)."""
    mine = results[(results["cluster"].astype(str) == cluster).to_numpy()]
    return fraction_tables(serial_fractions(figure_frame(mine))) + crossover_tables(figure_crossovers(mine))
