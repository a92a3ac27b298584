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
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import Any

from analysis.columns import CONTROL, KEY_COLUMNS, RULE_COLUMNS, SCALE_COLUMNS
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


def fast_records(records: list[list[str]], required: tuple[str, ...],
                 judged: frozenset[str] = frozenset()) -> ResultColumns | None:
    """The csv module's records of a file (one with quoted cells or carriage
    returns) as columns when every column passes its rules, else None (the
    per-cell reader then decides)."""
    import pyarrow as pa  # (here: the commands that never read a CSV never load it)

    if len(records) < 2 or any(len(cells) != len(records[0]) for cells in records[1:]):
        return None
    header = tuple(c.strip() for c in records[0])
    if not _header_ok(header, required):
        return None
    whole = [pa.array(column, pa.string()) for column in zip(*records[1:])]
    return _judged(header, whole, [len(records) - 1], required, judged)[0]


def fast_texts(texts: Sequence[str], required: tuple[str, ...],
               judged: frozenset[str] = frozenset()) -> list[ResultColumns | None]:
    """`fast_columns` of many whole CSV texts (a sync's batch): the texts of
    one header line are read as one table by pyarrow's CSV reader and judged
    together (`_judged`). Only plain texts take part (no quotes, carriage
    returns or NUL bytes, every line as many commas as the header); the others,
    and a pool the reader refuses, are None."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    out: list[ResultColumns | None] = [None] * len(texts)
    by_header: dict[str, list[tuple[int, int, int]]] = {}  # header line -> (file, body start, rows)
    for i, text in enumerate(texts):
        plain = _plain(text)
        if plain is not None:
            by_header.setdefault(text[:plain[0]], []).append((i, plain[0] + 1, plain[1]))
    for line, members in by_header.items():
        header = tuple(c.strip() for c in line.split(","))
        if not _header_ok(header, required):
            continue
        names = [f"c{k}" for k in range(len(header))]
        body = "".join(texts[i][start:] for i, start, _ in members).encode()
        if body.startswith("\ufeff".encode()):
            continue  # the CSV reader would drop it as a byte order mark; a cell keeps it
        try:
            table = pacsv.read_csv(pa.py_buffer(body), pacsv.ReadOptions(column_names=names, block_size=1 << 26),
                                   pacsv.ParseOptions(quote_char=False, double_quote=False, newlines_in_values=False,
                                                      ignore_empty_lines=False),
                                   pacsv.ConvertOptions(column_types={c: pa.string() for c in names},
                                                        strings_can_be_null=False, quoted_strings_can_be_null=False))
        except (pa.ArrowInvalid, ValueError):
            continue  # the per-cell reader decides each of them
        sizes = [rows for _, _, rows in members]
        if table.num_rows != sum(sizes):
            continue
        for (i, _, _), result in zip(members, _judged(header, [table[c].combine_chunks() for c in names], sizes,
                                                      required, judged)):
            out[i] = result
    return out


def _plain(text: str) -> tuple[int, int] | None:
    """(where the header line ends, the number of rows) of a text whose lines
    are its records split at the commas, else None."""
    if '"' in text or "\r" in text or "\x00" in text or not text.endswith("\n") or len(text) > csv.field_size_limit():
        return None
    lines = text.split("\n")
    lines.pop()  # (after the final newline)
    if len(lines) < 2:
        return None
    commas = lines[0].count(",")
    if set(map(str.count, lines, repeat(",", len(lines)))) != {commas}:
        return None
    return len(lines[0]), len(lines) - 1


def _header_ok(header: tuple[str, ...], required: tuple[str, ...]) -> bool:
    return (len(header) >= 2 and len(set(header)) == len(header) and "" not in header
            and not re.search(CONTROL, "".join(header)) and all(c in header for c in required))


def _judged(header: tuple[str, ...], whole: list[Any], sizes: list[int], required: tuple[str, ...],
            judged: frozenset[str]) -> list[ResultColumns | None]:
    """The rows of several files of one header, as Arrow string columns
    (`whole`, the files' rows one after the other, `sizes` rows each): each
    rule applied once per column of all their rows (a sync reads thousands
    of 100-row files: per file, the calls would cost more than the rows),
    then cut back into files. A file with a bad cell or a duplicate natural
    key is None."""
    import pyarrow.compute as pc

    from analysis.rules import check

    starts = list(accumulate(sizes, initial=0))
    bad_files: set[int] = set()
    columns: dict[str, list[Any]] = {}
    extras: dict[str, list[Any]] = {}
    for name, cells in zip(header, whole):
        checked = check(name, cells, name in required, name in judged)
        if not checked.ok:
            bad_rows = pc.indices_nonzero(checked.bad).to_pylist()
            bad_files.update(bisect_right(starts, row) - 1 for row in bad_rows)
        values = checked.values.to_pylist()
        if name in SCALE_COLUMNS:  # checked as integers, kept in the row's extra object as the number's text
            extras[name] = [None if v is None else str(v) for v in values]
        elif name in RULE_COLUMNS:
            columns[name] = values
        else:
            extras[name] = values
    out: list[ResultColumns | None] = []
    for f, (start, n) in enumerate(zip(starts, sizes)):
        if f in bad_files:
            out.append(None)
            continue
        mine = ResultColumns(n, {k: v[start:start + n] for k, v in columns.items()},
                             {k: v[start:start + n] for k, v in extras.items()})
        keyed = [mine.columns[c] for c in KEY_COLUMNS if c in mine.columns] + \
            [v for k, v in (mine.extras or {}).items() if k not in MEASURED_EXTRAS]
        out.append(mine if keyed and len(set(zip(*keyed))) == n else None)  # else no key, or a duplicate key
    return out
