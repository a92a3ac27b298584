"""PNG figures for the per-cluster report (matplotlib, Agg backend).

Each function draws one figure of small panels (one per group), writes it to
`path` and returns a `Figure` record with a note on what was left out: with
many groups the figure keeps the first MAX_PANELS panels and MAX_LINES lines
per panel, and says so, instead of becoming unreadable. matplotlib is imported
inside `_pyplot` so that importing `analysis` stays cheap. Groups with one
point or without T = 1 draw what they have; empty inputs give no figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.schema import group_columns

MAX_PANELS = 12
MAX_LINES = 8
Axes = Any  # matplotlib.axes.Axes, imported lazily


@dataclass(frozen=True)
class Figure:
    """A written PNG, its caption and what it left out ("" if nothing)."""

    path: Path
    caption: str
    note: str


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def group_label(row: pd.Series | dict[str, Any], with_cluster: bool = False) -> str:
    """Short readable name of a group: kernel/impl/variant, dtype, d, partition."""
    parts = [f"{row['kernel']}/{row['impl']}/{row['variant']}"]
    if "dtype" in row and isinstance(row["dtype"], str):
        parts.append(row["dtype"])
    if "d" in row and pd.notna(row["d"]):
        parts.append(f"d={int(row['d'])}")
    parts.append(f"{row['cluster']}:{row['partition']}" if with_cluster else str(row["partition"]))
    if row.get("device") not in (None, "cpu"):
        parts.append(str(row["device"]))
    params = row.get("params")
    if isinstance(params, str) and params:
        parts.append(f"[{params}]")
    return " ".join(parts)


def _groups(frame: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """(label, rows) per group in key order; a handful of groups, not rows."""
    keys = [c for c in group_columns(frame) if c in frame.columns]
    for _, rows in frame.groupby(keys, dropna=False, sort=True):
        yield group_label(rows.iloc[0]), rows


def _pick(values: list[Any], limit: int) -> list[Any]:
    """At most `limit` values spread evenly, always keeping first and last."""
    if len(values) <= limit:
        return values
    idx = np.unique(np.linspace(0, len(values) - 1, limit).round().astype(int))
    return [values[i] for i in idx]


def _panels(path: Path, caption: str, items: list[tuple[str, pd.DataFrame]],
            draw: Callable[[Axes, pd.DataFrame], str], what: str) -> Figure | None:
    """Grid of panels, one per item; `draw` returns a note on lines left out."""
    if not items:
        return None
    plt = _pyplot()
    shown = items[:MAX_PANELS]
    cols = min(3, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.3 * rows), squeeze=False)
    notes: set[str] = set()
    for ax, (label, frame) in zip(axes.flat, shown, strict=False):
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
        note = draw(ax, frame)
        if note:
            notes.add(note)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    # Fixed margins: tight_layout draws the figure an extra time (a third of the cost).
    fig.subplots_adjust(left=0.06, right=0.94, bottom=0.4 / rows, top=1 - 0.25 / rows,
                        hspace=0.6, wspace=0.5)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    left = len(items) - len(shown)
    text = [f"{left} of {len(items)} {what} not shown (cap {MAX_PANELS} panels)"] if left else []
    return Figure(path, caption, "; ".join(text + sorted(notes)))


def _lines(ax: Axes, frame: pd.DataFrame, by: str, x: str, y: str,
           named: bool = True) -> tuple[str, list[Any]]:
    """One line per value of `by` (capped at MAX_LINES), markers for single points.

    Returns a note on values left out and the values drawn, so overlays (noise
    markers) can match the lines.
    """
    values = sorted(frame[by].dropna().unique().tolist())
    chosen = _pick(values, MAX_LINES)
    for value in chosen:
        part = frame[frame[by] == value].sort_values(x)
        ax.plot(part[x], part[y], marker="o", markersize=3,
                label=f"{by}={value}" if named else str(value))
    if chosen:
        ax.legend(fontsize=6)
    note = f"lines per panel capped at {MAX_LINES} {by} values" if len(chosen) < len(values) else ""
    return note, chosen


def time_vs_n(summary: pd.DataFrame, path: Path) -> Figure | None:
    """Log-log median time vs n, one line per thread count."""
    def draw(ax: Axes, frame: pd.DataFrame) -> str:
        note, _ = _lines(ax, frame, "threads", "n", "median_s")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n", fontsize=7)
        ax.set_ylabel("median time [s]", fontsize=7)
        return note
    return _panels(path, "Median time vs n (log-log), one line per thread count",
                   list(_groups(summary)), draw, "groups")


def speedup_efficiency(speedup: pd.DataFrame, path: Path) -> Figure | None:
    """Speedup (solid, left axis) and efficiency (dashed, right axis) vs threads."""
    def draw(ax: Axes, frame: pd.DataFrame) -> str:
        note, _ = _lines(ax, frame, "n", "threads", "speedup")
        top = float(frame["threads"].max())
        ax.plot([1, top], [1, top], color="grey", linestyle=":", linewidth=1)
        twin = ax.twinx()
        for n in _pick(sorted(frame["n"].unique().tolist()), MAX_LINES):
            part = frame[frame["n"] == n].sort_values("threads")
            twin.plot(part["threads"], part["efficiency"], linestyle="--", linewidth=0.8)
        twin.set_ylim(0, max(1.05, float(frame["efficiency"].max()) * 1.05))
        twin.tick_params(labelsize=7)
        twin.set_ylabel("efficiency (dashed)", fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads", fontsize=7)
        ax.set_ylabel("speedup t(1)/t(T)", fontsize=7)
        return note
    return _panels(path, "Speedup (solid, ideal dotted) and efficiency (dashed) vs threads; "
                   "groups without a T=1 run are not shown", list(_groups(speedup)), draw,
                   "groups")


def best_thread_map(summary: pd.DataFrame, path: Path) -> Figure | None:
    """Heat map of t(T, n)/t(T*, n) over (n, threads); T* boxed per column."""
    def draw(ax: Axes, frame: pd.DataFrame) -> str:
        grid = frame.pivot_table(index="threads", columns="n", values="median_s")
        rel = grid / grid.min(axis=0)
        image = ax.imshow(np.log2(rel.to_numpy(dtype=float)), aspect="auto", origin="lower",
                          cmap="viridis_r", vmin=0, vmax=3)
        ax.set_xticks(range(len(rel.columns)), [str(c) for c in rel.columns], rotation=90)
        ax.set_yticks(range(len(rel.index)), [str(i) for i in rel.index])
        best = np.nanargmin(np.where(np.isnan(rel.to_numpy()), np.inf, rel.to_numpy()), axis=0)
        ax.scatter(range(len(rel.columns)), best, marker="s", facecolors="none",
                   edgecolors="red", s=40)
        ax.set_xlabel("n", fontsize=7)
        ax.set_ylabel("threads", fontsize=7)
        ax.figure.colorbar(image, ax=ax, label="log2 t/t(T*)")
        return ""
    return _panels(path, "Best thread count map: colour = log2 of t(T,n)/t(T*,n) "
                   "(0 = best), red box = T*(n)", list(_groups(summary)), draw, "groups")


def doubling_penalties(penalty: pd.DataFrame, facts: pd.DataFrame, path: Path) -> Figure | None:
    """t(T)/t(T/2) vs T; dashed lines at NUMA boundaries, red at the core count."""
    keyed = facts.set_index(["cluster", "partition"]) if len(facts) else facts

    def draw(ax: Axes, frame: pd.DataFrame) -> str:
        note, _ = _lines(ax, frame, "n", "threads", "penalty")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        key = (str(frame["cluster"].iloc[0]), str(frame["partition"].iloc[0]))
        if len(keyed) and key in keyed.index:
            fact = keyed.loc[key]
            cores, numa = float(fact["cores"]), float(fact["numa_domains"])
            if np.isfinite(cores) and np.isfinite(numa) and numa > 0:
                for k in range(1, int(numa)):
                    ax.axvline(k * cores / numa, color="orange", linestyle="--", linewidth=0.7)
            if np.isfinite(cores):
                ax.axvline(cores, color="red", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads T", fontsize=7)
        ax.set_ylabel("t(T)/t(T/2)", fontsize=7)
        return note
    return _panels(path, "Thread-doubling penalty t(T)/t(T/2); orange dashed = NUMA domain "
                   "boundaries, red = physical cores; above 1 = doubling made it slower",
                   list(_groups(penalty)), draw, "groups")


def ratio_lines(ratios: pd.DataFrame, path: Path) -> Figure | None:
    """Ratio vs n per comparison; hollow markers where the ratio is within noise."""
    if ratios.empty:
        return None
    frame = ratios.copy()
    frame["line"] = (frame["kernel"].astype("str") + "/" + frame["impl"].astype("str")
                      + "/" + frame["variant"].astype("str") + " T=" + frame["threads"].astype("str"))
    items = [(f"{dim}: {a} / {b}", rows) for (dim, a, b), rows
             in frame.groupby(["dimension", "a", "b"], sort=True)]

    def draw(ax: Axes, rows: pd.DataFrame) -> str:
        note, chosen = _lines(ax, rows, "line", "n", "ratio", named=False)
        noisy = rows[rows["within_noise"].astype(bool) & rows["line"].isin(chosen)]
        ax.scatter(noisy["n"], noisy["ratio"], facecolors="white", edgecolors="black", s=14, zorder=3)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n", fontsize=7)
        ax.set_ylabel("t(a)/t(b)", fontsize=7)
        return note.replace("line values", "comparisons")
    return _panels(path, "Ratios t(a)/t(b) vs n (above 1: a is slower); white markers = "
                   "within noise", items, draw, "comparisons")


def roofline_plot(roof: pd.DataFrame, path: Path) -> Figure | None:
    """Achieved FLOP/s vs arithmetic intensity per partition, under its ceilings."""
    usable = roof[np.isfinite(roof["flops_per_s"]) & np.isfinite(roof["intensity"])]
    items = [(f"{c}:{p}", rows) for (c, p), rows in usable.groupby(["cluster", "partition"])]

    def draw(ax: Axes, rows: pd.DataFrame) -> str:
        kernels = sorted(rows["kernel"].astype("str").unique().tolist())
        for kernel in _pick(kernels, MAX_LINES):
            part = rows[rows["kernel"] == kernel]
            ax.scatter(part["intensity"], part["flops_per_s"], s=6, label=kernel)
        ai = np.logspace(np.log10(rows["intensity"].min() / 2), np.log10(rows["intensity"].max() * 2))
        for peak in rows["peak_flops"].dropna().unique():
            for bw in rows["mem_bw"].dropna().unique():
                ax.plot(ai, np.minimum(ai * bw, peak), color="black", linewidth=0.9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("FLOP/byte", fontsize=7)
        ax.set_ylabel("FLOP/s", fontsize=7)
        ax.legend(fontsize=6)
        return f"kernels per panel capped at {MAX_LINES}" if len(kernels) > MAX_LINES else ""
    return _panels(path, "Roofline: achieved FLOP/s vs arithmetic intensity; black = "
                   "min(peak FLOP/s of the dtype, intensity x memory bandwidth)", items, draw, "partitions")
