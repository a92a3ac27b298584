"""The Markdown report renders: every table is well formed, every figure link
resolves to a PNG next to it, the contents links land on headings, and the
rendered page shows its figures in Chromium (markdown-it-py, GitHub-style
tables, is what renders it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from analysis.report import anchor
from tests.report.browser import Chromium
from tests.report.conftest import report_page

PAGES = ["demo", "h200-cpu", "h200-gpu", "h200-shapes", "h200-counters"]
_PIPE = re.compile(r"(?<!\\)\|")


def _tables(md: str) -> list[list[str]]:
    """Blocks of consecutive lines that start with '|'."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in md.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


@pytest.mark.parametrize("name", PAGES)
def test_markdown_report_renders(name: str, chromium: Chromium, demo_report: Path,
                                 h200_fresh: dict[str, Path], tmp_path: Path) -> None:
    md_path = report_page(name, demo_report, h200_fresh).with_suffix(".md")
    md = md_path.read_text(encoding="utf-8")
    tables = _tables(md)
    assert tables
    for block in tables:
        widths = {len(_PIPE.findall(line)) for line in block}
        assert len(widths) == 1, block[:3]  # same cell count on every row
        assert re.fullmatch(r"\|(---\|)+", block[1])
        cells = {c.strip() for line in block[2:] for c in _PIPE.split(line)[1:-1]}
        assert not {"nan", "None", "False", "True"} & cells
    assert "[nan" not in md and "ci_coverage" not in md
    images = re.findall(r"!\[[^\]]*\]\(([^()\s]+\.png)\)", md)
    assert images or name == "h200-shapes"  # one n per shape, no bytes: no figure applies
    assert all((md_path.parent / image).is_file() for image in images)
    headings = {anchor(h) for h in re.findall(r"^## (.+)$", md, flags=re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", md)
    assert links and set(links) <= headings

    body = MarkdownIt("commonmark").enable("table").render(md)
    assert body.count("<table>") == len(tables)
    page = md_path.parent / f"{md_path.stem}.rendered-md.html"
    try:
        page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                        "<link rel='icon' href='data:,'></head><body>" + body + "</body></html>",
                        encoding="utf-8")
        got = chromium.open_page(page, screenshot=tmp_path / f"{name}-md.png")
    finally:
        page.unlink(missing_ok=True)
    assert got.console == [] and got.broken_images == []
    assert got.foreign_requests(allowed_prefix=md_path.parent.as_uri() + "/") == []
    assert len(got.layout["figures"]) == len(images)
