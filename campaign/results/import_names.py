"""The names of an imported file as a reader sees them (campaign.plumbing.lookalike).

An import takes any text as a cluster, kernel, implementation ... name. Two
names of one column that differ only in their Unicode form or by invisible
characters ("café" composed in one row, decomposed in another, as files
merged from two machines may have it) were two kernels, clusters or points
that every table, report and export showed as one name, with no way to tell
their rows apart: the file is refused, naming the row and both spellings.
Names are stored as written, never normalized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from campaign.plumbing.errors import ImportError_
from campaign.plumbing.lookalike import seen_as
from resultschema.columns import BY_NAME, DIMENSIONS

# the text columns that name a point or its series: its dimensions' (the params among them), and the figure's
NAME_COLUMNS = tuple(c for c in (*DIMENSIONS, "metric") if BY_NAME[c].kind == "text")


class Lookalikes:
    """Every name of one import so far, by column and by how it looks; `check` each chunk in turn."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._looks: dict[tuple[str, str], str] = {}  # (column, as seen) -> the name as first written
        self._known: set[tuple[str, str]] = set()  # (column, name as written): looked at already

    def check(self, rows: Sequence[dict[str, Any]], done: int) -> None:
        """ImportError_ at the first row whose name looks like another one of its column; `done`: the
        rows of the file before these."""
        for column in NAME_COLUMNS:
            names = dict.fromkeys(r.get(column) for r in rows)  # in the file's order; a chunk has few names
            for name in (str(n) for n in names if n is not None and (column, str(n)) not in self._known):
                self._known.add((column, name))
                other = self._looks.setdefault((column, seen_as(name)), name)
                if other != name:
                    row = done + 1 + next(k for k, r in enumerate(rows) if str(r.get(column)) == name)
                    raise ImportError_(
                        f"{self.where}: data row {row}: column {column} is {ascii(name)[:80]}, which looks the "
                        f"same as {ascii(other)[:80]} of another row but differs in its Unicode form or invisible "
                        "characters: the two would show as one name in every table; write it one way"
                    )
