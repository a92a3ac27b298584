"""A result CSV read column by column: the strict reader's fast path.

Each column's cells go to the one rule set (analysis.rules, pyarrow.compute
over the whole column); a file whose every column passes is taken as typed
columns. This path only *accepts*: a file it cannot prove valid (a bad cell,
a blank line, a quoted cell, a duplicate natural key, ...) answers None and
the caller runs the per-cell reference (campaign.results.cells), which names
the first bad line and its reason.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import pyarrow as pa

from analysis.columns import KEY_COLUMNS, RULE_COLUMNS, SCALE_COLUMNS
from analysis.rules import CONTROL, check
from campaign.results.keys import MEASURED_EXTRAS


@dataclass
class ResultColumns:
    """Typed rows of one result CSV, as columns. `columns`: the rule columns
    (analysis.columns) in header order; the other columns either as `extras`
    (header order, None where the cell was blank) or, for rows built from
    dicts, `extra_rows` (each row's dict, or None)."""

    length: int
    columns: dict[str, list[Any]]
    extras: dict[str, list[str | None]] | None = None
    extra_rows: list[dict[str, str] | None] | None = None

    def __len__(self) -> int:
        return self.length

    def extra_dicts(self) -> list[dict[str, str] | None]:
        if self.extra_rows is not None:
            return self.extra_rows
        extras = self.extras or {}
        out: list[dict[str, str] | None] = []
        for i in range(self.length):
            row = {name: values[i] for name, values in extras.items() if values[i] is not None}
            out.append(row or None)  # type: ignore[arg-type]  # the None cells are left out
        return out

    def rows(self) -> list[dict[str, Any]]:
        """Row dicts as the per-cell reader makes them (known columns, then "extra")."""
        names = list(self.columns)
        rows = [dict(zip(names, cells)) for cells in zip(*self.columns.values())] if names else \
            [{} for _ in range(self.length)]
        for row, extra in zip(rows, self.extra_dicts()):
            row["extra"] = extra
        return rows

    def take(self, keep: Sequence[int]) -> ResultColumns:
        """The rows at these positions, in this order."""
        extras = None if self.extras is None else {k: [v[i] for i in keep] for k, v in self.extras.items()}
        extra_rows = None if self.extra_rows is None else [self.extra_rows[i] for i in keep]
        return ResultColumns(len(keep), {k: [v[i] for i in keep] for k, v in self.columns.items()}, extras, extra_rows)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> ResultColumns:
        """Columns of row dicts (every row with the first row's known columns)."""
        names = [k for k in (rows[0] if rows else {}) if k != "extra"]
        columns = {name: [r.get(name) for r in rows] for name in names}
        return cls(len(rows), columns, extra_rows=[r.get("extra") for r in rows])


def split_cells(text: str) -> tuple[list[str], list[Sequence[str]]] | None:
    """Header and columns of a text without quotes or carriage returns, for
    which the csv module's records are its lines split at the commas (a
    text with them, or one long enough to hold a cell over the csv module's
    field limit, answers None: read it with the csv module)."""
    if '"' in text or "\r" in text or "\x00" in text or len(text) > csv.field_size_limit():
        return None
    lines = text.split("\n")
    end = len(text)
    if lines[-1] == "":
        lines.pop()
        end -= 1
    if len(lines) < 2:
        return None
    commas = lines[0].count(",")
    if set(map(str.count, lines, repeat(",", len(lines)))) != {commas}:
        return None  # blank lines, short or long rows: the reference names the line
    cells = text[len(lines[0]) + 1:end].replace("\n", ",").split(",")  # the lines after the header
    return lines[0].split(","), [cells[i::commas + 1] for i in range(commas + 1)]


def record_cells(records: list[list[str]]) -> tuple[list[str], list[Sequence[str]]] | None:
    """Header and columns of the csv module's records (None: rows of another width)."""
    if len(records) < 2 or any(len(cells) != len(records[0]) for cells in records[1:]):
        return None
    return records[0], list(zip(*records[1:]))


def fast_columns(raw_header: list[str], cells: list[Sequence[str]], required: tuple[str, ...],
                 judged: frozenset[str] = frozenset()) -> ResultColumns | None:
    """The file's rows as columns when every column passes its rules
    (analysis.rules), else None (the per-cell reader then decides)."""
    import pyarrow.compute as pc

    header = [c.strip() for c in raw_header]
    if (len(header) < 2 or len(set(header)) != len(header) or "" in header
            or pc.match_substring_regex(pa.array(["".join(header)]), CONTROL)[0].as_py()
            or any(c not in header for c in required)):
        return None
    columns: dict[str, list[Any]] = {}
    extras: dict[str, list[Any]] = {}
    for name, column in zip(header, cells):
        checked = check(name, pa.array(column, pa.string()), name in required, name in judged)
        if not checked.ok:
            return None
        if name in RULE_COLUMNS and name not in SCALE_COLUMNS:
            columns[name] = checked.values.to_pylist()
        elif name in SCALE_COLUMNS:  # checked as integers, kept in the row's extra object as the number's text
            extras[name] = [None if v is None else str(v) for v in checked.values.to_pylist()]
        else:
            extras[name] = checked.values.to_pylist()
    keyed = [columns[c] for c in KEY_COLUMNS if c in columns] + \
        [v for k, v in extras.items() if k not in MEASURED_EXTRAS]
    if not keyed or len(set(zip(*keyed))) != len(cells[0]):
        return None  # no key column at all, or a duplicate natural key
    return ResultColumns(len(cells[0]), columns, extras)
