"""The figure machinery of the report: panel grids, axes with plain labels, legends.

Readable at the size the page shows them: figures are drawn at 144 dpi with
10 pt text and shown at their physical size (width in inches × 96 CSS px), so
10 pt on paper is 10 pt on screen. Legends sit outside the data (one per
figure, right of the panels, or below a panel when its lines are its own).
Log axes carry plain labels ("1 ms", "4K", "2×"), never "5×10^0".

The margins are fixed, in inches (analysis/plot_margins.py): every label
here is short and of one font size, so room for the longest tick label and
an axis label is known beforehand. Only the legends, whose text comes from
the data, are measured. Constrained layout measured every text of the
figure twice before the one draw (a third of the CPU of drawing the smoke
report's six figures; BENCHMARKS.md 13n), and pyplot is not used at all (a
Figure on the Agg canvas: no figure manager, no backend switching).
matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Figure
from analysis.plot_margins import arrange, new_figure
from analysis.whole_file import whole

MAX_PANELS = 12
MAX_LINES = 8
DPI = 144
PANEL_W, PANEL_H = 4.0, 3.2
RC: dict[Any, Any] = {
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.titley": 1.0,
    "axes.labelsize": 10,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.6,
    "lines.markersize": 4,
}
COLOURBAR = "_colourbar"  # handles key: draw one shared colour bar for this image
STYLE_KEYS = ("ideal", "efficiency", "NUMA", "physical", "T > ", "roof", "T*")
Axes = Any  # matplotlib.axes.Axes, imported lazily
Handles = dict[str, Any]  # legend label -> artist
Draw = Callable[[Axes, pd.DataFrame, Handles], str]


def pick(values: Sequence[Any], limit: int) -> list[Any]:
    """At most `limit` values spread evenly, always keeping first and last."""
    values = list(values)
    if len(values) <= limit:
        return values
    idx = np.unique(np.linspace(0, len(values) - 1, limit).round().astype(int))
    return [values[i] for i in idx]


def palette(values: Sequence[Any]) -> dict[Any, Any]:
    """A fixed colour per value, so one legend serves every panel."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(values) <= 10 else "viridis"]
    n = max(len(values), 1)
    return {v: cmap(i if len(values) <= 10 else i / max(n - 1, 1)) for i, v in enumerate(values)}


def size_axis(axis: Any, values: Sequence[float] | np.ndarray | pd.Series) -> None:
    """A log2 axis of problem sizes, ticked at (at most 6 of) the measured n."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    array = np.asarray(values, dtype=float)
    ticks = pick(np.unique(array[np.isfinite(array)]).tolist(), 6)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: display.size(v)))
    axis.set_minor_locator(NullLocator())


def log_axis(axis: Any, fmt: Callable[[float], str], low: float, high: float) -> None:
    """A log10 axis with plain labels; 1-2-5 ticks when the range is short."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    span = math.log10(high / low) if low > 0 and high > 0 else 3.0
    subs = (1.0,) if span > 2.5 else (1.0, 2.0, 5.0) if span > 0.6 else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=8))
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
    # No minor ticks: each is an artist laid out on every draw, and they
    # carry no label a reader could use.
    axis.set_minor_locator(NullLocator())


