"""The one validator of result CSVs: a CSV's cells read as Arrow columns and
judged by the one rule set (analysis.rules, pyarrow.compute over whole
columns), the texts of one header (a sync's batch of finished jobs) as one
table. A file either passes, and its rows stay Arrow up to the Parquet
writer, or it is refused with the reason of its first bad line: its line
number, the column, the cell and the rule it broke, taken from the same
masks that refused it (`Pool.refusals`).

Plain texts (no quotes, carriage returns or NUL bytes, a final newline) are
read by pyarrow's CSV reader; any other text by the csv module, whose
records (quoted cells, CRLF, blank lines) then take the same column rules.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from campaign.plumbing.errors import one_line
from campaign.results.keys import MEASURED_EXTRAS
from campaign.results.result_columns import ResultColumns
from resultschema.columns import CONTROL, KEY_COLUMNS, RULE_COLUMNS, SCALE_COLUMNS


@dataclass(frozen=True)
class Refusal:
    """Why a text was refused: on which of its lines (None: the whole file) and what is wrong."""

    line: int | None
    what: str

    def message(self, where: str) -> str:
        return f"{where}: {self.what}" if self.line is None else f"{where} line {self.line}: {self.what}"


@dataclass
class Pool:
    """Texts of one header read as one Arrow table (`table`, the checked
    columns; `starts`: where each member's rows begin, `sizes`: how many).
    `members`: the positions of the texts in the caller's list; `refusals`:
    per member, None where it passed every rule, else why not. A text
    refused before its cells were read (its header, its lines) is a pool of
    its own without a table."""

    members: list[int]
    table: Any
    starts: list[int]
    sizes: list[int]
    refusals: list[Refusal | None]

    def part(self, k: int) -> ResultColumns | None:
        """The k-th member's rows, or None where it was refused."""
        if self.refusals[k] is not None:
            return None
        return ResultColumns(self.sizes[k], arrow=self.table.slice(self.starts[k], self.sizes[k]))


def read(texts: Sequence[str | bytes], required: tuple[str, ...], judged: frozenset[str] = frozenset(),
         nullable: frozenset[str] = frozenset(), imported: bool = False) -> list[Pool]:
    """Whole CSV texts (bytes: ASCII as read), each as a member of one pool.
    `judged`: float columns read as any number (their values judged by the
    caller: a job's rel_err). `nullable`: required columns whose empty cell
    is a null value, not a missing one (an import's n: NULLABLE_COLUMNS). `imported`: the texts are
    imported CSVs, read by the stricter rules of an import (analysis.rules; a row that names a
    `metric` has its `value`). The plain texts of one header line are read by
    pyarrow's CSV reader as one table and their rules applied together; a
    text that reader refuses (a line of other width, a blank line) and any
    text that is not plain is read alone by the csv module."""
    by_header: dict[str, list[tuple[int, int, int]]] = {}  # header line -> (text, body start, rows)
    alone: list[int] = []
    for i, text in enumerate(texts):
        found = _plain(text, scan_blank=not required)
        if found is None:
            alone.append(i)
        else:
            by_header.setdefault(found[0], []).append((i, *found[1:]))
    out = []
    for line, members in by_header.items():
        header = tuple(c.strip() for c in line.split(","))
        refused = _header_refusal(header, required, imported)
        if refused is not None:
            out += [Pool([i], None, [0], [0], [refused]) for i, _, _ in members]
            continue
        groups = [members]
        while groups:
            group = groups.pop()
            whole = _read([_body(texts[i], start) for i, start, _ in group], len(header),
                          sum(n for _, _, n in group))
            pool = None if whole is None else \
                _checked([i for i, _, _ in group], header, whole, [n for _, _, n in group], None, required, judged,
                         nullable, imported)
            blank = [] if pool is None else [m for m, refused in zip(group, pool.refusals)
                                             if refused is not None and _blank_line(texts[m[0]])]
            if pool is not None and not blank:
                out.append(pool)
            elif blank:  # read as a row of empty cells, which the csv module skips: those alone
                alone += [i for i, _, _ in blank]
                groups += [[m for m in group if m not in blank]] if len(blank) < len(group) else []
            elif len(group) > 1:  # one text of them is not plain: each alone
                groups += [[m] for m in group]
            else:
                alone.append(group[0][0])
    for i in sorted(alone):
        text = texts[i]
        out.append(_records(i, text.decode("ascii") if isinstance(text, bytes) else text, required, judged,
                            nullable, imported))
    return out


def _plain(text: str | bytes, scan_blank: bool) -> tuple[str, int, int] | None:
    """(header line, where the body starts, rows) of a text pyarrow's reader may take, else None.
    Its reader takes a blank line for a row of empty cells, which the csv module skips: such a row
    breaks every required column, so a text is looked through for one only where it was refused
    (read) or where no column is required (`scan_blank`)."""
    if scan_blank and _blank_line(text):
        return None
    if isinstance(text, bytes):  # an ASCII job CSV as read, never decoded (reader.classify_stream)
        if b'"' in text or b"\r" in text or b"\x00" in text or not text.endswith(b"\n"):
            return None
        start, rows = text.find(b"\n"), text.count(b"\n") - 1
        line = text[:start].decode("ascii")
    else:
        if '"' in text or "\r" in text or "\x00" in text or not text.endswith("\n"):
            return None
        start, rows = text.find("\n"), text.count("\n") - 1
        line = text[:start]
    return (line, start + 1, rows) if rows >= 1 and line.strip() else None


def _blank_line(text: str | bytes) -> bool:
    return (b"\n\n" if isinstance(text, bytes) else "\n\n") in text  # type: ignore[operator]


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


def _records(i: int, text: str, required: tuple[str, ...], judged: frozenset[str],
             nullable: frozenset[str], imported: bool = False) -> Pool:
    """A text that is not plain, read by the csv module (quoted cells, CRLF,
    blank lines, no final newline) and judged by the same column rules; its
    lines refused before that (no header, a record of another width) are
    named here, after any bad row above them. A record's line is the file line it starts on."""
    import pyarrow as pa

    def refused(line: int | None, what: str) -> Pool:
        return Pool([i], None, [0], [0], [Refusal(line, what)])

    if "\x00" in text:
        return refused(None, f"contains a NUL byte (offset {text.index(chr(0))})")
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        return refused(None, f"not a readable CSV: {one_line(exc)}")
    if not records or not any(c.strip() for c in records[0]):
        return refused(None, "empty file (no header)")
    header = tuple(c.strip() for c in records[0])
    head = _header_refusal(header, required, imported)
    if head is not None:
        return Pool([i], None, [0], [0], [head])
    rows, lines, short = [], [], None
    line = 2 + sum(c.count("\n") for c in records[0])
    for cells in records[1:]:
        if cells and not (len(cells) == 1 and not cells[0].strip()):  # (a blank line)
            if len(cells) != len(header):
                short = Refusal(line, f"{len(cells)} fields, the header has {len(header)}")
                break
            rows.append(cells)
            lines.append(line)
        line += 1 + sum(c.count("\n") for c in cells)
    whole = [pa.array(column, pa.string()) for column in zip(*rows)] if rows else \
        [pa.array([], pa.string()) for _ in header]
    pool = _checked([i], header, whole, [len(rows)], [lines], required, judged, nullable, imported)
    if short is not None and pool.refusals[0] is None:  # the rows above the short one are fine: it is the first
        return Pool([i], None, [0], [0], [short])
    return pool


def _header_refusal(header: tuple[str, ...], required: tuple[str, ...], imported: bool = False) -> Refusal | None:
    seen: set[str] = set()
    for name in header:
        if name == "" or re.search(CONTROL, name):
            return Refusal(1, "empty or unprintable column name")
        if name in seen:
            return Refusal(1, f"column {name} appears twice")
        seen.add(name)
    missing = [c for c in required if c not in seen]
    if imported and "metric" in seen and "value" not in seen:  # an imported figure has its value
        missing.append("value")
    return Refusal(None, f"missing column(s) {', '.join(missing)}") if missing else None


def _checked(members: list[int], header: tuple[str, ...], whole: list[Any], sizes: list[int],
             lines: list[list[int]] | None, required: tuple[str, ...], judged: frozenset[str],
             nullable: frozenset[str], imported: bool = False) -> Pool:
    """The rows of several texts of one header, as Arrow string columns
    (`whole`, the texts' rows one after the other, `sizes` rows each;
    `lines`: each row's file line, where not its row index + 2): each rule
    applied once per column of all their rows (a sync reads thousands of
    100-row files: per file, the calls would cost more than the rows). A
    text with a bad cell or a repeated natural key is refused with its first."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from analysis.rules import check, required_where

    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bad = np.zeros(len(sizes), dtype=bool)
    checks, columns = [], []
    named = None  # an imported row that names a metric: its value cell must not be empty
    if imported and "metric" in header and "value" in header:
        named = check("metric", whole[header.index("metric")]).values.is_valid()
    for name, cells in zip(header, whole):
        checked = check(name, cells, name in required and name not in nullable, name in judged, imported)
        if name == "value" and named is not None:
            checked = required_where(checked, named, "is empty, and the row names a metric")
        if not checked.ok and len(cells):
            bad |= np.logical_or.reduceat(checked.bad.to_numpy(zero_copy_only=False), starts)
        checks.append(checked)
        columns.append(pc.cast(checked.values, pa.string()) if name in SCALE_COLUMNS else checked.values)
    # checked as integers, ranks/nodes are kept in the row's extra object as the number's text
    table = pa.table(columns, names=list(header))
    keyed = _keyed(header)
    repeated = np.zeros(len(sizes), dtype=bool)
    if not keyed:
        repeated[:] = np.array(sizes) > 1  # no key column: every row has the same (empty) key
    elif table.num_rows and not _unique_by_n_and_repeat(table, sizes):
        file_index = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        keys = table.select(keyed).append_column("__file", pa.array(file_index))
        counts = keys.group_by([*keyed, "__file"], use_threads=False).aggregate([([], "count_all")])
        repeated[pc.filter(counts["__file"], pc.greater(counts["count_all"], 1)).to_numpy()] = True
    refusals: list[Refusal | None] = [None] * len(sizes)
    for k in np.flatnonzero(bad | repeated):
        at = (lines[k].__getitem__ if lines is not None else lambda row: row + 2)
        start, size = int(starts[k]), sizes[k]
        cell = _first_bad_cell(header, whole, checks, start, size) if bad[k] else None
        again = _first_repeat(table.slice(start, size), keyed) if repeated[k] else None
        if again is not None and (cell is None or again[0] < cell[0]):  # (rows above a bad cell are good)
            refusals[k] = Refusal(at(again[0]), f"the same configuration, n and repeat as line {at(again[1])}")
        elif cell is not None:
            refusals[k] = Refusal(at(cell[0]), cell[1])
    return Pool(members, table, starts.tolist(), list(sizes), refusals)


def _keyed(header: tuple[str, ...]) -> list[str]:
    """The columns of a row's natural key (campaign.results.keys): the key columns and every extra
    column that is not itself a measurement."""
    return [c for c in header if c in KEY_COLUMNS or
            ((c not in RULE_COLUMNS or c in SCALE_COLUMNS) and c not in MEASURED_EXTRAS)]


def _first_bad_cell(header: tuple[str, ...], whole: list[Any], checks: list[Any], start: int,
                    size: int) -> tuple[int, str] | None:
    """A text's first bad row (within the text) and what is wrong with its first bad cell, from the masks."""
    import pyarrow.compute as pc

    first = {j: pc.index(checked.bad.slice(start, size), True).as_py() for j, checked in enumerate(checks)}
    row, j = min(((row, j) for j, row in first.items() if row >= 0), default=(-1, -1))
    if row < 0:
        return None
    return row, f"column {header[j]} {checks[j].explain(start + row, whole[j][start + row].as_py())}"


def _first_repeat(rows: Any, keyed: list[str]) -> tuple[int, int] | None:
    """A text's first row that repeats the natural key of an earlier row, and that row (one code
    per distinct key, numpy's unique over the codes), or None."""
    import numpy as np
    import pyarrow.compute as pc

    codes = np.stack([pc.dictionary_encode(rows[c], null_encoding="encode").combine_chunks().indices.to_numpy()
                      for c in keyed], axis=1) if keyed else np.zeros((rows.num_rows, 1), dtype=np.int64)
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    earlier = first[inverse.reshape(-1)]
    again = np.flatnonzero(earlier != np.arange(rows.num_rows))
    return (int(again[0]), int(earlier[again[0]])) if len(again) else None


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
