"""The report's figures are drawn once and encoded once (analysis/plot_axes.py
save_png): each PNG `report --out` writes is a 256-colour palette image of
the pixels matplotlib drew, at the figure's size and 144 dpi, with no
full-colour PNG written and read back on the way (that round trip was most of
the time of drawing a small campaign's six figures; the smoke report's PNGs
came out byte for byte as before)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib
from PIL import Image

from analysis.plot_axes import DPI, RC
from tests.conftest import run_cli
from tests.fixtures import KNOWN_CSV


def test_each_figure_is_the_palette_image_of_the_drawn_pixels(tmp_path: Path, drawn: list[Any]) -> None:
    ledger = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV)).returncode == 0
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    pngs = sorted((tmp_path / "report").glob("*.png"))
    assert pngs
    for png in pngs:
        with Image.open(png) as image:
            assert image.mode == "P" and image.format == "PNG", png
            width, height = image.size
            assert width > 2 * DPI and height > 2 * DPI, png  # inches at 144 dpi, not a thumbnail
    # the same report drawn in this process: the figures' own pixels, quantised, are the files' pixels
    from analysis.report import render_report
    from campaign.ledger import Ledger
    from campaign.results.export import results_frame

    results = results_frame(Ledger(ledger, create=False))
    files = render_report(results, None, None, tmp_path / "again", "alpha")
    figures = list(drawn)  # (drawing them again below adds to `drawn`)
    assert len(figures) == len(files.plots) and files.plots
    for fig, path in zip(figures, files.plots, strict=True):
        raw = io.BytesIO()
        with matplotlib.rc_context(RC):  # as panels() drew it
            fig.savefig(raw, format="rgba")
        pixels = Image.frombuffer("RGBA", fig.canvas.get_width_height(physical=True), raw.getvalue(),
                                  "raw", "RGBA", 0, 1).convert("RGB")
        with Image.open(path) as saved:
            assert saved.mode == "P" and saved.size == pixels.size, path
            # the drawing's colours, at most 256 of them: the palette holds what was drawn
            assert len(saved.convert("RGB").getcolors(256) or []) == len(pixels.quantize(
                colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).convert("RGB").getcolors(256)
                or []), path
