"""A result CSV read column by column: the strict reader's fast path.

Sync reads every finished job's CSV; checking each cell with its own regex
and building a dict per row held ingest near 20,000 rows/s (BENCHMARKS.md,
section 9). Here each column is checked at once (one regex over the column
joined by newlines, min/max for the ranges, a set for duplicate keys) and
rows stay columns up to the INSERT. A column holding one cell text in every
row (most columns of a job's file: its kernel, dtype, d, threads) is checked
as that one cell, and an integer column text seen lately (the n and repeat
columns repeat job after job) answers from a bounded memo. A float column of digits, signs,
points and exponent letters only is checked by float() itself (over those characters it reads
what the cell pattern matches), not by the regex. This path only *accepts*: a file it
cannot prove valid (a bad cell, a blank line, a cell that needs stripping
around a number, ...) answers None, and the caller runs the per-cell
reference (campaign.results.cells), which accepts or names the first bad
line exactly as before. tests/results/test_columnar_differential.py holds
the two to the same decisions, reasons and values.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from analysis.columns import FLOAT_RULES, INT_RULES, KERNEL_COLUMNS, OPTIONAL_COLUMNS, REQUIRED_COLUMNS, SCALE_COLUMNS
from campaign.results.cells import CONTROL, INT64, TEXT_MAX
from campaign.results.keys import KEY_COLUMNS, MEASURED_EXTRAS

KNOWN = frozenset(REQUIRED_COLUMNS) | frozenset(OPTIONAL_COLUMNS) | frozenset(KERNEL_COLUMNS)
# The reference's cell patterns (campaign.results.cells) written so that a cell
# matches one way only, each cell an atomic group: a failing column costs one
# pass, not a backtrack through every earlier cell.
_INT_CELL = r"[+-]?[0-9]+"
_FLOAT_CELL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NAN_CELL = r"[+-]?[nN][aA][nN]"
_INT_CHARS = len(str(INT64[0]))  # what the reference reads as NaN (`lower() == "nan"`)


def _column_pattern(cell: str) -> re.Pattern[str]:
    """A whole column, its cells joined by "\n" (a blank cell is a missing value)."""
    return re.compile(rf"(?>{cell})?(?:\n(?>{cell})?)*")


_INT_COLUMN = _column_pattern(_INT_CELL)
_FLOAT_COLUMN = _column_pattern(_FLOAT_CELL)
_FLOAT_NAN_COLUMN = _column_pattern(f"{_FLOAT_CELL}|{_NAN_CELL}")
_FLOAT_CHARS = b"0123456789.eE+-\n"  # what a plain float column may hold (its cells joined by newlines)
# Integer column texts seen lately and their values (None: refused): a bound on their number and size.
_SEEN_INTS: dict[tuple[int, str], list[Any] | None] = {}
_SEEN_MAX = 256
_SEEN_CHARS = 16_384


@dataclass
class ResultColumns:
    """Typed rows of one result CSV, as columns. `columns`: the known columns
    (analysis/columns.py) in header order; the other columns either as
    `extras` (header order, None where the cell was blank) or, for rows
    built from dicts, `extra_rows` (each row's dict, or None). `same` names
    the columns whose list holds one object in every row (a file's column of
    one cell text): the natural keys write its text once."""

    length: int
    columns: dict[str, list[Any]]
    extras: dict[str, list[str | None]] | None = None
    extra_rows: list[dict[str, str] | None] | None = None
    same: frozenset[str] = frozenset()

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
        return ResultColumns(len(keep), {k: [v[i] for i in keep] for k, v in self.columns.items()}, extras, extra_rows,
                             self.same)

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


def fast_columns(raw_header: list[str], cells: list[Sequence[str]], required: tuple[str, ...]) -> ResultColumns | None:
    """The file's rows as columns when every column passes its whole-column
    check, else None (the per-cell reader then decides)."""
    header = [c.strip() for c in raw_header]
    width = len(header)
    if (width < 2 or len(set(header)) != width or "" in header or CONTROL.search("".join(header))
            or any(c not in header for c in required)):
        return None
    n = len(cells[0])
    columns: dict[str, list[Any]] = {}
    extras: dict[str, list[str | None]] = {}
    same: set[str] = set()  # columns holding one cell text in every row
    for name, column in zip(header, cells):
        if n > 1 and column.count(column[0]) == n:
            one = _checked(name, column[:1], 1)  # each of its cells would pass or fail alike: check one
            if one is None or (name in required and one[0] is None):
                return None
            values = one * n
            same.add(name)
        else:
            checked = _checked(name, column, n)
            if checked is None or (name in required and None in checked):
                return None
            values = checked
        if name in KNOWN:
            columns[name] = values
        else:
            extras[name] = values
    keyed = [c for c in KEY_COLUMNS if c in columns] + [k for k in extras if k not in MEASURED_EXTRAS]
    if not keyed:
        return None  # no key column at all
    # Rows differ where their keys do: in the columns that are not the same in every row.
    varying = [columns[c] if c in columns else extras[c] for c in keyed if c not in same]
    distinct = len(set(zip(*varying))) if varying else 1
    if distinct != n:
        return None  # a duplicate natural key
    return ResultColumns(n, columns, extras, same=frozenset(same))


def _checked(name: str, cells: Sequence[str], n: int) -> list[Any] | None:
    if name in SCALE_COLUMNS:  # an extra column with an integer rule: checked, kept as its number's text
        ints = _ints(cells, n, INT_RULES[name].minimum)
        return None if ints is None else [None if v is None else str(v) for v in ints]
    return _column(name, cells, n) if name in KNOWN else _text(cells, TEXT_MAX)


def _column(name: str, cells: Sequence[str], n: int) -> list[Any] | None:
    if name in INT_RULES:
        return _ints(cells, n, INT_RULES[name].minimum)
    if name in FLOAT_RULES:
        rule = FLOAT_RULES[name]
        return _floats(cells, n, rule.allow_nan, rule.positive)
    return _text(cells, TEXT_MAX)


def _joined(cells: Sequence[str], n: int) -> str | None:
    joined = "\n".join(cells)
    return joined if joined.count("\n") == n - 1 else None  # no cell holds a newline


def _ints(cells: Sequence[str], n: int, minimum: int) -> list[Any] | None:
    """An integer column's values. The jobs of a campaign repeat the same n
    and repeat columns file after file, so a column text seen lately (joined,
    its cells hold no newline: the text is the cells) answers from _SEEN_INTS."""
    joined = _joined(cells, n)
    if joined is None:
        return None
    key = (minimum, joined)
    if key in _SEEN_INTS:
        seen = _SEEN_INTS[key]
        return None if seen is None else list(seen)
    values = _parse_ints(cells, joined, minimum)
    if len(joined) <= _SEEN_CHARS:
        if len(_SEEN_INTS) >= _SEEN_MAX:
            _SEEN_INTS.clear()
        _SEEN_INTS[key] = None if values is None else list(values)
    return values


def _parse_ints(cells: Sequence[str], joined: str, minimum: int) -> list[Any] | None:
    if max(map(len, cells)) > _INT_CHARS or not _INT_COLUMN.fullmatch(joined):
        return None  # longer than any int64 (leading zeros, or past int()'s digit limit): the reference
    if "" not in cells:
        ints = list(map(int, cells))
        return ints if max(INT64[0], minimum) <= min(ints) and max(ints) <= INT64[1] else None
    values = [int(c) if c else None for c in cells]
    present = [v for v in values if v is not None]
    if present and not (max(INT64[0], minimum) <= min(present) and max(present) <= INT64[1]):
        return None
    return values


def _floats(cells: Sequence[str], n: int, allow_nan: bool, positive: bool) -> list[float | None] | None:
    """A float column's values. A column of digits, signs, points and
    exponent letters only (the usual one) is checked by float() itself:
    over those characters it reads exactly the cells that _FLOAT_CELL
    matches, without the regex's pass over the column."""
    joined = _joined(cells, n)
    if joined is None:
        return None
    plain = joined.isascii() and not joined.encode().translate(None, _FLOAT_CHARS)
    if not plain and not (_FLOAT_NAN_COLUMN if allow_nan else _FLOAT_COLUMN).fullmatch(joined):
        return None
    try:
        if "" not in cells and not (allow_nan and ("n" in joined or "N" in joined)):
            values: list[float | None] = list(map(float, cells))
            present: list[Any] = values
        else:
            values = [float(c) if c else None for c in cells]
            present = [v for v in values if v is not None and v == v]  # NaN (allowed here) is a missing value
    except ValueError:  # (plain only: "1e", "+", "." ...)
        return None
    if present:
        low, high = min(present), max(present)
        if high == float("inf") or low == float("-inf") or (low <= 0 if positive else low < 0):
            return None
    return values


def _text(cells: Sequence[str], limit: int) -> list[str | None] | None:
    values = list(map(str.strip, cells))
    if max(map(len, values)) > limit or CONTROL.search("".join(values)):
        return None
    return [v or None for v in values] if "" in values else values  # type: ignore[return-value]
