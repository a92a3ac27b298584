"""Result rows inserted in bulk, straight from columns: on SQLite one
statement per block (campaign.results.block_insert: the values shared by a
job's rows bound once), elsewhere SQLAlchemy Core's executemany.

SQLAlchemy's ORM bulk insert builds and checks a parameter set per row (13 s
per 100,000 rows under profile, most of a sync's ingest time); the driver
needs only the tuples, and rows read as columns (campaign.results.columnar)
never need to become dicts. Values go through each column type's own bind
processor, and the JSON `extra` text is json.dumps' own (its string encoder,
its separators), so the stored bytes are the same as the ORM path's. Other
databases' drivers batch the Core executemany themselves. On SQLite each
job's rows also get their attempt's packed numbers (campaign.ledger.blocks),
from the same bound values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]  # json.dumps' own string encoder
from typing import Any

from sqlalchemy import Float, insert
from sqlalchemy.orm import Session

from campaign.ledger import RESULT_TABLE
from campaign.ledger import blocks as packed
from campaign.results.block_insert import BlockInsert, variable_limit
from campaign.results.row_texts import rows_joined

TABLE = RESULT_TABLE  # the result rows' Core table (campaign.ledger.models)
COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE.columns if c.name != "id")
FLOAT_COLUMNS = frozenset(c.name for c in TABLE.columns if isinstance(c.type, Float))
_FLOATS = {float, type(None)}
_SHARED = tuple(COLUMNS.index(c) for c in ("attempt_id", *packed.ROW_SHARED))  # one value in all rows: a block


@dataclass
class LedgerColumns:
    """Result rows for the ledger as columns: `values` by column name (a
    missing column is NULL), and the `extra` object of each row either as
    columns (`extras`, None where a row lacks the key; every row's object in
    that key order) or as each row's dict (`extra_rows`). `same` names
    columns whose list holds one object in every row (so the INSERT binds it
    once without comparing the rows)."""

    length: int
    values: dict[str, list[Any]]
    extras: dict[str, list[Any]] = field(default_factory=dict)
    extra_rows: list[dict[str, Any] | None] | None = None
    same: frozenset[str] = frozenset()

    def extra_dicts(self) -> list[dict[str, Any] | None]:
        if self.extra_rows is not None:
            return self.extra_rows
        out: list[dict[str, Any] | None] = []
        for i in range(self.length):
            row = {k: v[i] for k, v in self.extras.items() if v[i] is not None}
            out.append(row or None)
        return out

    def dicts(self) -> list[dict[str, Any]]:
        names = list(self.values)
        rows = [dict(zip(names, cells)) for cells in zip(*self.values.values())]
        for row, extra in zip(rows, self.extra_dicts()):
            row["extra"] = extra
        return rows


def insert_results(s: Session, blocks: Sequence[LedgerColumns]) -> None:
    """INSERT the rows of these blocks, in order."""
    blocks = [b for b in blocks if b.length]
    if not blocks:
        return
    conn = s.connection()
    dialect = conn.dialect
    if dialect.name != "sqlite":
        conn.execute(insert(TABLE), [row for b in blocks for row in b.dicts()])
        return
    procs = {name: TABLE.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in COLUMNS}
    quote = dialect.identifier_preparer.quote
    driver: Any = conn.connection.driver_connection  # the session's own sqlite3 connection, in its transaction
    writer = BlockInsert(f"INSERT INTO {quote(TABLE.name)} ({', '.join(quote(c) for c in COLUMNS)})",
                         len(COLUMNS), variable_limit(driver))
    cursor = driver.cursor()
    try:
        for block in blocks:
            bound = _bound_columns(block, procs)
            known = frozenset(i for i, name in enumerate(COLUMNS) if name in block.same)
            for sql, params in writer.statements(bound, block.length, known):
                cursor.execute(sql, params)
            shared = all(i in writer.constant for i in _SHARED)  # (known once the statements were made)
            packed.record(cursor, dict(zip(COLUMNS, bound)), _params(block), block.length, shared)
    finally:
        cursor.close()


def _params(block: LedgerColumns) -> list[Any]:
    """Each row's extra["params"] (None where it has none)."""
    if block.extra_rows is not None:
        return [e.get("params") if e else None for e in block.extra_rows]
    return block.extras.get("params") or [None] * block.length


def _bound_columns(block: LedgerColumns, procs: Mapping[str, Callable[[Any], Any] | None]) -> list[list[Any]]:
    """The block's values in COLUMNS order, as each column's bind processor makes them."""
    cols = []
    for name in COLUMNS:
        proc = procs[name]
        if name == "extra" and proc is not None:
            cols.append(_extra_texts(block, proc))
            continue
        values = block.values.get(name) or [None] * block.length
        if proc is not None and not (name in FLOAT_COLUMNS and set(map(type, values)) <= _FLOATS):
            values = list(map(proc, values))  # (floats and None pass a float column's processor unchanged)
        cols.append(values)
    return cols


def _extra_texts(block: LedgerColumns, proc: Callable[[Any], Any]) -> list[Any]:
    """The `extra` column as its bind processor writes it: json.dumps of the
    row's dict (built here from the columns: campaign.ledger.db makes every
    engine with SQLAlchemy's default JSON serializer, json.dumps)."""
    null = proc(None)
    if block.extra_rows is not None:
        return [proc(e) if e else null for e in block.extra_dicts()]
    if not block.extras:
        return [null] * block.length
    parts: list[str | Sequence[str]] = []  # json.dumps' text of a row's dict: {"key": "value", ...}
    for i, (key, values) in enumerate(block.extras.items()):
        one = key in block.same  # one object in every row: its text is written once
        if (type(values[0]) is not str if one else None in values or set(map(type, values)) != {str}):
            return [proc(e) if e else null for e in block.extra_dicts()]  # a row without the key, or not text
        parts.append(("{" if i == 0 else ", ") + encode_basestring_ascii(key) + ": ")
        parts.append(encode_basestring_ascii(values[0]) if one else list(map(encode_basestring_ascii, values)))
    parts.append("}")
    texts = rows_joined(parts, block.length).split("\n")
    texts.pop()  # after the last row's newline
    return texts
