"""The fast path of reading a result CSV: the stdlib csv module and one pass
per column, instead of pandas and one Python call per cell.

Sync ingests the CSVs of every finished job; at 100,000 jobs the pandas path
(a DataFrame per file, `to_dict`, a conversion call per cell) read ~4,000
rows/s, far from the 100,000 rows/s the scale goal needs. This path handles
the regular file a kernel writes (UTF-8, a header of distinct names, every
line with as many fields as the header) and only when every cell is valid;
for anything else it answers None and the caller uses the strict pandas
reader (campaign.results.reader), which stays the one that names the first
bad line. So the rows returned here are exactly the rows that reader returns.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.columns import FLOAT_RULES, INT_RULES, KERNEL_COLUMNS, OPTIONAL_COLUMNS, REQUIRED_COLUMNS

KNOWN = frozenset(REQUIRED_COLUMNS) | frozenset(OPTIONAL_COLUMNS) | frozenset(KERNEL_COLUMNS)


class _Invalid(Exception):
    """A cell the strict reader would reject (it then names it)."""


def _int_cell(value: str) -> int | None:
    if not value:
        return None
    f = float(value)
    if not f.is_integer():
        raise _Invalid
    return int(f)


def _float_cell(value: str) -> float | None:
    return float(value) if value else None


def _text_cell(value: str) -> str | None:
    return value or None


def _converter(col: str) -> Callable[[str], Any]:
    return _int_cell if col in INT_RULES else _float_cell if col in FLOAT_RULES else _text_cell


def _convert(col: str, cells: list[str]) -> list[Any]:
    """One column's cells (stripped) as typed values. A column without blanks
    (the usual case) is converted by C-level map(); else cell by cell."""
    if "" in cells:
        convert = _converter(col)
        return [convert(v) for v in cells]
    if col in FLOAT_RULES:
        return list(map(float, cells))
    if col in INT_RULES:
        floats = list(map(float, cells))
        if not all(map(float.is_integer, floats)):
            raise _Invalid
        return list(map(int, floats))
    return cells


def _column_ok(col: str, values: list[Any], required: bool) -> bool:
    """The strict reader's per-row rules (reader._check_row), for one column."""
    if required and any(v is None for v in values):
        return False
    rule = INT_RULES.get(col)
    if rule is not None:
        return all(v is None or v >= rule.minimum for v in values)
    frule = FLOAT_RULES.get(col)
    if frule is None:
        return True
    for v in values:
        if v is None or (frule.allow_nan and math.isnan(v)):
            continue
        if not math.isfinite(v) or (v <= 0 if frule.positive else v < 0):
            return False
    return True


def read_rows(path: Path, required: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """Typed row dicts as reader.rows_from_frame makes them, or None when this
    file needs the strict reader (irregular, or a cell it would reject)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            lines = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if len(lines) < 2:
        return None
    header = lines[0]
    width = len(header)
    if len(set(header)) != width or any(not name or name.startswith("\ufeff") for name in header):
        return None
    body = lines[1:]
    if any(len(line) != width for line in body):
        return None
    if any(c not in header for c in required):
        return None
    columns: dict[str, list[Any]] = {}
    try:
        for i, name in enumerate(header):
            if name in KNOWN:
                columns[name] = _convert(name, [line[i].strip() for line in body])
    except (ValueError, _Invalid):
        return None
    if not all(_column_ok(c, v, c in required) for c, v in columns.items()):
        return None
    names = list(columns)
    extras = [(i, name) for i, name in enumerate(header) if name not in KNOWN]
    rows: list[dict[str, Any]] = [dict(zip(names, cells, strict=True)) for cells in zip(*columns.values(), strict=True)]
    for row, line in zip(rows, body, strict=True):
        extra = {name: line[i] for i, name in extras if line[i] != ""}
        row["extra"] = extra or None
    return rows
