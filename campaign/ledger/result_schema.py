"""The one definition of a stored result row: the columns of every attempt's
Parquet file (campaign.ledger.files), in file order, with their Arrow type.

The Arrow schema is made from this list (`arrow_schema`); so are the columns
the read selects (`STORED`) and docs/results.md's table. A branch that adds an
optional result column adds one `Column(...)` line here (nullable), and files
written before it simply lack it: the read takes the union of the files'
columns (DuckDB `union_by_name`), the missing ones as NULL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 1  # of the Parquet files; recorded in each pointer (ledger: result_file.schema_version)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int", "float" or "text": the Arrow type int64 / float64 / string
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("attempt_id", "int", "the ledger's attempt that produced the row (NULL for imported rows)"),
    Column("campaign_id", "int", "the campaign an imported row was imported into (`import --campaign`)"),
    Column("source", "text", "\"job\" or the imported file"),
    Column("cluster", "text", "cluster name (the run's, never the file's)"),
    Column("partition", "text", "partition name (the run's)"),
    Column("kernel", "text", "kernel family"),
    Column("impl", "text", "implementation (c, fortran, torch, ...)"),
    Column("variant", "text", "kernel variant (naive, memopt, ...)"),
    Column("device", "text", "cpu or cuda"),
    Column("dtype", "text", "fp32, bf16, fp16"),
    Column("threads", "int", "OpenMP/torch threads"),
    Column("n", "int", "problem size (sequence length)"),
    Column("d", "int", "head dimension"),
    Column("repeat", "int", "timed repeat, from 0"),
    Column("time_s", "float", "seconds of this repeat"),
    Column("job_id", "text", "scheduler job ID that produced the row"),
    Column("gpu_model", "text", "GPU name on cuda rows"),
    Column("flops", "float", "floating-point operations, when the row gives them"),
    Column("bytes", "float", "bytes moved, when the row gives them"),
    Column("rel_err", "float", "relative error against the float64 reference (with --check)"),
    Column("params", "text", "the run's extra program arguments, e.g. a=32,h=2560"),
    Column("extra", "text", "every other column of the row, as one JSON object (params included)"),
)
STORED: tuple[str, ...] = tuple(c.name for c in COLUMNS)
# the measured columns (what `campaign results` and the analysis read of each row)
MEASURED: tuple[str, ...] = tuple(c for c in STORED if c not in ("attempt_id", "campaign_id", "source", "params",
                                                                 "extra"))


def arrow_schema() -> Any:
    """The Arrow schema of a result file (pyarrow imported here: `status` never needs it)."""
    import pyarrow as pa

    types = {"int": pa.int64(), "float": pa.float64(), "text": pa.string()}
    return pa.schema([pa.field(c.name, types[c.kind]) for c in COLUMNS],
                     metadata={"campaign.ledger.result_schema": str(SCHEMA_VERSION)})


def markdown_table() -> str:
    """docs/results.md's column table."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| {c.name} | {c.kind} | {c.meaning} |" for c in COLUMNS]
    return "\n".join(lines)
