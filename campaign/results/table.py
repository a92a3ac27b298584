"""`campaign results`: every result row with its campaign and attempt, in one
fixed column set (README: "results columns"), typed, written by DuckDB.

Why fixed: scripts read the export by column name; a column set that changes
with the filter or with the kernels in the ledger breaks them. A program's
figure of merit is the long form `metric, value, unit, higher_is_better`
(one row per figure, as the program's rows hold it: docs/results.md), typed
columns that pandas, DuckDB and polars read without parsing JSON; columns
only some kernels write (l2_flush, backend, ff, ...) travel in `extra`, one
JSON object per row, with numbers as numbers.

Why DuckDB end to end: the rows are read from the result files and joined to
the ledger's columns of their attempts in SQL, and written by DuckDB (Parquet
to a file) or streamed a batch at a time (CSV, JSON, table), so memory stays
flat however many rows there are: no Python object per row. Every column is
cast to its type from analysis.columns, so a column empty in every row keeps
its type in every format.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from analysis.columns import BY_NAME, EXPORT_COLUMNS, RESULT_SCHEMA, SCALE_DEFAULT
from campaign.ledger import Ledger, files
from campaign.ledger import queries as q
from campaign.ledger.result_schema import arrow_schema
from campaign.plumbing.errors import BadInputError
from campaign.results import scan

# (name, type in JSON, meaning): analysis.columns' exported columns; the README table is made of them.
RESULT_COLUMNS: tuple[tuple[str, str, str], ...] = tuple((c.name, c.json, c.meaning) for c in RESULT_SCHEMA if c.json)
_SQL_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "object": "JSON", "bool": "BOOLEAN"}
# the extra object's keys that are columns of their own in the export (ranks, nodes, first_call_s, the figure)
_PROMOTED = tuple(c.name for c in RESULT_SCHEMA if c.json and c.where == "extra") + ("params",)
BATCH_ROWS = 65_536  # rows a streamed format holds at once


@dataclass
class Export:
    """A selection of rows as SQL over an open DuckDB connection: what every
    format writes. `sql` is a SELECT of `columns`, in order."""

    con: Any
    sql: str
    columns: list[str]

    def close(self) -> None:
        self.con.close()


def _extra(key: str) -> str:
    """A key of the row's extra object as text, whichever column of its file holds it."""
    return f"coalesce(r.extras['{key}'], json_extract_string(r.\"extra\", '$.{key}'))"


def _number(sql: str, kind: str) -> str:
    """A text or number as a finite number of its kind, else NULL (NaN and infinities are no values)."""
    as_double = f"TRY_CAST({sql} AS DOUBLE)"
    finite = f"CASE WHEN isfinite({as_double}) THEN {as_double} END"
    return f"CAST({finite} AS BIGINT)" if kind == "int" else finite


# Each value of the extra object typed as JSON: a text that is an integer or a finite number becomes that
# number, NaN and infinities null, any other text stays text; values stored as JSON numbers stay as they are.
_TYPED = ("CASE WHEN json_type(e.value) <> 'VARCHAR' THEN e.value "
          "WHEN regexp_full_match(trim(e.value->>'$'), '[+-]?[0-9]+') AND TRY_CAST(trim(e.value->>'$') AS BIGINT) "
          "IS NOT NULL THEN to_json(TRY_CAST(trim(e.value->>'$') AS BIGINT)) "
          "WHEN TRY_CAST(e.value->>'$' AS DOUBLE) IS NULL THEN e.value "
          "WHEN isfinite(TRY_CAST(e.value->>'$' AS DOUBLE)) THEN to_json(TRY_CAST(e.value->>'$' AS DOUBLE)) "
          "ELSE 'null'::JSON END")
# a row's extra object as a map of JSON values: schema 2 keeps objects of text as the map `extras`, others
# (and every row of schema 1) as JSON text in `extra`
_ENTRIES = ("CASE WHEN cardinality(r.extras) > 0 THEN "
            "map_entries(map_from_entries(list_transform(map_entries(r.extras), "
            "lambda e: {'key': e.key, 'value': to_json(e.value)}))) "
            "ELSE map_entries(TRY_CAST(TRY_CAST(r.\"extra\" AS JSON) AS MAP(VARCHAR, JSON))) END")
