"""Figures of merit of any benchmark (docs/byob.md): the report's tables of
what a program said about itself, in its own units and direction.

Why apart from the time analysis: a rate (GB/s, events/s) grows when the
program gets faster, so its speedup over fewer threads is v(T)/v(T0), while
a time's is t(T0)/t(T); and a reader compares a bandwidth with the
partition's ceiling, not with a time. Rows carry `metric`, `value`, `unit`
and `higher_is_better` (docs/contracts.md#figures-of-merit); rows without
them (the shipped kernels) give no table here. Where the cost model gave
`bytes`, the bandwidth bytes / time_s is shown against `mem_bw` of the
partition when the partition declares it.
The same figures in `report --json`: analysis/merit_json.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import display, limits, metric_scaling
from analysis.blocks import Figure, Table
from analysis.frames import group_median
from analysis.metric_frame import (
    DIMENSIONS,
    TIME,
    VALUE_COLUMNS,
    fixed_duration,
    metric_frame,
    set_time_figures,
    strip_metric,
)
from analysis.plot_axes import Axes, Handles, finite_range, log_axis, palette, panels, pick, size_axis
from analysis.report_tables import labels, size_text

FOM_COLUMNS = ("metric", "value", "unit", "higher_is_better")
TITLE = "Figures of merit"
INTRO = ("What each benchmark reported about itself, read from its output by the patterns of its YAML: "
         "medians over repeats in the figure's own unit, one point per nodes, ranks, threads, n and "
         "arguments (never pooled). Speedup over threads, ranks and nodes is in the figure's direction: "
         "v/v(base) for rates (higher is better), t(base)/t for times, the base the fewest measured. "
         "A fixed-duration program (kernel YAML `fixed_duration`) is judged on these figures only.")


AXES_SHOWN = ("nodes", "ranks", "threads", "n")  # a figure's median table has a column for each


def figure_labels(frame: pd.DataFrame) -> pd.Series:
    """Each configuration's name as the report's other tables give it
    (report_tables.labels: kernel/impl/variant dtype d partition device
    [params]), its params without the figure's own name (the table's caption
    says it); nodes and ranks have columns of their own here."""
    shown = frame.drop(columns=[c for c in ("ranks", "nodes") if c in frame.columns])
    shown = shown.assign(params=strip_metric(shown["params"]) if "params" in shown.columns else "")
    return labels(shown if "device" in shown.columns else shown.assign(device="cpu"))


def has_figures(results: pd.DataFrame) -> bool:
    return all(c in results.columns for c in FOM_COLUMNS) and bool(results["metric"].notna().any())


def medians(results: pd.DataFrame) -> pd.DataFrame:
    """Median value (and time_s, bytes) per configuration, figure, nodes, ranks, threads and n."""
    rows = results[results["metric"].notna()]
    rows = rows[~set_time_figures(rows)].copy()  # a set duration measures nothing
    rows["unit"] = rows["unit"].fillna("").astype(str)
    rows["value"] = pd.to_numeric(rows["value"], errors="coerce")
    rows["higher_is_better"] = pd.to_numeric(rows["higher_is_better"], errors="coerce").fillna(0).astype(bool)
    rows["params"] = strip_metric(rows["params"]) if "params" in rows.columns else ""
    if "bytes" not in rows.columns:
        rows["bytes"] = np.nan
    for col in ("nodes", "ranks"):  # a point of 2 nodes is never pooled with one of 1
        rows[col] = pd.to_numeric(rows[col], errors="coerce").fillna(1).astype("int64") if col in rows else 1
    # every dimension of the run: an fp32 and an fp64 point, or two devices, are never one median
    config = [c for c in DIMENSIONS if c in rows.columns and c not in AXES_SHOWN]
    keys = [*config, "metric", "unit", "higher_is_better", *AXES_SHOWN]
    med = (rows.groupby(keys, dropna=False, sort=True)
           .agg(time_s=("time_s", "median"), bytes=("bytes", "median"), repeats=("value", "size"))
           .reset_index())
    med.insert(len(keys), "value", group_median(rows, keys, "value"))
    med.insert(len(config), "label", figure_labels(med) if len(med) else pd.Series(dtype=str))
    return med.sort_values(["cluster", "partition", "label", "metric", "nodes", "ranks", "threads", "n"],
                           kind="stable", na_position="last").reset_index(drop=True)


def _value_table(part: pd.DataFrame, metric: str, unit: str, higher: bool) -> Table:
    index = ["label", *_shapes(part), "threads"]
    # pivoted on the numbers, so the sizes sort as numbers and the NULL n is last; named as the time tables
    # name them (an n made float by another program's NULLs is still `1000`, never `1000.0`)
    wide = part.assign(n=part["n"].astype("float64").fillna(np.inf)).pivot_table(
        index=index, columns="n", values="value", aggfunc="first")
    wide.columns = [size_text(None if np.isinf(c) else c) for c in wide.columns]
    shown = wide.map(display.sig).reset_index().rename(columns={"label": "configuration"})
    shown.columns = [str(c) for c in shown.columns]
    direction = "higher is better" if higher else "lower is better"
    return Table(f"Median {metric} [{unit or 'no unit'}] per n ({direction})", shown,
                 "Median over repeats of the figure the program printed; columns are n.")


def axes_text(row: pd.Series) -> str:
    """What a series holds fixed, e.g. "T=2 N=1 R=2". Over nodes the ranks grow
    with the nodes and the ranks per node are what stays: "T=1 R/node=2"."""
    if row["axis"] == "nodes":
        fixed = [("T", row.get("threads")), ("R/node", row["ranks"] // max(row["nodes"], 1))]
    else:
        fixed = [(k, row.get(c)) for k, c in (("T", "threads"), ("N", "nodes"), ("R", "ranks")) if c != row["axis"]]
    return " ".join(f"{k}={int(v)}" for k, v in fixed if v is not None and not pd.isna(v))


def _scaling_tables(frame: pd.DataFrame) -> list[Table]:
    """Speedup and efficiency of each figure over threads, ranks and nodes, in its direction."""
    scale = metric_scaling.all_scaling(frame)
    out: list[Table] = []
    for (metric, axis, higher), part in scale.groupby(["metric", "axis", "higher_is_better"], sort=True):
        part = part.reset_index(drop=True)
        rows = pd.DataFrame({
            "configuration": figure_labels(part).tolist(),
            "n": [display.size(v) if display.finite(v) else "–" for v in part["n"]],
            "at": [axes_text(r) for _, r in part.iterrows()],
            "scaling": part["scaling"].to_numpy(),
            f"{axis} base": part["base"].astype(str).to_numpy(),
            axis: part[axis].astype(int).astype(str).to_numpy(),
            "median": [display.sig(v) for v in part["value"]],
            "speedup": [display.ratio(v) for v in part["speedup"]],
            "efficiency": [limits.efficiency_cell(e) for e in part["efficiency"]]})
        formula = "v/v(base)" if higher else "t(base)/t"
        held = "ranks per node and threads" if axis == "nodes" else "the other axes"
        note = (f"`at`: what the series holds ({held}). "
                f"Speedup {formula} in the figure's direction ({'higher' if higher else 'lower'} is better); "
                f"efficiency = speedup x base / {axis}"
                + ("" if higher else " (weak scaling: t(base)/t)") + ". " + limits.superlinear_note(axis))
        out.append(Table(f"Scaling of {metric} over {axis}", rows, note))
    return out


def _exponent_tables(frame: pd.DataFrame) -> list[Table]:
    """The fitted exponent of each figure over n (none for a program without sizes)."""
    fits = metric_scaling.exponents(frame)
    out = []
    for (metric, higher), part in fits.groupby(["metric", "higher_is_better"], sort=True):
        rows = pd.DataFrame({
            "configuration": figure_labels(part).tolist(),
            "at": [axes_text(pd.concat([r, pd.Series({"axis": ""})])) for _, r in part.iterrows()],
            "n range": [f"{display.size(a)} … {display.size(b)}" for a, b in zip(part["n_min"], part["n_max"])],
            "sizes": part["sizes"].astype(str).to_numpy(),
            "exponent k": [f"{k:.3f}" for k in part["exponent"]]})
        out.append(Table(f"Fitted exponent k of {metric} ∝ n^k ({'higher' if higher else 'lower'} is better)",
                         rows, "Least-squares slope of log value on log n over the sizes measured."))
    return out


def _ceilings(partitions: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    ceilings: dict[tuple[str, str], float] = {}
    if partitions is not None and len(partitions) and "mem_bw" in partitions.columns:
        for _, p in partitions.iterrows():
            if display.finite(p["mem_bw"]):
                ceilings[(str(p["cluster"]), str(p["partition"]))] = float(p["mem_bw"])
    return ceilings


def bandwidth(med: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration, threads and n that has cost-model bytes, with bytes / time_s."""
    first = med[med["bytes"].notna() & (med["time_s"] > 0)]
    first = first.drop_duplicates([c for c in DIMENSIONS if c in first.columns]).copy()  # one row per point
    first["bytes_per_s"] = first["bytes"] / first["time_s"]
    return first


