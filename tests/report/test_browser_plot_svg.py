"""The report's figures measured in headless Chromium: every panel
has data inside it, tick labels are plain (no '0.062×'), no two labels
overlap as the browser lays out their text, and no data point sits on a
vertical reference line (the old doubling plot drew the physical-cores line
through the points at T = cores). For the demo campaign (threads 1 and 2: a
single doubling), a single-doubling campaign 5.16× slower and a
128-thread Delta-shaped import.

Each figure the report saves is saved again as SVG with its text kept as
text (svg.fonttype none), its panels, data, reference lines and labels named
by id, so the browser measures the real glyph boxes. A PNG has no text
Chromium could measure; test_plot_layout.py checks the same on matplotlib's
objects. BENCHMARKS.md/README (the browser checks) record that this check
fails on the plots of the commit before the plot fixes (b126a78).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.fixtures.delta_import import write_delta_128
from tests.report.browser import Chromium

CHECK_JS = r"""(() => {
  const TICK = /^(1\/\d+×|\d+(\.\d)?[×%]?|0\.\d×|\d+(\.\d)? ?[µnm]?s|\d+[KM]|)$/;
  const problems = [];
  for (const svg of document.querySelectorAll('svg')) {
    const fig = svg.dataset.name;
    const box = e => e.getBoundingClientRect();
    // shown: at least 2 px inside the frame (a point on the frame, as with a degenerate axis range, is not)
    const inside = (p, r) => p.x > r.left + 2 && p.x < r.right - 2 && p.y > r.top + 2 && p.y < r.bottom - 2;
    const vlines = [...svg.querySelectorAll('g[id^="vline"] path')].map(box);
    for (const panel of svg.querySelectorAll('g[id^="panel"]')) {
      const i = panel.id.slice(5), r = box(panel), points = [];
      for (const g of svg.querySelectorAll(`g[id^="data${i}-"]`)) {
        for (const u of g.querySelectorAll('use')) {
          const b = box(u);
          points.push({x: (b.left + b.right) / 2, y: (b.top + b.bottom) / 2, marker: true});
        }
        for (const p of g.querySelectorAll('path')) {
          if (p.closest('defs') || !p.getTotalLength) continue;
          const len = p.getTotalLength(), m = p.getScreenCTM();
          for (let k = 0; k <= 40 && len > 0; k++) {
            const q = p.getPointAtLength(len * k / 40).matrixTransform(m);
            points.push({x: q.x, y: q.y, marker: false});
          }
        }
      }
      const shown = points.filter(p => inside(p, r));
      if (!shown.length) problems.push(`${fig}: empty panel ${i}`);
      for (const p of shown.filter(p => p.marker)) {
        for (const v of vlines) {
          if (Math.abs(p.x - (v.left + v.right) / 2) < 2 && p.y >= v.top - 1 && p.y <= v.bottom + 1) {
            problems.push(`${fig}: a data point on a vertical reference line in panel ${i}`);
          }
        }
      }
    }
    for (const t of svg.querySelectorAll('g[id^="tick"] text')) {
      if (!TICK.test(t.textContent.trim())) problems.push(`${fig}: odd tick label ${t.textContent}`);
    }
    const seen = new Map();
    for (const t of svg.querySelectorAll('g[id^="tick"] text, g[id^="label"] text')) {
      const b = box(t);
      if (!t.textContent.trim() || b.width === 0) continue;
      seen.set(`${t.textContent}@${Math.round(b.left)},${Math.round(b.top)}`, {text: t.textContent, b});
    }
    const texts = [...seen.values()];
    for (let a = 0; a < texts.length; a++) {
      for (let c = a + 1; c < texts.length; c++) {
        const p = texts[a].b, q = texts[c].b;
        const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > 0.1 * Math.min(p.width, q.width) && h > 0.2 * Math.min(p.height, q.height)) {
          problems.push(`${fig}: labels overlap: '${texts[a].text}' and '${texts[c].text}'`);
        }
      }
    }
  }
  return {figures: document.querySelectorAll('svg').length, problems: [...new Set(problems)]};
})()"""


def _kind(line: Any) -> str:
    """'vline' (a vertical reference line), 'ref' (a horizontal one, e.g. 1×: not data) or 'data'."""
    x = np.asarray(line.get_xdata(), dtype=float)
    y = np.asarray(line.get_ydata(), dtype=float)
    if len(x) >= 2 and bool(np.all(x == x[0])) and not np.all(y == y[0]):
        return "vline"
    if len(y) >= 2 and bool(np.all(y == y[0])) and line.get_marker() in (None, "", "None", " "):
        return "ref"
    return "data"


def _name_parts(fig: Any) -> None:
    """Ids the browser script finds: panels, their data, vertical reference lines, labels, tick labels."""
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        if ax.get_title(loc="left") or ax.get_title():
            ax.patch.set_gid(f"panel{i}")
        for j, line in enumerate(ax.get_lines()):
            line.set_gid(f"{_kind(line)}{i}-{j}")
        for j, coll in enumerate(ax.collections):
            if len(np.asarray(coll.get_offsets()).reshape(-1, 2)) > 1:
                coll.set_gid(f"data{i}-c{j}")
        for j, text in enumerate([ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label]):
            text.set_gid(f"label{i}-{j}")
        for axis, index in ((ax.xaxis, 0), (ax.yaxis, 1)):
            lo, hi = sorted(axis.get_view_interval())
            for k, t in enumerate(axis.get_ticklabels()):
                if lo <= t.get_position()[index] <= hi:
                    t.set_gid(f"tick{i}-{index}-{k}")
        legend = ax.get_legend()
        if legend is not None:
            for k, t in enumerate(legend.get_texts()):
                t.set_gid(f"label{i}-legend{k}")
    for k, legend in enumerate(fig.legends):
        for j, t in enumerate(legend.get_texts()):
            t.set_gid(f"labelfig{k}-{j}")


def svg_page(figures: list[Any], folder: Path) -> Path:
    """One page holding each figure as inline SVG, text as text."""
    import io

    import matplotlib

    parts = []
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        for n, fig in enumerate(figures):
            _name_parts(fig)
            buf = io.StringIO()
            fig.savefig(buf, format="svg")
            text = buf.getvalue()
            svg = text[text.index("<svg"):]
            title = html.escape(fig.get_suptitle() or f"figure {n}")
            parts.append(f'<div>{svg.replace("<svg", f"<svg data-name={chr(34)}{title}{chr(34)}", 1)}</div>')
    page = folder / "figures.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body>"
                    + "".join(parts) + "</body></html>")
    return page


def _delta_figures(folder: Path) -> None:
    from campaign.commands.analyze import write_reports
    from campaign.ledger import Ledger

    csv = write_delta_128(folder / "delta.csv")
    proc = run_cli("--ledger", str(folder / "ledger.sqlite"), "import", str(csv), "--campaign", "delta128",
                   cwd=folder)
    assert proc.returncode == 0, proc.stderr
    write_reports(Ledger(folder / "ledger.sqlite", create=False), folder / "report", cluster="delta")


def _demo_figures(folder: Path, demo_report: Path) -> None:
    from campaign.commands.analyze import write_reports
    from campaign.ledger import Ledger

    write_reports(Ledger(demo_report.parent.parent / "ledger.sqlite", create=False), folder / "report")


def _single_doubling_figures(folder: Path) -> None:
    """A reported case: threads 1 and 2 only, doubling 5.16× slower (its table lists it)."""
    import pandas as pd

    from analysis.report import render_report
    from tests.analysis.conftest import make_rows

    times = {(t, n): [1e-9 * n * n * (1.0 if t == 1 else 5.16) * f for f in (1, 1.01, 1.02, 1.03)]
             for t in (1, 2) for n in (64, 128, 256, 512)}
    results = pd.concat([make_rows(times, variant=v) for v in ("naive", "memopt")], ignore_index=True)
    facts = pd.DataFrame([dict(cluster="anvil", partition="wholenode", cores=2, numa_domains=1)])
    render_report(results, facts, None, folder, "anvil")


@pytest.mark.parametrize("name", ["demo", "delta", "single"])
def test_figures_hold_up_in_the_browser(name: str, chromium: Chromium, request: pytest.FixtureRequest,
                                        tmp_path: Path, drawn: list[Any]) -> None:
    if name == "demo":
        _demo_figures(tmp_path, request.getfixturevalue("demo_report"))
    elif name == "delta":
        _delta_figures(tmp_path)
    else:
        _single_doubling_figures(tmp_path)
    figures = list(drawn)  # (saving them as SVG below adds to `drawn`)
    assert len(figures) >= 4
    got = chromium.open_page(svg_page(figures, tmp_path), width=1400, script=CHECK_JS).script
    assert got["figures"] == len(figures)
    assert not got["problems"], "\n".join(got["problems"])


def test_the_check_finds_each_defect(chromium: Chromium, tmp_path: Path) -> None:
    """Each rule fires on a figure made to break it: an empty titled panel, a
    '0.062×' tick, two labels on top of each other, a point on a vertical line."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3))
    empty, busy = fig.subplots(1, 2)
    empty.set_title("empty", loc="left")
    empty.plot([10, 20], [1, 1], color="grey")  # a reference line only: no data
    empty.set_xlim(0, 1)
    busy.set_title("busy", loc="left")
    busy.plot([1, 2, 3], [1, 2, 3], "o")
    busy.axvline(2, color="red")
    busy.set_xticks([1, 2, 3], ["0.062×", "1×", "2×"])
    busy.set_xlabel("threads T")
    busy.xaxis.set_label_coords(0.5, -0.07)  # moved onto the tick label '1×' at the middle
    got = chromium.open_page(svg_page([fig], tmp_path), width=1400, script=CHECK_JS).script
    found = "\n".join(got["problems"])
    assert "empty panel 0" in found, found
    assert "odd tick label 0.062×" in found, found
    assert "a data point on a vertical reference line in panel 1" in found, found
    assert "labels overlap" in found, found
