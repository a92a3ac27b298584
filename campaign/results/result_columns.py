"""Typed rows of one result CSV, as the reader hands them on: Arrow columns
from the validator (campaign.results.columnar) up to the Parquet writer, or
Python columns where rows were built one by one."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from resultschema.columns import RULE_COLUMNS, SCALE_COLUMNS

_RULES, _EXTRA_NAMES = frozenset(RULE_COLUMNS), frozenset(SCALE_COLUMNS)  # (sets: looked up per file)


class ResultColumns:
    """Typed rows of one result CSV. Either an Arrow table (`arrow`: the
    file's columns in header order, the rule columns typed, the others, and
    ranks/nodes, as text) or Python columns: `columns`, the rule columns in
    header order; the other columns as `extras` (header order, None where
    the cell was blank) or, for rows built from dicts, `extra_rows` (each
    row's dict, or None). The Python columns of an Arrow table are made on
    first use (an import's rows, which its store takes as dicts)."""

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