_LEFT = ", ".join(f"'{k}'" for k in _PROMOTED)
_EXTRA = (f"coalesce(to_json(map_from_entries(list_transform(list_filter({_ENTRIES}, "
          f"lambda e: e.key NOT IN ({_LEFT})), lambda e: {{'key': e.key, 'value': {_TYPED}}}))), '{{}}'::JSON)")


def _column_sql(name: str) -> str:
    """The SQL of one export column over a file row `r` and its ledger row `k` (scan.LEDGER)."""
    col = BY_NAME[name]
    if name == "extra":
        return _EXTRA
    if name == "params":
        return f"coalesce({_extra('params')}, r.params, '')"
    if name in ("ranks", "nodes"):  # scan.shape's rule: the row's, else its run's planned shape, else 1
        nodes, per_node = (f"k.{p}" for p in scan.PLANNED_SCALE)
        planned = nodes if name == "nodes" else f"{nodes} * {per_node}"
        return f"coalesce({_number(_extra(name), 'int')}, {planned}, {SCALE_DEFAULT})"
    if name == "higher_is_better":
        return f"TRY_CAST({_number(_extra(name), 'float')} AS BOOLEAN)"
    if col.where == "extra":
        return _number(_extra(name), col.kind) if col.kind in ("int", "float") else _extra(name)
    if name == "replicate":  # replicate 0 is every row of an unreplicated run; imported rows have none
        return "CASE WHEN k.attempt IS NOT NULL THEN coalesce(k.replicate, 0) END"
    if col.where == "ledger":
        return f"k.{name}"
    return _number(f"r.{name}", col.kind) if col.kind == "float" else f"r.{name}"


def results(led: Ledger, campaign: str | None = None) -> Export:
    """Every result row of the campaign (all when None), job and imported, in
    the order they were stored, as EXPORT_COLUMNS. An unknown campaign is a
    BadInputError; a changed or missing result file a LedgerError (files.verified)."""
    import duckdb
    import pyarrow as pa

    with led.session() as s:
        if campaign:
            q.require_campaign(s, campaign)
        paths, ids, values = scan.pointers(s, campaign, False, None, led.results_root)
    con = duckdb.connect()
    # one ledger row per key (an attempt, or an imported file's place: scan.row_keys), the first pointer's
    first = list({key: i for i, key in reversed(list(enumerate(ids)))}.values())
    ledger = pa.table({"key": pa.array([ids[i] for i in first], pa.int64()),
                       **{name: pa.array([values[name][i] for i in first]) for name in scan.LEDGER}})
    con.register("_ledger", ledger)
    # the files' rows, with the typed columns of a result file even where no file has them (older files)
    empty = arrow_schema().empty_table().append_column("file_index", pa.array([], pa.int64()))
    con.register("_typed", empty)
    source = "SELECT * FROM _typed"
    if paths:
        con.execute("SET VARIABLE files = ?", [files.verified(paths)])
        source = ("SELECT *, file_index FROM read_parquet(getvariable('files'), "
                  f"union_by_name = true, file_row_number = true) UNION ALL BY NAME {source}")
    select = ", ".join(f'CAST({_column_sql(c)} AS {_SQL_TYPES[BY_NAME[c].kind]}) AS "{c}"' for c in EXPORT_COLUMNS)
    sql = (f"SELECT {select} FROM ({source}) r JOIN _ledger k "
           "ON k.key = coalesce(r.attempt_id, -1 - r.file_index) ORDER BY r.file_index, r.file_row_number")
    return Export(con, sql, list(EXPORT_COLUMNS))


