"""One job's result rows as one SQLite statement: the values that are the
same in every row (the attempt, the run's cluster, kernel, dtype, ...) bound
once, the others once per row.

Sync's driver `executemany` bound 22 parameters per row, and binding, not
storing, was most of SQLite's INSERT time (1,000,000 ledger-shaped rows:
~6.6 s of CPU through executemany, ~2.7 s as one `INSERT ... SELECT ?1, ...,
column1, ... FROM (VALUES (...), ...)` per 100-row job; BENCHMARKS.md
section 9). The rows and their order are the same as the executemany's (the
VALUES rows are inserted in order, so ids come out as before), and each
stored value is the same: a bound value gets the column's affinity whether it
comes through VALUES or through the select list. A value is bound once only
when it is the same object value in every row (same type, equal, and for
floats not a zero, whose sign equality would not see).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from campaign.ledger.blocks import constant  # the same test: one stored value in every row

ROWS_PER_STATEMENT = 500  # a bound on the statement text (and so on how many distinct texts are cached)


def variable_limit(connection: Any) -> int:
    """How many parameters one statement of this SQLite connection may have
    (999 before SQLite 3.32, 32,766 since)."""
    try:
        return int(connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    except (AttributeError, sqlite3.Error):  # Python < 3.11 has no getlimit: SQLite's oldest default
        return 999


class BlockInsert:
    """Statements (text, parameters) that insert a block of rows given as
    columns, in order. `head` is `INSERT INTO table (c1, ..., cN)` naming
    `width` columns."""

    def __init__(self, head: str, width: int, limit: int) -> None:
        self.head = head
        self.width = width
        self.limit = limit
        self._texts: dict[tuple[tuple[int, ...], int], str] = {}
        self.constant: frozenset[int] = frozenset()  # the columns of the last block that hold one value

    def statements(self, columns: list[list[Any]], length: int,
                   same: frozenset[int] = frozenset()) -> Iterator[tuple[str, list[Any]]]:
        """`same`: columns known to hold one object in every row (not compared again)."""
        if length == 0:
            return
        fixed = tuple(i for i, col in enumerate(columns) if length > 1 and (i in same or constant(col)))
        self.constant = frozenset(fixed) if length > 1 else frozenset(range(self.width))
        fixed = fixed[:self.width - 1]  # one column always varies, so that a VALUES row is never empty
        varying = [columns[i] for i in range(self.width) if i not in set(fixed)]
        per = max(1, min(ROWS_PER_STATEMENT, (self.limit - len(fixed)) // len(varying)))
        bound = [columns[i][0] for i in fixed]
        k, width = len(bound), len(varying)
        for start in range(0, length, per):
            rows = min(per, length - start)
            params = bound + [None] * (rows * width)
            for j, col in enumerate(varying):  # row-major: each column into every width-th slot
                params[k + j::width] = col if rows == length else col[start:start + rows]
            yield self._text(fixed, rows), params

    def _text(self, fixed: tuple[int, ...], rows: int) -> str:
        text = self._texts.get((fixed, rows))
        if text is None:
            # ?1..?k are the fixed values; the VALUES' plain "?" are numbered after them
            # (SQLite: one more than the largest number so far).
            select, column = [], 0
            for i in range(self.width):
                if i in fixed:
                    select.append(f"?{fixed.index(i) + 1}")
                else:
                    column += 1
                    select.append(f"column{column}")
            row = "(" + ",".join("?" * column) + ")"
            text = f"{self.head} SELECT {', '.join(select)} FROM (VALUES {','.join([row] * rows)})"
            self._texts[(fixed, rows)] = text
        return text
