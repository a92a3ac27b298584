"""The one read of result files: their rows as one relation of the current
schema for DuckDB (`scan_sql`), the one place a file of an older schema is
mapped onto the current columns, and `read`, its rows as an Arrow table.

Why one mapping: a file is never rewritten, so files of schema 1 (the extra
object as JSON text), 2 (a MAP of text) and 3 (the shape and figure as typed
columns, campaign.ledger.result_schema) sit side by side in one campaign;
every reader (the report's scan and points, `campaign results`, `duck`'s
view) goes through `scan_sql`, so none of them knows where an older file kept
a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.duck_engine import cursor
from campaign.ledger.result_schema import COLUMNS, STORED
from resultschema.columns import FALSE_WORDS, TRUE_WORDS


def read(paths: Sequence[str], columns: Sequence[str], cluster: str | None = None) -> Any:
    """The rows of these files, in file order then row order, as an Arrow
    table of `columns` (those of the current schema: scan_sql maps a file of an
    older one onto them) plus `file_index` (the position of its file in
    `paths`); `cluster` is pushed down into the scan."""
    present = [c for c in columns if c in STORED]
    select = ", ".join([*(f'{EXTRA_SQL} AS "extra"' if c == "extra" else f'"{c}"' for c in present), "file_index"])
    where = " WHERE cluster = $cluster" if cluster else ""
    con = cursor()
    try:
        params: dict[str, Any] = {"files": list(paths)}
        if cluster:
            params["cluster"] = cluster
        return con.sql(f"SELECT {select} FROM {scan_sql()}{where}", params=params).to_arrow_table()
    finally:
        con.close()


_MAP_SQL = "MAP(VARCHAR, VARCHAR)"
_SQL_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "bool": "BOOLEAN", "object": "VARCHAR",
              "map": _MAP_SQL}


def extra_text(key: str, row: str = "") -> str:
    """A key of a row's extra object as text, whichever column of its file holds it (the MAP
    `extras` of schema 2 on, the JSON text `extra` of schema 1; text that is no JSON names no key)."""
    json = f'{row}"extra"'
    return f"coalesce({row}extras['{key}'], CASE WHEN json_valid({json}) THEN json_extract_string({json}, '$.{key}') END)"


def typed_sql(text: str, kind: str) -> str:
    """A text as a value of its column's kind: numbers finite or NULL (NaN and infinities are no
    values), a direction true for a true word (TRUE_WORDS) or a number not 0, as result_schema types a
    lifted cell."""
    if kind == "text":
        return text
    number = f"TRY_CAST({text} AS DOUBLE)"
    finite = f"CASE WHEN isfinite({number}) THEN {number} END"
    word = f"lower(trim({text}))"
    words = " ".join([*(f"WHEN {word} = '{w}' THEN true" for w in TRUE_WORDS),
                      *(f"WHEN {word} = '{w}' THEN false" for w in FALSE_WORDS)])
    return {"int": f"TRY_CAST(round({finite}) AS BIGINT)",
            "bool": f"(CASE {words} ELSE {finite} <> 0 END)"}.get(kind, finite)


def _lifted_sql(name: str, kind: str) -> str:
    """A file of schema 1 or 2 keeps a LIFTED column as text in the row's extra object: read from there
    where the column is NULL and the row has an extra object (a row of schema 3 has none left of it)."""
    old = typed_sql(extra_text(name), kind)
    return f'coalesce("{name}", CASE WHEN extras IS NOT NULL OR "extra" IS NOT NULL THEN {old} END) AS "{name}"'


def scan_sql(virtual: str = "file_index", current: bool = False) -> str:
    """The rows of the files `$files` as one relation of the current schema,
    for DuckDB, with the `virtual` columns of the scan: every stored column
    present even where no file has it (a file written before a column was
    added lacks it: the empty second part of the union), and the one place an
    older file is mapped onto the current columns: its LIFTED_COLUMNS out of
    the row's extra object (`current`: every file is known to be of the
    current schema, nothing to map). EXTRA_SQL reads a row's extra object from
    files of either schema."""
    empty = ", ".join(f'NULL::{_SQL_TYPES[c.kind]} AS "{c.name}"' for c in COLUMNS)
    union = (f"(SELECT *, {virtual} FROM read_parquet($files, union_by_name = true) "
             f"UNION ALL BY NAME SELECT {empty} WHERE false)")
    if current:
        return union
    mapped = ", ".join(_lifted_sql(c.name, c.kind) for c in COLUMNS if c.lifted)
    return f"(SELECT * REPLACE ({mapped}) FROM {union})"


# a row's extra object as JSON text, whichever column of a file holds it
EXTRA_SQL = "coalesce(CASE WHEN cardinality(extras) > 0 THEN to_json(extras)::VARCHAR END, \"extra\")"
