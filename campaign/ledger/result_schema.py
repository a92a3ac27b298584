"""The stored result row: the columns of every attempt's Parquet file
(campaign.ledger.files), in file order, with their Arrow type, all derived
from the one definition, resultschema.columns.RESULT_SCHEMA; and a batch's rows
in that schema (`LedgerColumns`: Arrow columns from the CSV reader to the
Parquet writer, the extra objects of text as one MAP column).

A branch that adds an optional result column adds one `Column(...)` line
there, and files written before it simply lack it: the read takes the union
of the files' columns (DuckDB `union_by_name`), the missing ones as NULL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from resultschema.columns import (
    BY_NAME,
    FALSE_WORDS,
    LIFTED_COLUMNS,
    RESULT_SCHEMA,
    SCALE_COLUMNS,
    SCALE_DEFAULT,
    STORED_COLUMNS,
    TRUE_WORDS,
    Column,
)

SCHEMA_VERSION = 3  # of the Parquet files; recorded in each pointer (ledger: result_file.schema_version).
# 3: ranks, nodes, gpus and the figure (metric, value, unit, higher_is_better) typed columns of their own
# (LIFTED_COLUMNS), ranks/nodes/gpus filled from the run's spec (2 and 1: text in the extra object, read
# through campaign.ledger.file_scan.scan_sql); 2: the extra objects of text as the MAP column `extras` (1: every
# one JSON text in `extra`)
# a file's footer says what its rows' extra objects hold (the MAP's keys; any JSON text), so a reader
# that looks a key up in each row (campaign results) knows without a pass over the file
EXTRA_KEYS, EXTRA_JSON = "campaign.ledger.extra_keys", "campaign.ledger.extra_json"
COLUMNS: tuple[Column, ...] = tuple(c for c in RESULT_SCHEMA if c.where == "file")
STORED: tuple[str, ...] = STORED_COLUMNS
# the measured columns (what `campaign results` and the analysis read of each row)
MEASURED: tuple[str, ...] = tuple(c for c in STORED if BY_NAME[c].rule)
_ARROW = {"int": "int64", "float": "float64", "text": "string", "object": "string", "bool": "bool_"}


def arrow_schema() -> Any:
    """The Arrow schema of a result file (pyarrow imported here: `status` never needs it)."""
    import pyarrow as pa

    kinds = {**{k: getattr(pa, v)() for k, v in _ARROW.items()}, "map": pa.map_(pa.string(), pa.string())}
    return pa.schema(
        [pa.field(c.name, kinds[c.kind]) for c in COLUMNS],
        metadata={"campaign.ledger.result_schema": str(SCHEMA_VERSION)},
    )


@dataclass
class LedgerColumns:
    """One attempt's (or one import's) rows as columns: `values`, the stored
    columns by name (lists, or an Arrow table: the checked columns of a
    job's CSV stay Arrow; a missing column is NULL), `consts` the stored
    columns of one value in every row (an attempt's id, job ID, cluster;
    `params`, also a key of the extra object), and the `extra` object of
    each row either as text columns (`extras`, lists or an Arrow table, None
    where a row lacks the key) or as each row's dict (`extra_rows`)."""

    length: int
    values: Any
    extras: Any = field(default_factory=dict)
    extra_rows: list[dict[str, Any] | None] | None = None
    consts: dict[str, Any] = field(default_factory=dict)
    whole: bool = False  # made by `joined` (constants merged, NaN made missing): `table` takes it as it is

    def extra_dicts(self) -> list[dict[str, Any] | None]:
        if self.extra_rows is not None:
            return self.extra_rows
        extras = {k: list(v) for k, v in _columns(self.extras).items()}
        if "params" in self.consts:
            extras["params"] = [self.consts["params"]] * self.length
        out: list[dict[str, Any] | None] = []
        for i in range(self.length):
            row = {k: v[i] for k, v in extras.items() if v[i] is not None}
            out.append(row or None)
        return out

    @staticmethod
    def joined(blocks: Sequence[LedgerColumns]) -> LedgerColumns:
        """Several attempts' rows as one Arrow table of values and one of
        extras (one ingest batch's file): the blocks' tables concatenated,
        each constant one array of the blocks' values taken by row."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        types = {f.name: f.type for f in arrow_schema()}
        length = sum(b.length for b in blocks)
        block_of_row = pa.array(np.repeat(np.arange(len(blocks), dtype=np.int64), [b.length for b in blocks]))
        consts = {
            k: pa.array([b.consts.get(k) for b in blocks], types[k]).take(block_of_row)
            for k in dict.fromkeys(k for b in blocks for k in b.consts)
        }
        # one chunk per column: a batch joins ~1,000 attempts' slices, and every step after
        # this (and the Parquet writer) pays per chunk (measured: 37 -> 31 ms a 100,000-row write)
        values = _concat([_table(b.values, b.length, types) for b in blocks]).combine_chunks()
        for name in values.column_names:  # NaN is a missing value in a result file, as pandas reads it
            if pa.types.is_floating(values[name].type):
                column = values[name]
                values = values.set_column(
                    values.column_names.index(name),
                    name,
                    pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column),
                )
        texts = [b.extras if b.extra_rows is None else _by_key(b.extra_rows) for b in blocks]
        textual = all(_textual(t) for t in texts)
        rows = None if textual else [e for b in blocks for e in b.extra_dicts()]
        extras = _concat([_table(t, b.length, {}) for t, b in zip(texts, blocks)]).combine_chunks() if textual else None
        values, extras, rows = _lift(values, extras, rows, types)
        for name, column in consts.items():
            if name == "params":
                continue
            have = name in values.column_names
            merged = pc.coalesce(values[name], column) if have else column
            values = (
                values.set_column(values.column_names.index(name), name, merged)
                if have
                else values.append_column(name, merged)
            )
        for name in SCALE_COLUMNS:  # ranks, nodes of a row that does not say, of no run that does: 1
            have = name in values.column_names
            merged = (
                pc.coalesce(values[name], pa.scalar(SCALE_DEFAULT, pa.int64()))
                if have
                else pa.array(np.full(length, SCALE_DEFAULT, dtype=np.int64))
            )
            values = (
                values.set_column(values.column_names.index(name), name, merged)
                if have
                else values.append_column(name, merged)
            )
        if rows is not None:
            return LedgerColumns(length, values, extra_rows=rows, whole=True)
        if "params" in consts:
            own = extras["params"] if "params" in extras.column_names else None
            merged = consts["params"] if own is None else pc.coalesce(own, consts["params"])
            extras = (
                extras.drop_columns(["params"]).append_column("params", merged)
                if own is not None
                else extras.append_column("params", merged)
            )
        return LedgerColumns(length, values, extras, whole=True)

    def table(self) -> Any:
        """The rows as an Arrow table of the stored schema."""
        import pyarrow as pa

        whole = self if self.whole else LedgerColumns.joined([self])
        n = whole.length
        cols = {k: whole.values[k] for k in whole.values.column_names}
        if whole.extra_rows is not None:  # each row's object as JSON text (json.dumps: numbers keep their type)
            extras = whole.extra_rows
            cols["extra"] = pa.array([json.dumps(e) if e else None for e in extras], pa.string())
            cols["params"] = pa.array(
                [None if e is None or e.get("params") is None else str(e["params"]) for e in extras], pa.string()
            )
        else:
            cols["extras"] = _text_maps(whole.extras)
            if "params" in whole.extras.column_names:
                cols["params"] = whole.extras["params"]
        schema = arrow_schema()
        keys = [] if whole.extra_rows is not None else list(whole.extras.column_names)
        has_json = whole.extra_rows is not None and any(whole.extra_rows)
        footer = {
            **schema.metadata,
            EXTRA_KEYS.encode(): json.dumps(keys).encode(),
            EXTRA_JSON.encode(): b"1" if has_json else b"0",
        }
        return pa.table([cols.get(f.name, pa.nulls(n, f.type)) for f in schema], schema=schema.with_metadata(footer))


_ROWS = "__rows"  # the column of a table of none (it keeps the row count)


def _lift(
    values: Any, extras: Any, rows: list[dict[str, Any] | None] | None, types: dict[str, Any]
) -> tuple[Any, Any, list[dict[str, Any] | None] | None]:
    """The LIFTED_COLUMNS out of the rows' extra objects (a table of text, or each row's dict) into
    typed columns of `values` (a value the row's own column has wins); a cell that is no value of
    its type (text where a number goes, NaN) is NULL, as the export read it out of the extra object."""
    import pyarrow.compute as pc

    for name in LIFTED_COLUMNS:
        if rows is not None:
            if not any(row and name in row for row in rows):
                continue
            cells = [None if not row else row.get(name) for row in rows]
            rows = [({k: v for k, v in row.items() if k != name} or None) if row else row for row in rows]
            lifted = _typed([None if c is None else _text(c) for c in cells], BY_NAME[name].kind, types[name])
        elif extras is not None and name in extras.column_names:
            lifted = _typed(extras[name].combine_chunks(), BY_NAME[name].kind, types[name])
            extras = extras.drop_columns([name])
        else:
            continue
        if name in values.column_names:
            at = values.column_names.index(name)
            values = values.set_column(at, name, pc.coalesce(values[name].cast(types[name]), lifted))
        else:
            values = values.append_column(name, lifted)
    return values, extras, rows


def _text(value: Any) -> str:
    """A Python value of an extra object as the CSV cell it stands for (a bool as 1/0, as campaign.job.fom writes)."""
    return str(int(value)) if isinstance(value, bool) else str(value)


def _typed(cells: Any, kind: str, arrow_type: Any) -> Any:
    """Text cells as an Arrow array of `kind`: text as it is; numbers finite or NULL; a bool the
    number's being non-zero (1/0 as campaign.job.fom writes a direction)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = cells if isinstance(cells, pa.Array) else pa.array(cells, pa.string())
    text = text.cast(pa.string())
    if kind == "text":
        return text
    try:
        number = pc.cast(text, pa.float64())
    except pa.ArrowInvalid:  # a cell of other text (or spaces): one at a time
        number = pa.array([_float(c) for c in text.to_pylist()], pa.float64())
    finite = pc.if_else(pc.is_finite(number), number, pa.scalar(None, pa.float64()))
    if kind == "bool":  # a word as CSV and JSON writers spell it (`results --format csv`: True), else a number
        word = pc.utf8_lower(pc.utf8_trim_whitespace(text))
        said = pc.if_else(
            pc.is_in(word, value_set=pa.array(TRUE_WORDS)),
            pa.scalar(True),
            pc.if_else(pc.is_in(word, value_set=pa.array(FALSE_WORDS)), pa.scalar(False), pa.scalar(None, pa.bool_())),
        )
        return pc.coalesce(said, pc.not_equal(finite, 0.0))
    if kind == "int":
        whole = pc.round(finite)
        fits = pc.and_(pc.greater_equal(whole, -(2.0**63)), pc.less(whole, 2.0**63))
        return pc.if_else(fits, whole, pa.scalar(None, pa.float64())).cast(arrow_type)
    return finite


def _float(text: str | None) -> float | None:
    try:
        return None if text is None else float(text.strip())
    except ValueError:
        return None


def _columns(table: Any) -> dict[str, Any]:
    """A table's columns as lists (dict of lists or an Arrow table)."""
    if isinstance(table, dict):
        return table
    return {k: table[k].to_pylist() for k in table.column_names if k != _ROWS}


def _table(columns: Any, length: int, types: dict[str, Any]) -> Any:
    """Columns (an Arrow table, or lists by name, typed by `types`, else text) as an Arrow table;
    one of no column holds its rows in `_ROWS` (Arrow concatenates tables of no column as no row)."""
    import pyarrow as pa

    if not isinstance(columns, dict):
        return columns if columns.num_columns else pa.table({_ROWS: pa.nulls(length)})
    out = {k: pa.array(v, types.get(k, pa.string()), from_pandas=True) for k, v in columns.items()}
    return pa.table(out) if out else pa.table({_ROWS: pa.nulls(length)})


def _concat(tables: list[Any]) -> Any:
    import pyarrow as pa

    if len(tables) == 1:
        whole = tables[0]
    else:
        try:  # most batches: the attempts' CSVs share one header (5x cheaper than unifying 1,000 schemas)
            whole = pa.concat_tables(tables)
        except pa.ArrowInvalid:
            whole = pa.concat_tables(tables, promote_options="permissive")
    return whole.drop_columns([_ROWS]) if _ROWS in whole.column_names else whole


def _by_key(rows: list[dict[str, Any] | None]) -> dict[str, list[Any]]:
    """Rows' extra dicts as columns (None where a row lacks the key)."""
    names = dict.fromkeys(k for row in rows if row for k in row)
    return {k: [None if row is None else row.get(k) for row in rows] for k in names}


def _textual(extras: Any) -> bool:
    """Every extra column text (a list of numbers keeps its JSON type through json.dumps)."""
    import pyarrow as pa

    try:
        kinds = extras.schema.types if not isinstance(extras, dict) else [pa.array(v).type for v in extras.values()]
    except (pa.ArrowException, OverflowError, TypeError, ValueError):  # (an int past int64, a nested object)
        return False
    return all(kind in (pa.string(), pa.null()) for kind in kinds)


def _text_maps(extras: Any) -> Any:
    """Each row's extra object of text as a MAP of its non-null keys (in
    column order; NULL for a row of none): the `extras` column, built a
    column at a time."""
    import numpy as np
    import pyarrow as pa

    rows = extras.num_rows
    kind = pa.map_(pa.string(), pa.string())
    if not extras.num_columns:
        return pa.nulls(rows, kind)
    arrays = [extras[k].combine_chunks().cast(pa.string()) for k in extras.column_names]
    present = np.stack([a.is_valid().to_numpy(zero_copy_only=False) for a in arrays], axis=1)
    row, col = np.nonzero(present)  # row by row, in column order
    counts = present.sum(axis=1)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32), mask=np.append(counts == 0, False))
    keys = pa.array(extras.column_names, pa.string()).take(pa.array(col))
    items = pa.concat_arrays(arrays).take(pa.array(col.astype(np.int64) * rows + row))
    return pa.MapArray.from_arrays(offsets, keys, items, type=kind)
