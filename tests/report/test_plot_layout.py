"""The figures hold up: no panel is empty when its table has data,
tick labels are plain (no '0.062×'), no two labels overlap. Checked on
matplotlib's own objects (texts' window extents from the figure's renderer)
as each figure is saved, for a campaign with a single thread doubling and a
128-thread Delta-shaped import (through `campaign import`, cluster delta);
and every label and legend lies inside the figure (its margins are fixed,
its legends measured: analysis/plot_margins.py)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.report import render_report
from tests.analysis.conftest import make_rows
from tests.conftest import run_cli
from tests.fixtures.delta_import import write_delta_128

# '2×', '1/16×', '0.5×', '50 ms', '4K', '128', '20', '1.5×': what a reader can use.
TICK = re.compile(r"^(1/\d+×|\d+(\.\d)?[×%]?|0\.\d×|\d+(\.\d)? ?[µnm]?s|\d+[KM]|)$")


def _texts(fig: Any) -> list[Any]:
    """The visible, non-empty labels of a figure: titles, axis and tick labels, legend."""
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out += [ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            index = 0 if axis is ax.xaxis else 1
            out += [t for t in axis.get_ticklabels()
                    if lo <= t.get_position()[index] <= hi]
    for legend in fig.legends:
        out += legend.get_texts()
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def check(fig: Any) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # the report closed it: a fresh Agg canvas
    fig.draw(renderer)
    for ax in fig.axes:
        if not ax.get_visible() or not ax.get_title(loc="left") or hasattr(ax, "_colorbar"):
            continue  # colour bars and twin axes (their panel is checked) carry no data
        x0, x1 = sorted(ax.get_xlim())
        y0, y1 = sorted(ax.get_ylim())
        inside = 0
        for line in ax.get_lines():
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            inside += int(np.sum((x > x0) & (x < x1) & (y > y0) & (y < y1)))
        for coll in ax.collections:
            offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
            inside += int(np.sum((offsets[:, 0] > x0) & (offsets[:, 0] < x1)
                                 & (offsets[:, 1] > y0) & (offsets[:, 1] < y1)))
        inside += len(ax.images)
        assert inside, f"empty panel: {ax.get_title(loc='left')!r} in {fig.get_suptitle()!r}"
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            index = 0 if axis is ax.xaxis else 1
            shown = [t.get_text() for t in axis.get_ticklabels()
                     if lo <= t.get_position()[index] <= hi and t.get_text()]
            assert shown, f"no tick label on an axis of {ax.get_title(loc='left')!r}"
            odd = [s for s in shown if not TICK.match(s)]
            assert not odd, f"odd tick labels {odd} in {ax.get_title(loc='left')!r}"
    # A twin axes shares its x axis: the same label at the same place is one label.
    unique = {(t.get_text(), tuple(np.round(t.get_window_extent(renderer).bounds, 1))): t
              for t in _texts(fig)}
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in unique.values()]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        small_a, small_b = box_a.expanded(0.95, 0.9), box_b.expanded(0.95, 0.9)
        assert not small_a.overlaps(small_b), f"labels overlap: {a!r} and {b!r}"
    # the fixed margins (analysis/plot_margins.py) hold every label, and the measured legends fit whole
    page = fig.bbox
    for text, box in boxes:
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, \
            f"label outside the figure: {text!r} at {box.bounds} of {page.bounds}"
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
        box = legend.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0, \
            f"legend outside the figure: {box.bounds} of {page.bounds}"


def test_single_doubling_figures(tmp_path: Path, drawn: list[Any]) -> None:
    times = {(t, n): [1e-9 * n * n * (1.0 if t == 1 else 5.16) * f for f in (1, 1.01, 1.02, 1.03)]
             for t in (1, 2) for n in (64, 128, 256, 512)}
    results = pd.concat([make_rows(times, variant=v) for v in ("naive", "memopt")],
                        ignore_index=True)
    facts = pd.DataFrame([dict(cluster="anvil", partition="wholenode", cores=2,
                               numa_domains=1)])
    files = render_report(results, facts, None, tmp_path, "anvil")
    assert "5.16×" in files.markdown.read_text()  # the doubling table lists it ...
    names = [Path(p).name for p in files.plots]
    assert "anvil-doubling.png" in names  # ... and its figure is drawn and checked below
    assert len(drawn) == len(files.plots)
    for fig in drawn:
        check(fig)


def test_delta_128_thread_import_figures(tmp_path: Path, drawn: list[Any]) -> None:
    csv = write_delta_128(tmp_path / "delta.csv")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(csv), "--campaign", "delta128",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from campaign.commands.analyze import write_reports
    from campaign.ledger import Ledger

    written = write_reports(Ledger(ledger), tmp_path / "report", cluster="delta")
    assert any(p.name == "delta.html" for p in written)
    assert len(drawn) >= 5
    for fig in drawn:
        check(fig)
