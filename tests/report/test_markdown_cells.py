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
