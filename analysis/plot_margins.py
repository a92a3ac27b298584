"""Where the report's panels, legend and colour bar sit in a figure: fixed
margins in inches, and the legends measured.

Why fixed: a layout engine (constrained or tight) measures every text of the
figure (each tick label, title and axis label) before the draw that measures
them again; for the smoke report's six figures that was a third of the CPU of
drawing them. Here the texts are short and of one font size (10 pt: tick
labels of at most ~7 characters such as '1/1024×' or '100 µs', one-line axis
labels, titles wrapped at 42 characters), so the room they need is known in
advance and written below once. Only the legends are measured: their labels
come from the data (kernel names, configurations), a handful of texts each.

A panel keeps its cell of `panel_w` x `panel_h` inches (labels included);
the figure grows by what sits outside the cells: the figure legend on the
right (its measured width), a panel's own legend below it (its measured
height), a colour bar band at the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEFT = 1.0  # y tick labels (at most ~7 characters) and the y label
RIGHT = 0.2  # the last x tick label's overhang
TWIN = 0.8  # a right-hand axis (speedup's efficiency): its tick labels and label
BOTTOM = 0.62  # x tick labels and the x label
TITLE_LINE = 0.19  # one line of a 10 pt title
TITLE_PAD = 0.14  # the title's pad above the frame, and room above the title
LEGEND_PAD = 0.12  # between the panels and the figure legend, and around it
BELOW = 0.66  # a panel's own legend starts this far below its frame (under the x label)
BAR_BAND = 0.8  # the colour bar, its tick labels and its label, below the panels
BAR_SHRINK, BAR_ASPECT = 0.4, 30  # the bar spans 0.4 of the panels' width, 30 times as long as high


@dataclass(frozen=True)
class Layout:
    """The figure's final size (inches) and the colour bar's axes rectangle (figure fractions)."""

    width: float
    height: float
    bar: tuple[float, float, float, float] | None


def new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas (no pyplot: no figure manager, no backend switch)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def legend_below(ax: Any, **kwargs: Any) -> Any:
    """A panel's own legend, centred under its frame, below the x label (arrange() makes the room)."""
    from matplotlib.transforms import offset_copy

    anchor = offset_copy(ax.transAxes, fig=ax.figure, y=-BELOW, units="inches")
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=anchor, **kwargs)


def arrange(fig: Any, grid: Any, panel_w: float, panel_h: float, legend: Any | None, bar: bool) -> Layout:
    """Size the figure and place the panels (`grid`: the 2-D array of panel axes, drawn),
    the figure `legend` (made with loc="upper left", placed here) and, with `bar`, a band
    for a colour bar (its rectangle returned)."""
    rows, cols = grid.shape
    renderer = fig.canvas.get_renderer()
    dpi = fig.dpi
    panels = set(grid.flat)
    right = TWIN if any(ax not in panels for ax in fig.axes) else RIGHT
    lines = max((ax.get_title(loc="left").count("\n") + 1 for ax in grid.flat if ax.get_visible()), default=1)
    top = TITLE_PAD + TITLE_LINE * lines
    own = [ax.get_legend() for ax in grid.flat if ax.get_visible() and ax.get_legend() is not None]
    # (the cell's BOTTOM margin holds the first BELOW inches under the frame)
    below = max((lg.get_window_extent(renderer).height / dpi + BELOW + LEGEND_PAD - BOTTOM for lg in own),
                default=0.0)
    band = BAR_BAND if bar else 0.0
    cells_w = panel_w * cols
    legend_w = legend_h = 0.0
    if legend is not None:
        box = legend.get_window_extent(renderer)
        legend_w, legend_h = box.width / dpi + 2 * LEGEND_PAD, box.height / dpi + 2 * LEGEND_PAD
    width = cells_w + legend_w
    height = max(rows * (panel_h + below) + band, legend_h)
    fig.set_size_inches(width, height)
    axes_w = panel_w - LEFT - right
    axes_h = (height - band - rows * below) / rows - top - BOTTOM
    fig.subplots_adjust(left=LEFT / width, right=(cells_w - right) / width, top=1 - top / height,
                        bottom=(BOTTOM + below + band) / height, wspace=(LEFT + right) / axes_w,
                        hspace=(BOTTOM + below + top) / axes_h)
    if legend is not None:
        legend.set_bbox_to_anchor((cells_w + LEGEND_PAD / 2, height - LEGEND_PAD / 2), transform=fig.dpi_scale_trans)
    rect = None
    if bar:
        span = cells_w - LEFT - right
        bar_w = BAR_SHRINK * span
        bar_h = bar_w / BAR_ASPECT
        rect = ((LEFT + (span - bar_w) / 2) / width, (band - LEGEND_PAD - bar_h) / height, bar_w / width,
                bar_h / height)
    return Layout(width, height, rect)
