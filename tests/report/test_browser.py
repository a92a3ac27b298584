"""Each report opened in a real headless Chromium at 1400 px, as a reader sees it.

Fails on console errors or warnings, uncaught exceptions, images that do not
decode, and any request other than the page itself (the page must be
self-contained). Saves a full-page screenshot of each under the test's tmp
folder. The checker itself is tested first on a page that breaks every rule,
so a passing report means something.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.browser import SORT_JS, Chromium
from tests.report.conftest import report_page

PAGES = ["demo", "h200-cpu", "h200-gpu", "h200-shapes", "h200-counters", "fresh-cpu", "fresh-gpu"]
WIDTH = 1400


def test_checker_catches_every_kind_of_fault(chromium: Chromium, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>"
        "<img alt='broken' src='data:image/png;base64,AAAA'>"
        "<img alt='remote' src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); undefinedFunction();</script></body></html>")
    got = chromium.open_page(bad)
    assert "http://127.0.0.1:9/x.png" in got.foreign_requests(bad.parent.as_uri())
    assert any("boom" in line for line in got.console)
    assert any("undefinedFunction" in line for line in got.console)
    assert "broken" in got.broken_images and "remote" in got.broken_images


@pytest.mark.parametrize("name", PAGES)
def test_report_page_in_chromium(name: str, chromium: Chromium, demo_report: Path,
                                 h200_fresh: dict[str, Path], tmp_path: Path) -> None:
    page = report_page(name, demo_report, h200_fresh)
    shot = tmp_path / f"{name}.png"
    got = chromium.open_page(page, screenshot=shot, width=WIDTH)
    assert got.console == []
    assert got.foreign_requests(allowed_prefix="data:") == []
    assert got.broken_images == []
    layout = got.layout
    assert layout["pageWidth"] <= WIDTH  # nothing wider than the window
    assert layout["h2"][0] == "Summary" and layout["h2"][-1] == "Jobs"
    # The model-shape report measures each shape at one n, without bytes: no figure applies.
    assert layout["figures"] or name == "h200-shapes", "a report with sweeps has figures"
    for fig in layout["figures"]:  # >= 144 dpi at the displayed size (1.5 px per CSS px)
        assert fig["natural"] >= 1.49 * fig["shown"], fig["alt"]
    cells = layout["cells"]
    assert not {"nan", "NaN", "None", "False", "True", "[nan, nan]"} & set(cells)
    assert layout["sortable"] == layout["tables"] > 0
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_tables_sort_by_number(chromium: Chromium, demo_report: Path) -> None:
    """Clicking a header sorts numerically (ascending, then descending), not as text."""
    # The fitted exponents, found by caption (not position: a build record puts its table first);
    # column 1 is the thread count.
    value = chromium.open_page(demo_report, script=SORT_JS % (json.dumps("Fitted exponent"), 1, 1)).script
    numbers = [float(v) for v in value["before"]]
    assert len(set(numbers)) > 1
    assert [float(v) for v in value["up"]] == sorted(numbers)
    assert [float(v) for v in value["down"]] == sorted(numbers, reverse=True)
    assert value["sort"] == "descending"
