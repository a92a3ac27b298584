"""A value in a Markdown table cell is shown as written: its `|` does not end
the cell, its `<` does not open an HTML tag (a grid value `<script>`, a unit
`op/s|<i>` from a user's YAML), its `*` is no emphasis."""

from __future__ import annotations

import pandas as pd

from analysis.blocks import Block, Table
from analysis.report_md import to_markdown


def test_hostile_cells_are_shown_as_written() -> None:
    table = Table("Median rate [op/s|<i>]", pd.DataFrame({"configuration": ["k [opt=<script>]"], "T*": ["a|b"]}), "")
    text = to_markdown([Block("table", table=table), Block("list", items=("k [opt=<b>] is 2x faster",))])
    assert "**Median rate [op/s\\|&lt;i>]**" in text
    assert "| k [opt=&lt;script>] | a\\|b |" in text and "| configuration | T\\* |" in text
    assert "- k [opt=&lt;b>] is 2x faster" in text
    assert "<script>" not in text and "<i>" not in text and "<b>" not in text


def test_backticks_links_and_backslashes_in_a_value_render_as_written() -> None:
    """A variant 'a|b`c`' rendered as 'a|bc' with c as code, '[fast](http://x)' as a link reading 'fast',
    and 'a\\*b*' lost its backslash: the report showed another name than the ledger holds."""
    from markdown_it import MarkdownIt

    names = ["a|b`c`", "[fast](http://x)", "a\\*b*", "x\\|y", "k [opt=<b>]"]
    table = Table("variants", pd.DataFrame({"variant": names}), "")
    text = to_markdown([Block("table", table=table), Block("list", items=tuple(f"{v} is slow" for v in names[1:]))])
    html = MarkdownIt("commonmark").enable("table").render(text)
    for name in names:
        shown = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert f"<td>{shown}</td>" in html, (name, html)
        assert name == names[0] or f"<li>{shown} is slow</li>" in html, (name, html)
    assert "<code>" not in html and "<a " not in html and "<em>" not in html, html