def frame_export(frame: Any) -> Export:
    """A DataFrame's rows (the hardware counters' export) as an Export: the same writers."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("_frame", pa.Table.from_pandas(frame, preserve_index=False))
    columns = [str(c) for c in frame.columns]
    return Export(con, "SELECT * FROM _frame", columns)


def _text(exp: Export) -> str:
    """The export with JSON as its text and doubles finite or NULL: what CSV, Parquet and tables hold."""
    kinds = _kinds(exp)
    parts = []
    for c in exp.columns:
        if kinds[c] == "JSON":
            parts.append(f'CAST("{c}" AS VARCHAR) AS "{c}"')
        elif kinds[c] in ("DOUBLE", "FLOAT"):
            parts.append(f'CASE WHEN isfinite("{c}") THEN "{c}" END AS "{c}"')
        else:
            parts.append(f'"{c}"')
    return f"SELECT {', '.join(parts)} FROM ({exp.sql})"


def write_parquet(exp: Export, path: Path | None) -> int:
    """One Parquet file of the export (written whole under a temporary name by
    DuckDB, then renamed); `extra` as JSON text. Returns the row count."""
    if path is None:
        raise BadInputError("results --format parquet writes a file: name it with --out FILE.parquet")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        exp.con.execute("SET VARIABLE out = ?", [str(tmp)])
        done = exp.con.execute(f"COPY ({_text(exp)}) TO (getvariable('out')) (FORMAT parquet)").fetchone()
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInputError(f"results --out {path}: {exc.strerror or exc}") from None
    except Exception as exc:  # DuckDB's IOException (an unwritable folder): one line, no traceback
        tmp.unlink(missing_ok=True)
        if type(exc).__name__ != "IOException":
            raise
        raise BadInputError(f"results --out {path}: {str(exc).splitlines()[0]}") from None
    return int(done[0]) if done else 0


def write_csv(exp: Export, out: IO[str]) -> None:
    """RFC 4180 with a plain header, a batch of rows at a time; an empty cell is NULL, text is quoted."""
    import csv

    import pyarrow as pa
    import pyarrow.csv as pacsv

    csv.writer(out, lineterminator="\n").writerow(exp.columns)
    for batch in _batches(exp.con, _text(exp)):
        sink = pa.BufferOutputStream()
        pacsv.write_csv(pa.Table.from_batches([batch]), sink,
                        pacsv.WriteOptions(include_header=False, quoting_style="needed"))
        out.write(sink.getvalue().to_pybytes().decode())


def write_json(exp: Export, out: IO[str]) -> None:
    """One JSON array of objects (numbers as numbers, `extra` an object), a batch of rows at a time."""
    obj = ", ".join(f"'{c}': \"{c}\"" for c in exp.columns)
    rows = f"SELECT CAST(to_json({{{obj}}}) AS VARCHAR) AS row FROM ({_text_json(exp)})"
    out.write("[")
    sep = ""
    for batch in _batches(exp.con, rows):
        texts = batch.column(0).to_pylist()
        out.write(sep + ",\n".join(texts))
        sep = ",\n" if texts else sep
    out.write("]\n")


def _text_json(exp: Export) -> str:
    """The export with doubles finite or NULL (JSON has no NaN); JSON columns kept as JSON."""
    kinds = _kinds(exp)
    parts = [f'CASE WHEN isfinite("{c}") THEN "{c}" END AS "{c}"' if kinds[c] in ("DOUBLE", "FLOAT") else f'"{c}"'
             for c in exp.columns]
    return f"SELECT {', '.join(parts)} FROM ({exp.sql})"


def _kinds(exp: Export) -> dict[str, str]:
    return {str(row[0]): str(row[1]) for row in exp.con.sql(f"DESCRIBE {exp.sql}").fetchall()}


def rows(exp: Export) -> Iterator[list[list[Any]]]:
    """The rows as lists of values, a batch at a time (the table format)."""
    for batch in _batches(exp.con, _text(exp)):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        yield [list(r) for r in zip(*columns)]


def _batches(con: Any, sql: str) -> Iterator[Any]:
    reader = con.sql(sql).to_arrow_reader(BATCH_ROWS)
    yield from reader


def emit(exp: Export, fmt: str, out: Path | None) -> None:
    """The export in `fmt` (csv, json; parquet into the file `out`), to stdout but for parquet."""
    try:
        if fmt == "parquet":
            count = write_parquet(exp, out)
            print(f"{count} row(s) written to {out}", file=sys.stderr)
        elif fmt == "json":
            write_json(exp, sys.stdout)
        else:
            write_csv(exp, sys.stdout)
    finally:
        exp.close()