def pow2_axis(axis: Any, low: float, high: float, fmt: Callable[[float], str] = display.sig) -> None:
    """A log2 axis ticked at (at most 7) evenly spaced powers of two spanning
    [low, high], padded by a quarter octave so no point sits on the frame."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    bottom = math.floor(math.log2(low)) if low > 0 else 0
    top = max(math.ceil(math.log2(max(high, 1.0))), bottom + 1)
    step = max(1, math.ceil((top - bottom) / 6))  # every step-th power: even spacing, 2^0 kept
    first = bottom - (bottom % step)
    ticks = [2.0**k for k in range(first, top + step, step)]
    lo = 2.0 ** (math.log2(low) - 0.25) if low > 0 else 2.0 ** (bottom - 0.25)
    hi = 2.0 ** (math.log2(max(high, low if low > 0 else 1.0)) + 0.25)
    axis.set_major_locator(FixedLocator([t for t in ticks if lo <= t <= hi] or ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
    axis.set_minor_locator(NullLocator())
    set_lim = axis.axes.set_xlim if axis is axis.axes.xaxis else axis.axes.set_ylim
    set_lim(lo, hi)


def pow2_ratio_tick(value: float) -> str:
    """A power-of-two ratio tick: '4×', '1×', '1/16×' (never '0.062×')."""
    if not (value > 0 and math.isfinite(value)):
        return ""
    if value >= 1:
        return display.ratio_tick(value)
    inverse = 1.0 / value
    return f"1/{inverse:.0f}×" if abs(inverse - round(inverse)) < 1e-9 else display.ratio_tick(value)


def finite_range(*columns: pd.Series) -> tuple[float, float]:
    """(min, max) of the positive finite values of the columns, (1, 10) if none."""
    if not columns:
        return 1.0, 10.0
    values = np.concatenate([c.to_numpy(dtype=float) for c in columns])
    good = values[np.isfinite(values) & (values > 0)]
    return (float(good.min()), float(good.max())) if len(good) else (1.0, 10.0)


def wrap(text: str, width: int) -> str:
    """Lines of at most ~`width` characters, broken at spaces (and after '+')."""
    return "\n".join(textwrap.wrap(text.replace("+", "+ "), width, break_long_words=False, break_on_hyphens=False))


def short_labels(labels: Sequence[str], width: int = 36) -> list[str]:
    """Drop the words every label shares (the panel title says them); wrap the rest."""
    split = [label.split(" ") for label in labels]
    common = set(split[0]).intersection(*split[1:]) if len(split) > 1 else set()
    return [wrap(" ".join(w for w in words if w not in common) or "all", width) for words in split]


def panels(
    path: Path,
    caption: str,
    items: list[tuple[str, pd.DataFrame]],
    draw: Draw,
    what: str,
    figure_legend: bool = True,
    extra_note: str = "",
) -> Figure | None:
    """Grid of panels, one per item, and a figure legend outside the data.

    `draw(ax, rows, handles)` draws one panel, puts the artists the legend
    should show into `handles` and returns a note on what it left out.
    """
    if not items:
        return None
    from matplotlib import rc_context

    shown = items[:MAX_PANELS]
    cols = min(3, len(shown))
    rows = math.ceil(len(shown) / cols)
    # A lone panel gets more room: its figure would otherwise be a thumbnail.
    # Two panels get room for a right-hand axis and labels without crowding.
    panel_w, panel_h = (6.4, 4.4) if len(shown) == 1 else (5.2, 3.8) if len(shown) == 2 else (PANEL_W, PANEL_H)
    with rc_context(RC):
        fig = new_figure(panel_w * cols, panel_h * rows)  # sized by arrange() once drawn
        axes = fig.subplots(rows, cols, squeeze=False)
        notes: set[str] = set()
        handles: Handles = {}
        for ax, (label, frame) in zip(axes.flat, shown, strict=False):
            ax.set_title(wrap(label, 42), loc="left")
            note = draw(ax, frame, handles)
            if note:
                notes.add(note)
        for ax in list(axes.flat)[len(shown) :]:
            ax.set_visible(False)
        scale = handles.pop(COLOURBAR, None)  # an image whose colour scale all panels share
        legend = None
        if figure_legend and handles:
            # Data series (n=..., T=..., kernels) first, then the line-style keys.
            names = sorted(handles, key=lambda k: k.startswith(STYLE_KEYS))
            legend = fig.legend([handles[k] for k in names], names, loc="upper left")
        layout = arrange(fig, axes, panel_w, panel_h, legend, scale is not None)
        if scale is not None and layout.bar is not None:
            bar = fig.colorbar(scale, cax=fig.add_axes(layout.bar), orientation="horizontal")
            bar.set_ticks([0, 1, 2, 3], labels=["1× (T*)", "2×", "4×", "≥ 8×"])
            bar.set_label("t(T, n) / t(T*, n)")
        raw = io.BytesIO()
        fig.savefig(raw, format="rgba")  # the pixels only: encoded once, as a palette PNG (save_png)
        size = fig.canvas.get_width_height(physical=True)
    save_png(raw.getvalue(), size, path)
    left = len(items) - len(shown)
    text = (
        [f"{left} more {what} not shown (the first {len(shown)} of {len(items)}; cap {MAX_PANELS} panels)"]
        if left
        else []
    )
    note = "; ".join(text + sorted(notes) + ([extra_note] if extra_note else []))
    return Figure(path, caption, note, layout.width, layout.height)


def save_png(rgba: bytes, size: tuple[int, int], path: Path) -> None:
    """The drawn pixels as a 256-colour palette PNG: a quarter of the bytes of
    matplotlib's own PNG, same look, encoded once, from the pixels (PNG
    encoding is the largest single cost of drawing a small report's figures).

    Plots are flat colours and antialiased edges, so an exact palette is not
    needed; the committed reports and the inlined HTML stay small. Pillow is
    a dependency of matplotlib, so it is always there when plots are.
    """
    from PIL import Image

    image = Image.frombuffer("RGBA", size, rgba, "raw", "RGBA", 0, 1)
    flat = image.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    with whole(path) as tmp:
        flat.save(tmp, format="PNG", compress_level=6)  # 9: 7x the CPU (34 ms vs 5 ms a figure), 12% fewer bytes


def several(frame: pd.DataFrame, keys: list[str], column: str) -> np.ndarray:
    """Mask of the rows whose group (`keys`) has more than one value of `column`."""
    from analysis.frames import group_codes

    if frame.empty:
        return np.zeros(0, dtype=bool)
    codes, count = group_codes(frame, keys)
    values, _ = pd.factorize(frame[column], sort=False, use_na_sentinel=False)  # a NULL n: one value
    pairs = np.unique(codes.astype(np.int64) * (int(values.max()) + 1) + values)
    distinct = np.bincount(pairs // (int(values.max()) + 1), minlength=count)
    return distinct[codes] > 1


def grouped(
    frame: pd.DataFrame, keys: list[str], label: Callable[[pd.DataFrame], Sequence[str]]
) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per group in key order, for the first MAX_PANELS + a count.

    Only the groups drawn are materialised: with 100,000 groups the rest are
    counted, not split out (the caller states how many were left out).
    `label(firsts)` names the groups drawn from their first rows, all in one
    call (a vectorised label costs the same for one row as for twelve).
    """
    if frame.empty:
        return []
    from analysis.frames import group_codes

    codes, count = group_codes(frame, keys)
    wanted = np.flatnonzero(np.isin(codes, np.arange(min(count, MAX_PANELS))))
    sub = frame.iloc[wanted]
    sub_codes = codes[wanted]
    parts = [sub[sub_codes == code] for code in range(min(count, MAX_PANELS))]
    names = label(pd.concat([rows.iloc[:1] for rows in parts]))
    items: list[tuple[str, pd.DataFrame]] = list(zip(names, parts, strict=True))
    # Placeholders keep the count right for the "N of M not shown" note.
    items += [("", frame.iloc[:0])] * (count - len(items))
    return items
