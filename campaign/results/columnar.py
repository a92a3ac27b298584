"""A result CSV read column by column: the strict reader's fast path.

Each column's cells go to the one rule set (analysis.rules, pyarrow.compute
over the whole column); a file whose every column passes is taken as typed
Arrow columns, and stays Arrow up to the Parquet writer. This path only
*accepts*: a file it cannot prove valid (a bad cell, a blank line, a quoted
cell, a duplicate natural key, ...) answers None and the caller runs the
per-cell reference (campaign.results.cells), which names the first bad line
and its reason.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from campaign.results.keys import MEASURED_EXTRAS
from resultschema.columns import CONTROL, KEY_COLUMNS, RULE_COLUMNS, SCALE_COLUMNS

_RULES, _EXTRA_NAMES = frozenset(RULE_COLUMNS), frozenset(SCALE_COLUMNS)  # (sets: looked up per file)


class ResultColumns:
    """Typed rows of one result CSV. Either an Arrow table (`arrow`: the
    file's columns in header order, the rule columns typed, the others, and
    ranks/nodes, as text) or Python columns: `columns`, the rule columns in
    header order; the other columns as `extras` (header order, None where
    the cell was blank) or, for rows built from dicts, `extra_rows` (each
    row's dict, or None). The Python columns of an Arrow table are made on
    first use (the per-file judging of a file the pooled checks flagged)."""

    def __init__(self, length: int, columns: dict[str, list[Any]] | None = None,
                 extras: dict[str, list[str | None]] | None = None,
                 extra_rows: list[dict[str, str] | None] | None = None, arrow: Any = None) -> None:
        self.length, self.arrow, self.extra_rows = length, arrow, extra_rows
        self._columns, self._extras = columns, extras

    def __len__(self) -> int:
        return self.length

    def _lists(self) -> None:
        if self._columns is None:
            names = self.arrow.column_names if self.arrow is not None else []
            self._columns = {k: self.arrow[k].to_pylist() for k in names if k in RULE_COLUMNS and k not in SCALE_COLUMNS}
            self._extras = {k: self.arrow[k].to_pylist() for k in names if k not in self._columns}

    @property
    def columns(self) -> dict[str, list[Any]]:
        self._lists()
        assert self._columns is not None
        return self._columns

    @property
    def extras(self) -> dict[str, list[str | None]] | None:
        self._lists()
        return self._extras

    def extra_names(self) -> list[str]:
        """The extra columns' names (or every key of the rows' extra dicts)."""
        if self.arrow is not None:
            return extra_columns(self.arrow.column_names)
        if self.extras is not None:
            return list(self.extras)
        return list(dict.fromkeys(k for row in self.extra_rows or () if row for k in row))

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

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> ResultColumns:
        """Columns of row dicts (every row with the first row's known columns)."""
        names = [k for k in (rows[0] if rows else {}) if k != "extra"]
        columns = {name: [r.get(name) for r in rows] for name in names}
        return cls(len(rows), columns, extra_rows=[r.get("extra") for r in rows])


def release_unused() -> None:
    """The Arrow allocator's freed memory of the calling thread handed back
    (`MemoryPool.release_unused`): a sync's reading thread does it once per
    batch written (campaign.plumbing.pipeline), or its peak memory varies with
    the timing of the two threads. Nothing when no Arrow buffer was made."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


def extra_columns(names: Sequence[str]) -> list[str]:
    """Which of a CSV's columns go to the row's extra object (not a rule column, or ranks/nodes)."""
    return [k for k in names if k in _EXTRA_NAMES or k not in _RULES]


@dataclass
class Pool:
    """Files of one header read as one Arrow table (`table`, the checked
    columns; `starts`: where each member's rows begin, `sizes`: how many).
    `members`: the positions of the files in the caller's list; `accepted`:
    which passed every rule (the others go to the per-cell reader)."""

    members: list[int]
    table: Any
    starts: list[int]
    sizes: list[int]
    accepted: list[bool]

    def part(self, k: int) -> ResultColumns | None:
        """The k-th member's rows, or None where the rules refused them."""
        if not self.accepted[k]:
            return None
        return ResultColumns(self.sizes[k], arrow=self.table.slice(self.starts[k], self.sizes[k]))


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
    pool = _checked([0], header, whole, [len(records) - 1], required, judged)
    return pool.part(0)


def pools(texts: Sequence[str | bytes], required: tuple[str, ...], judged: frozenset[str] = frozenset()) -> list[Pool]:
    """Many whole CSV texts (a sync's batch): the texts of one header line
    are read as one table by pyarrow's CSV reader and their rules applied
    together (`_checked`). Only plain texts take part (no quotes, carriage
    returns or NUL bytes, a final newline, a header and a row at least); a
    text of a pool the reader refuses (a line of other width, a blank line)
    is read alone. The texts left out belong to the per-cell reader."""
    by_header: dict[str, list[tuple[int, int, int]]] = {}  # header line -> (file, body start, rows)
    for i, text in enumerate(texts):
        if len(text) > csv.field_size_limit():
            continue
        if isinstance(text, bytes):  # an ASCII job CSV as read, never decoded (reader.classify_stream)
            if b'"' in text or b"\r" in text or b"\x00" in text or not text.endswith(b"\n"):
                continue
            start, rows, line = text.find(b"\n"), text.count(b"\n") - 1, text[:text.find(b"\n")].decode("ascii")
        else:
            if '"' in text or "\r" in text or "\x00" in text or not text.endswith("\n"):
                continue
            start, rows, line = text.find("\n"), text.count("\n") - 1, text[:text.find("\n")]
        if rows >= 1:
            by_header.setdefault(line, []).append((i, start + 1, rows))
    out = []
    for line, members in by_header.items():
        header = tuple(c.strip() for c in line.split(","))
        if not _header_ok(header, required):
            continue
        groups = [members]
        while groups:
            group = groups.pop()
            whole = _read([_body(texts[i], start) for i, start, _ in group], len(header),
                          sum(n for _, _, n in group))
            if whole is not None:
                out.append(_checked([i for i, _, _ in group], header, whole, [n for _, _, n in group], required,
                                    judged))
            elif len(group) > 1:  # one text of them is not plain: each alone
                groups += [[m] for m in group]
    return out


def _body(text: str | bytes, start: int) -> Any:
    """A text's lines after its header, as bytes (of bytes, a view: no copy)."""
    return memoryview(text)[start:] if isinstance(text, bytes) else text[start:].encode()


def _read(bodies: list[Any], width: int, lines: int) -> list[Any] | None:
    """The cells of these CSV bodies (`lines` lines, as the caller counted
    them, of `width` fields), as text columns, or None where a line is not
    (or a body starts with a byte order mark, which the reader would drop).
    One thread: a pool is one block of the reader, whose threads then only
    cost CPU (measured: 45 -> 35 CPU ms per 200,000 rows)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    body = b"".join(bodies)
    if body.startswith("\ufeff".encode()):
        return None
    names = [f"c{k}" for k in range(width)]
    try:
        table = pacsv.read_csv(pa.py_buffer(body), pacsv.ReadOptions(column_names=names, block_size=1 << 26, use_threads=False),
                               pacsv.ParseOptions(quote_char=False, double_quote=False, newlines_in_values=False,
                                                  ignore_empty_lines=False),
                               pacsv.ConvertOptions(column_types={c: pa.string() for c in names},
                                                    strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, ValueError):
        return None
    if table.num_rows != lines:
        return None
    return [table[c].combine_chunks() for c in names]


def _header_ok(header: tuple[str, ...], required: tuple[str, ...]) -> bool:
    return (len(header) >= 2 and len(set(header)) == len(header) and "" not in header
            and not re.search(CONTROL, "".join(header)) and all(c in header for c in required))


def _checked(members: list[int], header: tuple[str, ...], whole: list[Any], sizes: list[int],
             required: tuple[str, ...], judged: frozenset[str]) -> Pool:
    """The rows of several files of one header, as Arrow string columns
    (`whole`, the files' rows one after the other, `sizes` rows each): each
    rule applied once per column of all their rows (a sync reads thousands
    of 100-row files: per file, the calls would cost more than the rows).
    A file with a bad cell or a duplicate natural key is not accepted."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from analysis.rules import check

    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bad = np.zeros(len(sizes), dtype=bool)
    columns = []
    for name, cells in zip(header, whole):
        checked = check(name, cells, name in required, name in judged)
        if not checked.ok:
            bad |= np.logical_or.reduceat(checked.bad.to_numpy(zero_copy_only=False), starts)
        columns.append(pc.cast(checked.values, pa.string()) if name in SCALE_COLUMNS else checked.values)
    # checked as integers, ranks/nodes are kept in the row's extra object as the number's text
    table = pa.table(columns, names=list(header))
    keyed = [c for c in header if c in KEY_COLUMNS or
             ((c not in RULE_COLUMNS or c in SCALE_COLUMNS) and c not in MEASURED_EXTRAS)]
    if not keyed:
        bad[:] = True  # no key: the per-cell reader decides
    elif not _unique_by_n_and_repeat(table, sizes):
        file_index = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        keys = table.select(keyed).append_column("__file", pa.array(file_index))
        counts = keys.group_by([*keyed, "__file"], use_threads=False).aggregate([([], "count_all")])
        doubled = pc.filter(counts["__file"], pc.greater(counts["count_all"], 1)).to_numpy()
        bad[doubled] = True
    return Pool(members, table, starts.tolist(), list(sizes), (~bad).tolist())


def _unique_by_n_and_repeat(table: Any, sizes: list[int]) -> bool:
    """No two rows of a file share their n and repeat (then none share the
    whole natural key, of which they are part): one sort of integers, where
    a group-by over every key column costs ten times more."""
    import numpy as np
    import pyarrow.compute as pc

    if "n" not in table.column_names or "repeat" not in table.column_names or len(sizes) >= 2**15:
        return False
    n, repeat = table["n"], table["repeat"]
    if n.null_count or repeat.null_count or pc.min(n).as_py() < 0 or pc.max(n).as_py() >= 2**32 or \
            pc.min(repeat).as_py() < 0 or pc.max(repeat).as_py() >= 2**16:
        return False
    of_row = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    keys = (of_row << 48) | (n.to_numpy() << 16) | repeat.to_numpy()
    keys.sort()
    return bool((keys[1:] != keys[:-1]).all())