def _shapes(frame: pd.DataFrame) -> list[str]:
    """nodes and ranks where they differ among the points: a 1-node and a 2-node point of one
    configuration, threads and n are told apart by them."""
    return [c for c in ("nodes", "ranks") if c in frame.columns and frame[c].nunique() > 1]


def _bandwidth_table(med: pd.DataFrame, partitions: pd.DataFrame | None) -> Table | None:
    """bytes / time_s per configuration, nodes and ranks (where they differ), threads and n, with the
    ceiling where declared."""
    first = bandwidth(med)
    if not len(first):
        return None
    ceilings = _ceilings(partitions)
    shapes = _shapes(first)
    rows = []
    for _, r in first.iterrows():
        bw = r["bytes"] / r["time_s"]
        ceiling = ceilings.get((str(r["cluster"]), str(r["partition"])))
        rows.append({"configuration": r["label"], **{c: str(int(r[c])) for c in shapes},
                     "threads": str(int(r["threads"])), "n": str(r["n"]),
                     "GB/s": display.sig(bw / 1e9),
                     "ceiling GB/s": display.sig(ceiling / 1e9) if ceiling else "not declared",
                     "of ceiling": display.percent(bw / ceiling) if ceiling else "–"})
    return Table("Bandwidth from the cost model (bytes / median time) against the partition's mem_bw",
                 pd.DataFrame(rows), "bytes: the kernel YAML's `bytes` expression; time: the run's time_s "
                 "(the program's own time figure where it prints one). Ceiling: cluster YAML "
                 "partitions.*.ceilings.mem_bw.")


