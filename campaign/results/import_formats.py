"""`campaign import` of a JSON or Parquet file, as `campaign results --format json|parquet`
writes them: its rows are written as the CSV text that `results --format csv` writes of the
same rows (campaign.results.table.write_csv: Python's csv module, a value as Python writes
it, NULL an empty cell), a chunk of rows at a time, and that text is read by the one strict
reader of an import (campaign.results.import_stream), so every cell of every format passes the
same checks. A Parquet export read so is its CSV export byte for byte; a JSON one the same
values (a number as JSON has it, an object or array cell, `extra`, as its JSON text).

A column of the result schema other than `extra` holds one value a cell: a JSON object or
array in a text column, or a Parquet column of a nested or binary type, was stored as its
text (`{'a': 1}`, `b'k'`, `["cpu"]` as a kernel, a partition): it is refused, naming the
column (a number column refuses it by its own rule, as any cell that is no number).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from campaign.plumbing.errors import ImportError_
from resultschema.columns import RESULT_SCHEMA

PARQUET, JSON = "Parquet", "JSON"
_ONE_VALUE = frozenset(c.name for c in RESULT_SCHEMA if c.name != "extra")
_TEXT = frozenset(c.name for c in RESULT_SCHEMA if c.kind == "text")


def kind(path: Path) -> str | None:
    """PARQUET or JSON by the file's first bytes (not its name), None for any other (CSV) text."""
    with path.open("rb") as fh:
        head = fh.read(64)
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return PARQUET if head.startswith(b"PAR1") else JSON if text[:2] in (b"[{", b"[]", b'{"') else None


def csv_chunks(path: Path, which: str, rows: int) -> Iterator[tuple[int, str]]:
    """(the CSV line of the chunk's first row, the header line + up to `rows` rows as CSV text)."""
    import duckdb

    con = duckdb.connect()
    # every JSON value as its JSON text (depth 1): no type guessed from a sample of the rows
    read = "read_parquet(?)" if which == PARQUET else "read_json(?, format='auto', maximum_depth=1)"
    try:
        rel = con.sql(f"SELECT * FROM {read}", params=[str(path)])
        header, reader = rel.columns, rel.to_arrow_reader(rows)
        if which == PARQUET:
            _one_value_types(path, header, [str(t) for t in rel.types])
        first, sent = 2, False
        for batch in reader:
            cells = [
                _cells(batch.column(i).to_pylist(), which, header[i], f"{path}", first)
                for i in range(batch.num_columns)
            ]
            yield first, _text(header, list(zip(*cells)))
            first, sent = first + batch.num_rows, True
        if not sent:
            yield first, _text(header, [])
    except duckdb.Error as exc:
        raise ImportError_(f"{path}: not a {which} file of result rows ({str(exc).splitlines()[0][:120]})") from None
    finally:
        con.close()


def _one_value_types(path: Path, header: list[str], types: list[str]) -> None:
    for name, kind in zip(header, types, strict=True):
        if name in _ONE_VALUE and (kind.startswith(("STRUCT", "MAP", "UNION")) or kind.endswith("]") or kind == "BLOB"):
            raise ImportError_(
                f"{path}: column {name} is of the Parquet type {kind[:60]}: its cells hold one number or "
                "text each (as `campaign results --format parquet` writes them)"
            )


def _cells(values: list[Any], which: str, name: str, where: str, first: int) -> list[Any]:
    """Column `name`'s cells as CSV values; `first`: the CSV line of its first (`where`: the file)."""
    if which == PARQUET:
        return ["" if v is None else v for v in values]
    out: list[Any] = []
    for k, text in enumerate(values):
        value = None if text is None else json.loads(text)
        if name in _TEXT and isinstance(value, dict | list):
            raise ImportError_(
                f"{where} line {first + k}: column {name} is a JSON "
                f"{'object' if isinstance(value, dict) else 'array'}, not text: {text[:40]!r}"
            )
        out.append("" if value is None else text if isinstance(value, (dict, list)) else value)
    return out


def _text(header: list[str], rows: list[tuple[Any, ...]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()
