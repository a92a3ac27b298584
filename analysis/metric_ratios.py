"""Ratios of a figure of merit between two values of one dimension (cluster,
partition, impl, variant), per matched point, in the figure's direction:
`report --json` key `figure_ratios` and the report's figures section.

The time ratios' rules (analysis/ratios.py) over the figures' own point
summaries: each figure's rows are summarized as times are (analysis.summary:
the median over repeats and its order-statistic interval), their params'
`metric=` pair keeping every figure a point of its own, so a ratio whose two
intervals overlap is `within_noise` and one resting on a single repeat
`single_repeat`, as a time ratio is. `ratio` is value_a / value_b as the
program printed them; `better` names the side that is better beyond the noise
in the figure's direction ("a" or "b"), null within the noise, on a single
repeat. No ratio is made of a zero or a negative value (null): which side
is better is then told by the values themselves, beyond the same noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Table
from analysis.merit import figure_labels, has_figures
from analysis.metric_frame import set_time_figures, strip_metric
from analysis.ratios import DIMENSIONS, RATIO_COLUMNS, ratios
from analysis.report_tables import NOTE_MARKS, marks, size_text
from analysis.schema import group_columns
from analysis.summary import summarize

VALUES = {"t_a": "value_a", "t_b": "value_b"}
FIGURE_COLUMNS = ("metric", "unit", "higher_is_better", "better")


def figure_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of figures, each figure's value as the measured column; a
    figure that reports a fixed-duration program's set time left out."""
    rows = results[results["metric"].notna().to_numpy() & (results["metric"].astype(str) != "").to_numpy()]
    rows = rows[~set_time_figures(rows)]
    return rows.assign(time_s=pd.to_numeric(rows["value"], errors="coerce"))


def name_figures(out: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """`out` (made from a summary of `rows`, figure_rows) with each record's
    figure named from its params' `metric=` pair: `metric`, and the `unit` and
    `higher_is_better` its kernel's rows say; the pair leaves params."""
    named = [next((p[7:] for p in str(text).split(",") if p.startswith("metric=")), "") for text in out["params"]]
    out = out.assign(params=strip_metric(out["params"]))
    said = rows.assign(_m=rows["metric"].astype(str)).drop_duplicates(["kernel", "_m"])
    unit = {(str(k), m): u for k, m, u in zip(said["kernel"], said["_m"], said["unit"].fillna("").astype(str))}
    higher = {(str(k), m): bool(h) for k, m, h in
              zip(said["kernel"], said["_m"], pd.to_numeric(said["higher_is_better"], errors="coerce").fillna(0) != 0)}
    keys = list(zip(out["kernel"].astype(str), named))
    out["metric"] = named
    out["unit"] = [unit.get(k, "") for k in keys]
    out["higher_is_better"] = np.array([higher.get(k, False) for k in keys], dtype=bool)
    return out


def figure_ratios(results: pd.DataFrame, cluster: str | None = None) -> pd.DataFrame:
    """Every figure's ratios along every dimension (see the module doc); with
    `cluster`, those that concern it (a cross-cluster ratio: either side)."""
    if not has_figures(results):
        return pd.DataFrame(columns=[*RATIO_COLUMNS, *FIGURE_COLUMNS])
    rows = figure_rows(results)
    if not len(rows):
        return pd.DataFrame(columns=[*RATIO_COLUMNS, *FIGURE_COLUMNS])
    summary = summarize(rows)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a zero figure: its ratio is made null below
        frames = [f for f in (ratios(summary, dimension) for dimension in DIMENSIONS) if len(f)]
    if not frames:
        return pd.DataFrame(columns=[*group_columns(summary), *RATIO_COLUMNS, *FIGURE_COLUMNS])
    out = name_figures(pd.concat(frames, ignore_index=True).rename(columns=VALUES), rows)
    a, b = out["value_a"].to_numpy(float), out["value_b"].to_numpy(float)
    # (a ratio past a double's range, 1e300 over 1e-300, is none either)
    positive = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & np.isfinite(out["ratio"].to_numpy(float))
    for column in ("ratio", "ratio_lo", "ratio_hi"):
        out[column] = np.where(positive, out[column].to_numpy(float), np.nan)
    # which side is better needs no ratio: a zero or negative figure is told by its values (as compare does)
    shown = np.isfinite(a) & np.isfinite(b) & ~out["within_noise"].to_numpy(bool) & ~out["single_repeat"].to_numpy(bool)
    a_better = (a > b) == out["higher_is_better"].to_numpy(bool)
    out["better"] = [("a" if first else "b") if said else None for said, first in zip(shown, a_better)]
    if cluster is not None:
        mine = (out["cluster"].astype(str) == cluster) | ((out["dimension"] == "cluster") & (out["b"] == cluster))
        out = out[mine.to_numpy()]
    return out.reset_index(drop=True)


def ratio_tables(ratios_frame: pd.DataFrame) -> list[Table]:
    """One table per figure: each matched pair, its values, ratio and the better side."""
    out: list[Table] = []
    for (metric, unit, higher), part in ratios_frame.groupby(["metric", "unit", "higher_is_better"], sort=True):
        part = part.reset_index(drop=True)
        mark = marks(part["within_noise"], part["single_repeat"])
        rows = pd.DataFrame({
            "configuration": figure_labels(part).tolist(),
            "dimension": part["dimension"].to_numpy(),
            "a": part["a"].to_numpy(), "b": part["b"].to_numpy(),
            "threads": [str(int(t)) for t in part["threads"]],
            "n": [size_text(v) for v in part["n"]],
            "value a": [display.sig(v) for v in part["value_a"]],
            "value b": [display.sig(v) for v in part["value_b"]],
            "a / b": [display.ratio(v) + m for v, m in zip(part["ratio"], mark)],
            "better": [str(s) if s is not None else "–" for s in part["better"]]})
        way = "higher" if higher else "lower"
        out.append(Table(f"Ratios of {metric} [{unit or 'no unit'}] between values of one dimension ({way} is "
                         "better)", rows,
                         f"Median {metric} of a over that of b at the same point otherwise (configuration: a's; "
                         "a cluster ratio matches any partitions); `better`: the side better beyond the noise "
                         f"in the figure's direction, – where none is. {NOTE_MARKS}"))
    return out
