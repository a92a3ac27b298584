"""The report's figures, one per question: scaling, speedup/efficiency, best-thread
map, doubling penalties, ratios, roofline (PNG, 144 dpi; see plot_axes.py).

Every figure is drawn from summarised medians or metric frames, never from raw
result rows, and draws at most MAX_PANELS panels of MAX_LINES lines: its note
says how many groups were left out, so a 100,000-group campaign costs what a
12-group one does. Intervals of medians are drawn as bands, intervals of
ratios as error bars. Empty inputs give no figure (None).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Figure
from analysis.plot_axes import (
    COLOURBAR,
    MAX_LINES,
    MAX_PANELS,
    Axes,
    Handles,
    finite_range,
    grouped,
    log_axis,
    palette,
    panels,
    pick,
    pow2_axis,
    pow2_ratio_tick,
    several,
    short_labels,
    size_axis,
)
from analysis.plot_margins import legend_below
from analysis.report_tables import labels
from analysis.schema import group_columns

MAX_POINTS = 500  # roofline points per kernel and panel

__all__ = ["MAX_LINES", "MAX_PANELS", "Figure", "best_thread_map", "doubling_penalties",
           "ratio_lines", "roofline_plot", "speedup_efficiency", "time_vs_n"]


def _by_group(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return grouped(frame, [c for c in group_columns(frame) if c in frame.columns],
                   lambda firsts: labels(firsts).tolist())


def _several(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows of groups that have more than one value of `column`."""
    keys = [c for c in group_columns(frame) if c in frame.columns]
    return frame[several(frame, keys, column)] if len(frame) else frame


def _values(column: pd.Series) -> list[Any]:
    """A column's distinct values in order; a missing one (the NULL n of a program without a
    problem size) last, as None, so that it keys a colour and a line like any other."""
    return sorted(column.dropna().unique().tolist()) + ([None] if column.isna().any() else [])


def _at(frame: pd.DataFrame, by: str, value: Any) -> pd.DataFrame:
    return frame[frame[by].isna().to_numpy()] if value is None else frame[(frame[by] == value).fillna(False).to_numpy()]


def _lines(ax: Axes, frame: pd.DataFrame, by: str, x: str, y: str, colours: dict[Any, Any],
           handles: Handles, name: str, band: tuple[str, str] | None = None,
           style: str = "-") -> str:
    """One line per value of `by` (capped at MAX_LINES), optional interval band."""
    values = _values(frame[by])
    chosen = pick(values, MAX_LINES)
    for value in chosen:
        part = _at(frame, by, value).sort_values(x)
        (line,) = ax.plot(part[x], part[y], style, marker="o", color=colours.get(value))
        if band is not None and len(part) > 1:
            ax.fill_between(part[x], part[band[0]], part[band[1]], color=line.get_color(),
                            alpha=0.2, linewidth=0)
        handles.setdefault("no n" if value is None else f"{name}{display.size(value) if by == 'n' else value}", line)
    return f"lines per panel capped at {MAX_LINES} {by} values" if len(chosen) < len(values) else ""


def time_vs_n(summary: pd.DataFrame, path: Path) -> Figure | None:
    """Log-log median time vs n, one line per thread count, interval as a band."""
    colours = palette(sorted(summary["threads"].unique().tolist())) if len(summary) else {}

    def draw(ax: Axes, frame: pd.DataFrame, handles: Handles) -> str:
        note = _lines(ax, frame, "threads", "n", "median_s", colours, handles, "T=",
                      band=("ci_lo_s", "ci_hi_s"))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        size_axis(ax.xaxis, frame["n"].tolist())
        log_axis(ax.yaxis, display.seconds_tick, *finite_range(frame["ci_lo_s"],
                                                               frame["ci_hi_s"]))
        ax.set_xlabel("n")
        ax.set_ylabel("median time")
        return note
    several_n = _several(summary, "n")
    extra = ("groups measured at a single n are not drawn"
             if len(several_n) < len(summary) else "")
    return panels(path, "Median time vs n (log-log), one line per thread count T; the band "
                  "is the 95% interval of the median (none with a single repeat)",
                  _by_group(several_n), draw, "groups", extra_note=extra)