def bandwidth_plot(results: pd.DataFrame, partitions: pd.DataFrame | None, cluster: str,
                   path: Path) -> Figure | None:
    """Bandwidth (cost-model bytes / median time) vs n, one line per configuration
    and thread count, under the partition's mem_bw where declared."""
    if not has_figures(results):
        return None
    bw = bandwidth(medians(results[results["cluster"].astype(str) == cluster]))
    bw = bw[bw["bytes_per_s"] > 0]
    if bw.empty:
        return None
    ceilings = _ceilings(partitions)
    bw["line"] = bw["label"] + " T=" + bw["threads"].astype(int).astype(str)
    for c in _shapes(bw):  # a line per node and rank count too, where they differ
        bw["line"] += f" {c[0].upper()}=" + bw[c].astype(int).astype(str)
    lines = pick(sorted(bw["line"].unique().tolist()), 8)
    colours = palette(lines)
    drawn: list[bool] = []

    def draw(ax: Axes, rows: pd.DataFrame, handles: Handles) -> str:
        for line in [x for x in lines if x in set(rows["line"])]:
            part = rows[rows["line"] == line].sort_values("n")
            (h,) = ax.plot(part["n"], part["bytes_per_s"], marker="o", color=colours[line])
            handles.setdefault(line, h)
        top = [rows["bytes_per_s"]]
        ceiling = ceilings.get((str(rows["cluster"].iloc[0]), str(rows["partition"].iloc[0])))
        if ceiling:
            handles.setdefault("mem_bw ceiling", ax.axhline(ceiling, color="black", linestyle="--"))
            top.append(pd.Series([ceiling]))
        drawn.append(bool(ceiling))
        ax.set_xscale("log")
        ax.set_yscale("log")
        size_axis(ax.xaxis, rows["n"].astype(float).to_numpy())
        lo, hi = finite_range(*top)
        unit, scale = display.rate_unit([hi], "B/s")
        log_axis(ax.yaxis, lambda v: display.tick(v / scale), lo / 1.5, hi * 1.5)
        ax.set_xlabel("n")
        ax.set_ylabel(f"bandwidth [{unit}]")
        return ""

    items = [(f"{c}:{p}", rows) for (c, p), rows in bw.groupby(["cluster", "partition"], sort=True)]
    fig = panels(path, "bandwidth", items, draw, "partitions")
    if fig is None:
        return None
    caption = ("Bandwidth from the cost model (bytes / median time) vs n, one line per configuration and "
               "thread count (and node and rank count, N and R, where they differ); " + ("dashed = the partition's mem_bw ceiling" if all(drawn) else
                                   "no dashed ceiling where the partition declares no ceilings.mem_bw"))
    return Figure(fig.path, caption, fig.note, fig.width_in, fig.height_in)


