"""The report's figures in headless Chromium: each figure has ink
(no blank image), and no figure overlaps another figure or any text of the
page (captions, paragraphs, tables), for the demo campaign and a 128-thread
Delta-shaped import. Inside each figure, empty panels and overlapping labels
are checked on matplotlib's objects (test_plot_layout.py): a PNG has no text
Chromium could measure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures.delta_import import write_delta_128
from tests.report.browser import Chromium

FIGURES_JS = """(() => {
  const images = [...document.querySelectorAll('img')].map(img => {
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let ink = 0, seen = 0;
    for (let i = 0; i < data.length; i += 4 * 5) {
      seen++;
      if (data[i] < 200 || data[i + 1] < 200 || data[i + 2] < 200) ink++;
    }
    const r = img.getBoundingClientRect();
    return {alt: img.alt, ink: seen ? ink / seen : 0, width: r.width, height: r.height};
  });
  const boxes = [...document.querySelectorAll('img, figcaption, p, li, h1, h2, h3, table')]
    .filter(e => e.getBoundingClientRect().width > 0);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.tagName !== 'IMG' && b.tagName !== 'IMG') continue;
      if (a.contains(b) || b.contains(a)) continue;
      const p = a.getBoundingClientRect(), q = b.getBoundingClientRect();
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) overlaps.push([a.tagName + ':' + (a.alt || a.textContent.slice(0, 40)),
                                         b.tagName + ':' + (b.alt || b.textContent.slice(0, 40))]);
    }
  }
  return {images, overlaps};
})()"""


@pytest.fixture(scope="module")
def delta_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("delta128")
    write_delta_128(work / "delta.csv")
    for args in (("import", "delta.csv", "--campaign", "delta128"),
                 ("report", "--cluster", "delta", "--out", "report")):
        proc = run_cli("--ledger", str(work / "ledger.sqlite"), *args, cwd=work)
        assert proc.returncode == 0, proc.stderr
    return work / "report" / "delta.html"


@pytest.mark.parametrize("width", [1400, 900])
@pytest.mark.parametrize("name", ["demo", "delta"])
def test_figures_have_ink_and_overlap_nothing(name: str, width: int, chromium: Chromium,
                                              demo_report: Path, delta_report: Path) -> None:
    page = demo_report if name == "demo" else delta_report
    got = chromium.open_page(page, width=width, script=FIGURES_JS).script
    assert len(got["images"]) >= 4, got["images"]
    for image in got["images"]:
        assert image["width"] > 0 and image["height"] > 0, image
        assert image["ink"] > 0.01, f"blank figure: {image}"
    assert got["overlaps"] == []
