"""The report as data: a list of blocks, written once as Markdown and once as HTML.

Keeping the content separate from the two writers (analysis/report_md.py,
analysis/html.py) is what makes the Markdown and the HTML say the same thing:
a section, caption or notation note exists in one place only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

MAX_TABLE_ROWS = 60


@dataclass(frozen=True)
class Figure:
    """A written PNG, its caption, what it left out ("" if nothing), its size in inches."""

    path: Path
    caption: str
    note: str
    width_in: float = 0.0
    height_in: float = 0.0


@dataclass(frozen=True)
class Table:
    """Display strings (one unit per column, named in its header), a caption and
    a note that explains the table's notation and says what was left out."""

    caption: str
    frame: pd.DataFrame
    note: str = ""
    max_rows: int | None = MAX_TABLE_ROWS
    total_rows: int = 0  # rows before a builder cut `frame` to what is shown (0: len(frame))


@dataclass(frozen=True)
class Block:
    """One piece of the report.

    kind: h1, h2, h3, p, list (`items`), meta (`pairs`), table (`table`) or
    figure (`figure`). `anchor` names a section for the table of contents.
    """

    kind: str
    text: str = ""
    table: Table | None = None
    figure: Figure | None = None
    items: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    anchor: str = ""


@dataclass(frozen=True)
class Section:
    """A titled run of blocks; a report leaves out sections without data."""

    title: str
    anchor: str
    blocks: list[Block] = field(default_factory=list)

    def all_blocks(self) -> list[Block]:
        return [Block("h2", self.title, anchor=self.anchor), *self.blocks]


def capped(table: Table) -> tuple[pd.DataFrame, str]:
    """The rows to show and a sentence on those left out ('' if none)."""
    frame = table.frame
    if table.max_rows is not None and len(frame) > table.max_rows:
        frame = frame.head(table.max_rows)
    total = max(table.total_rows, len(table.frame))
    if total > len(frame):
        return frame, (f"{total - len(frame)} more rows not shown (first {len(frame)} of "
                       f"{total}; the JSON output has all of them).")
    return frame, ""