def speedup_efficiency(speedup: pd.DataFrame, path: Path) -> Figure | None:
    """Speedup (solid, left axis) and efficiency (dashed, right axis) vs threads."""
    several = _several(speedup, "threads")
    colours = palette(_values(several["n"])) if len(several) else {}

    def draw(ax: Axes, frame: pd.DataFrame, handles: Handles) -> str:
        note = _lines(ax, frame, "n", "threads", "speedup", colours, handles, "n=")
        top = float(frame["threads"].max())
        (ideal,) = ax.plot([1, top], [1, top], color="grey", linestyle=":")
        handles.setdefault("ideal speedup (dotted)", ideal)
        twin = ax.twinx()
        for n in pick(_values(frame["n"]), MAX_LINES):
            part = _at(frame, "n", n).sort_values("threads")
            (eff,) = twin.plot(part["threads"], 100 * part["efficiency"], linestyle="--",
                               color=colours.get(n), linewidth=1.0)
            handles.setdefault("efficiency (dashed, right)", eff)
        twin.set_ylim(0, max(105.0, 105 * float(frame["efficiency"].max())))
        twin.set_ylabel("efficiency [%]")
        twin.grid(False)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        pow2_axis(ax.xaxis, 1.0, top, display.size)
        pow2_axis(ax.yaxis, min(1.0, float(frame["speedup"].min())),
                  max(top, float(frame["speedup"].max())), pow2_ratio_tick)
        ax.set_xlabel("threads T")
        ax.set_ylabel("speedup t(1)/t(T)")
        return note
    extra = ("groups measured at one thread count are not drawn"
             if len(several) < len(speedup) else "")
    return panels(path, "Speedup t(1)/t(T) (solid, left axis; ideal dotted) and efficiency "
                  "S/T (dashed, right axis) vs threads, one colour per n; groups without a "
                  "T=1 run have no speedup", _by_group(several), draw, "groups",
                  extra_note=extra)


def best_thread_map(summary: pd.DataFrame, path: Path) -> Figure | None:
    """Heat map of t(T, n)/t(T*, n) over (n, threads); T* boxed per column."""
    several = _several(summary, "threads")

    def draw(ax: Axes, frame: pd.DataFrame, handles: Handles) -> str:
        grid = frame.pivot_table(index="threads", columns="n", values="median_s", dropna=False)  # NULL n: a column
        rel = (grid / grid.min(axis=0)).to_numpy(dtype=float)
        image = ax.imshow(np.log2(rel), aspect="auto", origin="lower", cmap="viridis_r",
                          vmin=0, vmax=3)
        handles.setdefault(COLOURBAR, image)
        cols = list(range(len(grid.columns)))
        shown = pick(cols, 6)
        ax.set_xticks(shown, [display.size(grid.columns[i]) or "no n" for i in shown])
        ax.set_yticks(range(len(grid.index)), [str(i) for i in grid.index])
        best = np.nanargmin(np.where(np.isnan(rel), np.inf, rel), axis=0)
        box = ax.scatter(cols, best, marker="s", facecolors="none", edgecolors="red", s=90,
                         linewidths=1.5)
        handles.setdefault("T*(n): fastest T", box)
        ax.set_xlabel("n")
        ax.set_ylabel("threads T")
        ax.grid(False)
        return ""
    return panels(path, "Best thread count map: colour = t(T, n)/t(T*, n) on a log2 scale "
                  "shared by every panel (bar below), red box = T*(n), the fastest thread "
                  "count; groups with one thread count are not drawn",
                  _by_group(several), draw, "groups")