def merit_tables(results: pd.DataFrame, partitions: pd.DataFrame | None, cluster: str) -> list[Table]:
    """Every table of the section for one cluster (none without figures of merit)."""
    if not has_figures(results):
        return []
    mine = results[results["cluster"].astype(str) == cluster]
    med = medians(mine)
    out = [_value_table(part, str(metric), str(unit), bool(higher)) for (metric, unit, higher), part in
           med.groupby(["metric", "unit", "higher_is_better"], sort=True)]
    frame = figure_frame(mine)
    out += _scaling_tables(frame) + _exponent_tables(frame)
    bandwidth = _bandwidth_table(med, partitions)
    return out + ([bandwidth] if bandwidth is not None else [])


def timing_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows the time analysis reads: one figure per invocation. Every
    figure of a run shares its time_s (the program's own time figure, else
    the invocation's wall time: campaign.job.fom), so the time sections would
    repeat each configuration once per figure. Kept: per kernel, its time
    figure (lower is better), else its first; `metric=` leaves params. A
    fixed-duration program's rows are left out: its time is its setting."""
    if not has_figures(results):
        return results
    results = results[~fixed_duration(results).to_numpy()]  # judged on its figures, never its set time
    fom = results["metric"].notna()
    rows = results[fom]
    lower = pd.to_numeric(rows["higher_is_better"], errors="coerce").fillna(0) == 0
    chosen: dict[str, str] = {}
    for kernel, metric, is_time in zip(rows["kernel"].astype(str), rows["metric"].astype(str), lower):
        if kernel not in chosen or (is_time and not chosen[kernel].startswith("\0")):
            chosen[kernel] = ("\0" + metric) if is_time else metric
    keep = np.array([not f or ("\0" + m) == chosen.get(k) or m == chosen.get(k)
                     for f, k, m in zip(fom, results["kernel"].astype(str), results["metric"].astype(str))],
                    dtype=bool)
    out = results[keep].copy()
    out["params"] = strip_metric(out["params"]).to_numpy()
    return out


def figure_frame(results: pd.DataFrame) -> pd.DataFrame:
    """The metric frame of the rows' figures of merit (their time_s, which a
    `time` figure already says, left out); empty without figures."""
    if not has_figures(results):
        return pd.DataFrame(columns=[*DIMENSIONS, "repeat", "replicate", *VALUE_COLUMNS])
    frame = metric_frame(results[results["metric"].notna().to_numpy()])
    return frame[frame["metric"] != TIME].reset_index(drop=True)
