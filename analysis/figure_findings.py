"""The summary's lines on the figures of merit: per figure and axis (threads,
ranks, nodes), the largest speedup in the figure's direction against its
series' base point, and every efficiency above SUPERLINEAR said as a flag.

The rules are the time findings' (analysis/caveats.py): a number that rests
on a flagged point is not said as a result. A point is flagged where its rows
were timed while the machine was shared (their `overlap` note) or where it
has fewer than MIN_REPEATS repeats; a speedup rests on its point and its
base. So the largest speedup said is the largest clean one; where every
candidate rests on a flagged point, or the largest is below 1 (more
resources made every point worse), it is said as a flag with the reason.
Then per figure its largest ratio between two clusters, partitions,
implementations or variants (analysis/metric_ratios.py) that is beyond the
noise and rests on no flagged point, said as "impl b is 2.50× better than a".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import display, limits, metric_scaling
from analysis.caveats import Flags
from analysis.merit import axes_text, figure_frame, figure_labels
from analysis.metric_frame import SCALE_DEFAULTS
from analysis.metric_ratios import figure_ratios

MAX_FINDINGS = 6


def _where(row: pd.Series, name: str) -> str:
    """A finding's point said in full: two lines of one configuration differ
    only in what their series holds (threads, nodes, ranks per node) or in n."""
    held = axes_text(row)
    size = f" n = {display.size(row['n'])}" if display.finite(row["n"]) else ""
    return f"{name}" + (f" ({held}{',' if size else ''}{size})" if held or size else "")


def _base(row: pd.Series) -> dict[str, Any]:
    """The base point of `row`'s series: over nodes the ranks per node stay, so its ranks shrink with them."""
    axis, base = str(row["axis"]), int(row["base"])
    if axis == "nodes":
        return {"nodes": base, "ranks": int(row["ranks"]) // max(int(row["nodes"]), 1) * base}
    return {axis: base}


def figure_findings(results: pd.DataFrame, cluster: str, ratios: pd.DataFrame | None = None) -> list[str]:
    """The summary's lines on the figures of `cluster` (see the module doc);
    `ratios`: figure_ratios(results, cluster) where made already."""
    rows = results[(results["cluster"].astype(str) == cluster).to_numpy()]
    frame = figure_frame(rows)
    if not len(frame):
        return []
    med = metric_scaling.medians(frame)  # once, for the scaling and for the points' flags
    scale = metric_scaling.all_scaling(med)
    flags = Flags(frame, med)
    out: list[str] = []
    for (metric, axis, higher), part in scale.groupby(["metric", "axis", "higher_is_better"], sort=True):
        part = part[(part[axis].to_numpy(float) != part["base"].to_numpy(float))
                    & np.isfinite(part["speedup"].to_numpy(float))]  # a ratio of a zero or negative value: none
        if not len(part):
            continue
        names = figure_labels(part)  # one per row, in one pass
        why = {index: flags.any_reason([(r, {}), (r, _base(r))]) for index, r in part.iterrows()}
        ok = np.array([why[index] is None for index in part.index], dtype=bool)
        superlinear = part["superlinear"].to_numpy(bool)
        clean, unflagged = part[~superlinear & ok], part[ok]
        ranked = clean if len(clean) else unflagged if len(unflagged) else part
        top = ranked.loc[ranked["speedup"].idxmax()]
        way = "higher" if higher else "lower"
        said = (f"{metric} ({way} is better): largest speedup over {axis} {display.ratio(top['speedup'])} "
                f"at {int(top[axis])} {axis} against {int(top['base'])} (efficiency "
                f"{display.percent(top['efficiency'])}) for {_where(top, names[top.name])}")
        reason = why[top.name] or (None if float(top["speedup"]) >= 1 else (
            f"below 1: more {axis} made every point worse, which on a shared or small machine means they "
            "competed for its cores"))
        out.append(f"Flagged: {said}. Why not a finding: {reason}." if reason else f"{said}.")
        for _, r in part[superlinear].iterrows():
            out.append(f"Flagged: {metric} efficiency {display.percent(r['efficiency'])} above "
                       f"{display.percent(limits.SUPERLINEAR)} at {int(r[axis])} {axis} against "
                       f"{int(r['base'])} for {_where(r, names[r.name])}: more than the added resources can give, "
                       f"which on a shared or small machine means the {int(r['base'])}-{axis.removesuffix('s')} "
                       f"point was slowed, not that {metric} scales superlinearly.")
    found = figure_ratios(results, cluster) if ratios is None else ratios
    return (out + _ratio_findings(found, flags))[:MAX_FINDINGS]


def _ratio_findings(found: pd.DataFrame, flags: Flags) -> list[str]:
    """Per figure, its largest ratio between two values of one dimension that is
    beyond the noise and rests on no flagged point (either side), said in the
    figure's direction: "impl b is 1.50× better than a"."""
    # the points as the figure frame names them, whose flags are looked up: a rank, node or GPU count the rows
    # do not say is its default there
    found = found.assign(**{c: d for c, d in SCALE_DEFAULTS.items() if c not in found.columns})
    out: list[str] = []
    for (metric, higher), part in found[found["better"].notna().to_numpy()].groupby(["metric", "higher_is_better"],
                                                                                    sort=True):
        part = part.assign(_effect=np.abs(np.log(part["ratio"].to_numpy(float)))).sort_values(
            "_effect", ascending=False, kind="stable")
        names = figure_labels(part)
        for index, r in part.iterrows():
            other = {str(r["dimension"]): r["b"], "partition": r["partition_b"]}
            if flags.any_reason([(r, {}), (r, other)]):
                continue
            first, second = (r["a"], r["b"]) if r["better"] == "a" else (r["b"], r["a"])
            times = max(float(r["ratio"]), 1.0 / float(r["ratio"]))  # how many times better: the larger way round
            point = pd.concat([r, pd.Series({"axis": ""})])  # every axis held: the point's T, N, R and n
            out.append(f"{metric} ({'higher' if higher else 'lower'} is better): {r['dimension']} {first} is "
                       f"{display.ratio(times)} better than {second} for {_where(point, names[index])}, "
                       "beyond the noise.")
            break
    return out