def doubling_penalties(penalty: pd.DataFrame, facts: pd.DataFrame, path: Path) -> Figure | None:
    """t(T)/t(T/2) vs T; dashed lines at NUMA boundaries, red at the core count."""
    keyed = facts.set_index(["cluster", "partition"]) if len(facts) else facts
    colours = palette(_values(penalty["n"])) if len(penalty) else {}

    def draw(ax: Axes, frame: pd.DataFrame, handles: Handles) -> str:
        note = _lines(ax, frame, "n", "threads", "penalty", colours, handles, "n=")
        for line in ax.get_lines():
            line.set_zorder(3)  # points above the boundary marks, never hidden by them
        ax.axhline(1.0, color="grey", linewidth=0.8, zorder=1)
        # The x axis spans the measured T (a quarter octave of margin): with a
        # single doubling the points would otherwise sit on the frame, and a
        # boundary far away would squeeze them to one edge.
        lo, hi = float(frame["threads"].min()), float(frame["threads"].max())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        pow2_axis(ax.xaxis, lo, hi, display.size)
        x_lo, x_hi = ax.get_xlim()
        key = (str(frame["cluster"].iloc[0]), str(frame["partition"].iloc[0]))
        if len(keyed) and key in keyed.index:
            fact = keyed.loc[key]
            cores, numa = float(fact["cores"]), float(fact["numa_domains"])
            if np.isfinite(cores) and np.isfinite(numa) and numa > 1:
                # every other NUMA domain shaded, not a line: a boundary at k·cores/numa falls
                # on a measured power of two, and a line there runs through its points
                for k in range(1, int(numa), 2):
                    start, end = k * cores / numa, min((k + 1) * cores / numa, cores)
                    if start < x_hi and end > x_lo:
                        handles.setdefault("every other NUMA domain (shaded)", ax.axvspan(
                            max(start, x_lo), min(end, x_hi), color="orange", alpha=0.10, linewidth=0, zorder=0))
            if np.isfinite(cores) and cores < x_hi:  # T beyond the cores: shaded, not a line
                handles.setdefault("T > physical cores (shaded)", ax.axvspan(
                    max(cores, x_lo), x_hi, color="red", alpha=0.08, linewidth=0, zorder=0))
        ax.set_xlim(x_lo, x_hi)
        y_lo, y_hi = finite_range(frame["penalty"])
        y_lo, y_hi = min(y_lo, 1.0), max(y_hi, 1.0)  # 1× (no change) always in view
        ax.set_ylim(y_lo / 1.3, y_hi * 1.3)
        log_axis(ax.yaxis, display.ratio_tick, y_lo / 1.3, y_hi * 1.3)
        ax.set_xlabel("threads T")
        ax.set_ylabel("t(T)/t(T/2)")
        return note
    return panels(path, "Thread-doubling penalty t(T)/t(T/2), one colour per n; above 1 = "
                  "doubling made it slower; orange shade = every other NUMA domain, red shade = "
                  "more threads than physical cores (when the partition facts give them)",
                  _by_group(penalty), draw, "groups")


def ratio_lines(ratios: pd.DataFrame, path: Path) -> Figure | None:
    """Ratio vs n per comparison; error bars from the two intervals; hollow = noise."""
    if ratios.empty:
        return None
    items = grouped(ratios, ["dimension", "a", "b"],
                    lambda firsts: [f"{d}: {a} / {b}" for d, a, b in
                                    zip(firsts["dimension"], firsts["a"], firsts["b"], strict=True)])
    keys = [c for c in group_columns(ratios) if c in ratios.columns] + ["threads"]

    def draw(ax: Axes, rows: pd.DataFrame, handles: Handles) -> str:
        from analysis.frames import group_codes

        codes, count = group_codes(rows, keys)  # one line per configuration and T
        chosen = pick(list(range(count)), 6)
        parts = [rows[codes == code].sort_values("n") for code in chosen]
        firsts = labels(pd.concat([p.iloc[:1] for p in parts])).tolist()
        names = short_labels([f"{name} T={p['threads'].iloc[0]}" for name, p in zip(firsts, parts, strict=True)])
        for part, name in zip(parts, names, strict=True):
            ratio = part["ratio"].to_numpy(dtype=float)
            lo = part.get("ratio_lo", part["ratio"]).to_numpy(dtype=float)
            hi = part.get("ratio_hi", part["ratio"]).to_numpy(dtype=float)
            err = np.vstack([np.clip(ratio - lo, 0, None), np.clip(hi - ratio, 0, None)])
            drawn = ax.errorbar(part["n"], ratio, yerr=np.nan_to_num(err), marker="o",
                                capsize=3, label=name)
            noisy = part["within_noise"].astype(bool).to_numpy()
            ax.scatter(part["n"].to_numpy()[noisy], ratio[noisy], facecolors="white",
                       zorder=3, edgecolors=drawn.lines[0].get_color(), s=30)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        shown = pd.concat(parts)
        size_axis(ax.xaxis, shown["n"].to_numpy())
        log_axis(ax.yaxis, display.ratio_tick, *finite_range(shown["ratio"], shown.get(
            "ratio_lo", shown["ratio"]), shown.get("ratio_hi", shown["ratio"])))
        ax.set_xlabel("n")
        ax.set_ylabel("t(a)/t(b)")
        legend_below(ax, ncols=1, frameon=False)
        return f"lines per panel capped at 6 of {count}" if len(chosen) < count else ""
    return panels(path, "Ratios t(a)/t(b) vs n (above 1: a is slower); error bars span "
                  "[lo(a)/hi(b), hi(a)/lo(b)] from the two 95% intervals; white markers = "
                  "within noise (or a single repeat)", items, draw, "comparisons",
                  figure_legend=False)


