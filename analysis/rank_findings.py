"""The summary's findings on scaling over ranks and nodes (analysis/rank_scaling.py's
frames): the largest strong-scaling speedup and the weak-scaling efficiency at the
largest scale, each against its series' base point.

A campaign swept over nodes and ranks is run for these two numbers, so the summary
states them as the thread findings state the largest thread speedup. As there, a
number resting on a flagged point (a shared machine, too few repeats), a speedup
below 1 or an efficiency above SUPERLINEAR is a caveat, not a finding: on a small
or shared machine it says the base point was slowed, not that the program scales
so. One finding of each kind at most; the tables hold every point.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from analysis import display
from analysis.caveats import Finding, Flags, effect
from analysis.limits import SUPERLINEAR, superlinear
from analysis.rank_scaling import WEAK_COLUMNS
from analysis.report_tables import labels, shape_text, size_text

SCANNED = 20  # candidates looked at for a clean finding past flagged ones


def _where(row: pd.Series, label: str) -> str:
    return (f"at {shape_text(int(row['ranks']), int(row['nodes']))} against "
            f"{shape_text(int(row['base_ranks']), int(row['base_nodes']))} "
            f"for {label} at n = {size_text(row['n'])}, T = {int(row['threads'])}")


def _flag(row: pd.Series, efficiency: float, speedup: float | None, flags: Flags) -> str | None:
    if speedup is not None and speedup < 1:
        return "below 1: more ranks made it slower, which on a shared or small machine means the ranks competed"
    if superlinear(efficiency):
        return (f"efficiency {display.percent(efficiency)} is above {display.percent(SUPERLINEAR)}: more than the "
                "added ranks can give, which on a shared or small machine means the base point was slowed")
    return flags.any_reason([(row, {}), (row, {"ranks": row["base_ranks"], "nodes": row["base_nodes"]})])


def _beyond_base(frame: pd.DataFrame) -> pd.DataFrame:
    if not len(frame):
        return frame
    return frame[(frame["ranks"].to_numpy() != frame["base_ranks"].to_numpy())
                 | (frame["nodes"].to_numpy() != frame["base_nodes"].to_numpy())]


def _first_clean(ranked: pd.DataFrame, text: Callable[[pd.Series, str], str], flags: Flags,
                 strong: bool) -> list[Finding]:
    """The first clean candidate; the best flagged one before it, if any, as a caveat."""
    out: list[Finding] = []
    names = labels(ranked.drop(columns=["ranks", "nodes"]))
    for index, row in ranked.head(SCANNED).iterrows():
        speedup = float(row["speedup"]) if strong else None
        why = _flag(row, float(row["efficiency"]), speedup, flags)
        if why is not None and out:
            continue  # one caveat is enough; look on for the clean one
        out.append(Finding(text(row, names[index]), effect(speedup if strong else row["efficiency"]), why))
        if why is None:
            break
    return out


def rank_findings(strong: pd.DataFrame, weak: pd.DataFrame, flags: Flags) -> list[Finding]:
    """Findings of rank_scaling.strong_scaling and weak_scaling frames (one cluster's)."""
    out: list[Finding] = []
    more = _beyond_base(strong)
    if len(more):
        ranked = more.sort_values("speedup", ascending=False, kind="stable")
        out += _first_clean(ranked, lambda r, label: (
            f"Strong scaling: {display.ratio(r['speedup'])} {_where(r, label)} (efficiency "
            f"{display.percent(r['efficiency'])}, per node {display.percent(r['node_efficiency'])})."),
            flags, strong=True)
    wide = _beyond_base(weak)
    if len(wide):  # each series' largest scale, the lowest efficiency first
        series = [c for c in wide.columns if c not in WEAK_COLUMNS] + ["threads", "n"]
        top = wide.sort_values(["ranks", "nodes"], kind="stable").groupby(series, dropna=False, sort=False).tail(1)
        ranked = top.sort_values("efficiency", kind="stable")
        out += _first_clean(ranked, lambda r, label: (
            f"Weak scaling (n per rank): efficiency {display.percent(r['efficiency'])} {_where(r, label)} "
            f"(scaled speedup {display.ratio(r['scaled_speedup'])})."), flags, strong=False)
    return out
