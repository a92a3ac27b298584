"""The stored result row: the columns of every attempt's Parquet file
(campaign.ledger.files), in file order, with their Arrow type, all derived
from the one definition, analysis.columns.RESULT_SCHEMA.

A branch that adds an optional result column adds one `Column(...)` line
there, and files written before it simply lack it: the read takes the union
of the files' columns (DuckDB `union_by_name`), the missing ones as NULL.
"""

from __future__ import annotations

from typing import Any

from analysis.columns import BY_NAME, RESULT_SCHEMA, STORED_COLUMNS, Column, doc_tables

SCHEMA_VERSION = 2  # of the Parquet files; recorded in each pointer (ledger: result_file.schema_version).
# 2: the extra objects of text as the MAP column `extras` (1: every one JSON text in `extra`)
COLUMNS: tuple[Column, ...] = tuple(c for c in RESULT_SCHEMA if c.where == "file")
STORED: tuple[str, ...] = STORED_COLUMNS
# the measured columns (what `campaign results` and the analysis read of each row)
MEASURED: tuple[str, ...] = tuple(c for c in STORED if BY_NAME[c].rule)
_ARROW = {"int": "int64", "float": "float64", "text": "string", "object": "string"}


def arrow_schema() -> Any:
    """The Arrow schema of a result file (pyarrow imported here: `status` never needs it)."""
    import pyarrow as pa

    kinds = {**{k: getattr(pa, v)() for k, v in _ARROW.items()}, "map": pa.map_(pa.string(), pa.string())}
    return pa.schema([pa.field(c.name, kinds[c.kind]) for c in COLUMNS],
                     metadata={"campaign.ledger.result_schema": str(SCHEMA_VERSION)})


def markdown_table() -> str:
    """docs/results.md's column table."""
    return doc_tables()["docs/results.md"]