def roofline_plot(roof: pd.DataFrame, path: Path) -> Figure | None:
    """Achieved FLOP/s vs arithmetic intensity per partition, under its roofs if known."""
    usable = roof[np.isfinite(roof["flops_per_s"]) & np.isfinite(roof["intensity"])
                  & (roof["flops_per_s"] > 0)] if len(roof) else roof
    if usable.empty:
        return None
    # One point per (configuration, n): its fastest thread count, the one that
    # says how close the kernel gets; a million points would hide each other.
    keys = [c for c in group_columns(usable) if c in usable.columns] + ["n"]
    usable = usable.sort_values("flops_per_s", ascending=False, kind="stable").drop_duplicates(
        keys)
    items = grouped(usable, ["cluster", "partition"],
                    lambda firsts: [f"{c}:{p}" for c, p in zip(firsts["cluster"], firsts["partition"], strict=True)])
    kernels = sorted(usable["kernel"].astype("str").unique().tolist())
    colours = palette(kernels)
    roofs_drawn: list[bool] = []
    capped = bool((usable.groupby(["cluster", "partition", "kernel"]).size() > MAX_POINTS).any())

    def draw(ax: Axes, rows: pd.DataFrame, handles: Handles) -> str:
        for kernel in pick(sorted(rows["kernel"].astype("str").unique().tolist()), MAX_LINES):
            part = rows[rows["kernel"] == kernel].head(MAX_POINTS)  # the fastest ones
            handles.setdefault(kernel, ax.scatter(part["intensity"], part["flops_per_s"], s=16,
                                                  color=colours[kernel]))
        lo, hi = finite_range(rows["intensity"])
        ai = np.logspace(np.log10(lo / 2), np.log10(hi * 2), 64)
        ceilings = rows[["peak_flops", "mem_bw"]].dropna().drop_duplicates()
        for peak, bw in ceilings.itertuples(index=False):
            (line,) = ax.plot(ai, np.minimum(ai * bw, peak), color="black", linewidth=1.2)
            handles.setdefault("roof min(peak, intensity × bandwidth)", line)
        roofs_drawn.append(len(ceilings) > 0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_axis(ax.xaxis, display.tick, lo / 2, hi * 2)
        y_lo, y_hi = finite_range(rows["flops_per_s"], rows["roof_flops"])
        unit, scale = display.rate_unit([y_hi], "FLOP/s")
        log_axis(ax.yaxis, lambda v: display.tick(v / scale), y_lo, y_hi)
        ax.set_xlabel("arithmetic intensity [FLOP/byte]")
        ax.set_ylabel(f"achieved [{unit}]")
        return ""
    fig = panels(path, "roofline", items, draw, "partitions")
    if fig is None:
        return None
    caption = ("Roofline: achieved FLOP/s vs arithmetic intensity (cost-model FLOP and "
               "minimum bytes), one point per configuration and n at its fastest thread "
               "count, one colour per kernel")
    if all(roofs_drawn):
        caption += "; black = min(peak FLOP/s of the dtype, intensity × memory bandwidth)"
    elif any(roofs_drawn):
        caption += ("; black = min(peak FLOP/s, intensity × memory bandwidth) where the "
                    "partition has ceilings (panels without a black line have none)")
    else:
        caption += ("; no roof is drawn: no ceilings (peak FLOP/s, memory bandwidth) are "
                    "configured for these partitions")
    note = "; ".join(filter(None, [fig.note, f"at most the {MAX_POINTS} fastest points per "
                                   "kernel and panel" if capped else ""]))
    return Figure(fig.path, caption, note, fig.width_in, fig.height_in)
