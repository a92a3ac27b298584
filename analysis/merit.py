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
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Figure, Table
from analysis.plot_axes import Axes, Handles, finite_range, log_axis, palette, panels, pick, size_axis

FOM_COLUMNS = ("metric", "value", "unit", "higher_is_better")
TITLE = "Figures of merit"
INTRO = ("What each benchmark reported about itself, read from its output by the patterns of its YAML: "
         "medians over repeats in the figure's own unit. Speedup is in the figure's direction: "
         "v(T)/v(T0) for rates (higher is better), t(T0)/t(T) for times, T0 the fewest threads measured.")


def _params(text: object) -> str:
    """The run's params without the figure's own name (shown in the caption)."""
    parts = [p for p in str(text or "").split(",") if p and not p.startswith("metric=")]
    return f" [{','.join(parts)}]" if parts else ""


def _label(row: pd.Series) -> str:
    return f"{row['kernel']}/{row['impl']}/{row['variant']} {row['partition']}{_params(row.get('params'))}"


def has_figures(results: pd.DataFrame) -> bool:
    return all(c in results.columns for c in FOM_COLUMNS) and bool(results["metric"].notna().any())


def medians(results: pd.DataFrame) -> pd.DataFrame:
    """Median value (and time_s, bytes) per configuration, figure, threads and n."""
    rows = results[results["metric"].notna()].copy()
    rows["value"] = pd.to_numeric(rows["value"], errors="coerce")
    rows["higher_is_better"] = pd.to_numeric(rows["higher_is_better"], errors="coerce").fillna(0).astype(bool)
    rows["unit"] = rows["unit"].fillna("").astype(str)
    rows["label"] = rows.apply(_label, axis=1) if len(rows) else pd.Series(dtype=str)
    if "bytes" not in rows.columns:
        rows["bytes"] = np.nan
    keys = ["cluster", "partition", "label", "metric", "unit", "higher_is_better", "threads", "n"]
    return (rows.groupby(keys, dropna=False, sort=True)
            .agg(value=("value", "median"), time_s=("time_s", "median"), bytes=("bytes", "median"),
                 repeats=("value", "size"))
            .reset_index())


def _value_table(part: pd.DataFrame, metric: str, unit: str, higher: bool) -> Table:
    wide = part.pivot_table(index=["label", "threads"], columns="n", values="value", aggfunc="first")
    shown = wide.map(display.sig).reset_index().rename(columns={"label": "configuration"})
    shown.columns = [str(c) for c in shown.columns]
    direction = "higher is better" if higher else "lower is better"
    return Table(f"Median {metric} [{unit or 'no unit'}] per n ({direction})", shown,
                 "Median over repeats of the figure the program printed; columns are n.")


def _speedup_table(part: pd.DataFrame, metric: str, higher: bool) -> Table | None:
    rows = []
    for (label, n), cell in part.groupby(["label", "n"], sort=True):
        if cell["threads"].nunique() < 2:
            continue
        cell = cell.sort_values("threads")
        base = cell.iloc[0]
        for _, r in cell.iloc[1:].iterrows():
            ratio = r["value"] / base["value"] if higher else base["value"] / r["value"]
            rows.append({"configuration": label, "n": str(n), "T0": str(int(base["threads"])),
                         "T": str(int(r["threads"])), "speedup": display.ratio(ratio),
                         "efficiency": display.percent(ratio * base["threads"] / r["threads"])})
    if not rows:
        return None
    return Table(f"Speedup of {metric} over T0 threads ({'v(T)/v(T0)' if higher else 't(T0)/t(T)'})",
                 pd.DataFrame(rows), "Efficiency = speedup x T0 / T.")


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
    first = first.drop_duplicates(["cluster", "partition", "label", "threads", "n"]).copy()
    first["bytes_per_s"] = first["bytes"] / first["time_s"]
    return first


def _bandwidth_table(med: pd.DataFrame, partitions: pd.DataFrame | None) -> Table | None:
    """bytes / time_s per configuration, threads and n, with the ceiling where declared."""
    first = bandwidth(med)
    if not len(first):
        return None
    ceilings = _ceilings(partitions)
    rows = []
    for _, r in first.iterrows():
        bw = r["bytes"] / r["time_s"]
        ceiling = ceilings.get((str(r["cluster"]), str(r["partition"])))
        rows.append({"configuration": r["label"], "threads": str(int(r["threads"])), "n": str(r["n"]),
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
    bw["line"] = [f"{label} T={int(t)}" for label, t in zip(bw["label"], bw["threads"])]
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
               "thread count; " + ("dashed = the partition's mem_bw ceiling" if all(drawn) else
                                   "no dashed ceiling where the partition declares no ceilings.mem_bw"))
    return Figure(fig.path, caption, fig.note, fig.width_in, fig.height_in)


def merit_tables(results: pd.DataFrame, partitions: pd.DataFrame | None, cluster: str) -> list[Table]:
    """Every table of the section for one cluster (none without figures of merit)."""
    if not has_figures(results):
        return []
    mine = results[results["cluster"].astype(str) == cluster]
    med = medians(mine)
    out: list[Table] = []
    for (metric, unit, higher), part in med.groupby(["metric", "unit", "higher_is_better"], sort=True):
        out.append(_value_table(part, str(metric), str(unit), bool(higher)))
        speed = _speedup_table(part, str(metric), bool(higher))
        if speed is not None:
            out.append(speed)
    bandwidth = _bandwidth_table(med, partitions)
    return out + ([bandwidth] if bandwidth is not None else [])


def timing_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows the time analysis reads: one figure per invocation. Every
    figure of a run shares its time_s (the program's own time figure, else
    the invocation's wall time: campaign.job.fom), so the time sections would
    repeat each configuration once per figure. Kept: per kernel, its time
    figure (lower is better), else its first; `metric=` leaves params."""
    if not has_figures(results):
        return results
    fom = results["metric"].notna()
    rows = results[fom]
    lower = pd.to_numeric(rows["higher_is_better"], errors="coerce").fillna(0) == 0
    chosen: dict[str, str] = {}
    for kernel, metric, is_time in zip(rows["kernel"].astype(str), rows["metric"].astype(str), lower):
        if kernel not in chosen or (is_time and not chosen[kernel].startswith("\0")):
            chosen[kernel] = ("\0" + metric) if is_time else metric
    keep = np.array([not f or ("\0" + m) == chosen.get(k) or m == chosen.get(k)
                     for f, k, m in zip(fom, results["kernel"].astype(str), results["metric"].astype(str))])
    out = results[keep].copy()
    out["params"] = [",".join(p for p in str(text).split(",") if p and not p.startswith("metric="))
                     for text in out["params"]]
    return out


def figures_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figures_of_merit: the medians, one record per
    configuration, figure, threads and n ([] without figures of merit)."""
    if not has_figures(results):
        return []
    rows = results if cluster is None else results[results["cluster"].astype(str) == cluster]
    med = medians(rows)
    out = []
    for rec in med.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()})
    return out
