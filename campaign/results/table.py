"""`campaign results`: every result row with its campaign and attempt, in one
fixed column set (README: "results columns"), typed, written by DuckDB, then a
typed column per grid parameter of the rows (campaign.results.grid).

Why fixed: scripts read the export by column name; a column set that changes
with the filter or with the kernels in the ledger breaks them (the grid
columns follow the runs' own grids: a script that sweeps `block` reads
`block`). A program's
figure of merit is the long form `metric, value, unit, higher_is_better`
(one row per figure, as the program's rows hold it: docs/results.md), typed
columns that pandas, DuckDB and polars read without parsing JSON; columns
only some kernels write (l2_flush, backend, ff, ...) travel in `extra`, one
JSON object per row, with numbers as numbers.

Why DuckDB and Arrow end to end: the rows are read from the result files by
DuckDB, given the ledger's columns of their attempts in Arrow a batch at a time
(campaign.results.attach), and written by DuckDB (Parquet to a file) or
streamed a batch at a time (CSV, JSON, table), so memory stays flat however
many rows there are: no Python object per row. Every column is
cast to its type from resultschema.columns, so a column empty in every row keeps
its type in every format.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from analysis.whole_file import fresh_temporary
from campaign.ledger import Ledger, file_scan, files
from campaign.ledger import queries as q
from campaign.ledger.result_schema import EXTRA_JSON, EXTRA_KEYS, SCHEMA_VERSION, arrow_schema
from campaign.plumbing import storage
from campaign.plumbing.errors import BadInputError, CampaignError
from campaign.results import scan
from campaign.results.attach import KEY, Attach
from campaign.results.carried import CARRIED_FILE_COLUMNS
from campaign.results.grid import grid
from resultschema.columns import BY_NAME, EXPORT_COLUMNS, RESULT_SCHEMA

# (name, type in JSON, meaning): resultschema.columns' exported columns; the README table is made of them.
RESULT_COLUMNS: tuple[tuple[str, str, str], ...] = tuple((c.name, c.json, c.meaning) for c in RESULT_SCHEMA if c.json)
_SQL_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "object": "JSON", "bool": "BOOLEAN"}
# the extra object's keys that are columns of their own in the export (first_call_s; in a file of an older
# schema ranks, nodes and the figure too)
_PROMOTED = tuple(c.name for c in RESULT_SCHEMA if (c.json and c.where == "extra") or c.lifted) + ("params",)
BATCH_ROWS = 65_536  # rows a streamed format holds at once
# DuckDB's memory for the export (past it, DuckDB spills to a temporary folder)
MEMORY_LIMIT = "1GB"


@dataclass
class Export:
    """A selection of rows as SQL over an open DuckDB connection: what every
    format writes, once. `sql` is a SELECT of `columns`, in order, each of
    the DuckDB type `types` names; `source`, another connection the rows are
    read from, if any."""

    con: Any
    sql: str
    columns: list[str]
    types: dict[str, str]
    source: Any = None

    def close(self) -> None:
        self.con.close()
        if self.source is not None:
            self.source.close()


@dataclass(frozen=True)
class _Keys:
    """What one file's extra objects hold: whether any is JSON text (`extra`), and the keys of its maps
    (`extras`). A key no row of the file has is NULL without a look per row; a file whose maps hold only
    keys that are columns of their own (the common case) has `{}` for every row's extra object."""

    json: bool = True
    keys: frozenset[str] | None = None  # None: not known (every key looked up)
    current: bool = False  # a file of the current schema: its `params` column is the row's params

    def has(self, key: str) -> bool:
        return self.keys is None or key in self.keys


def _extra(key: str, found: _Keys) -> str:
    """A key of the row's extra object as text, whichever column of its file holds it."""
    in_map = f"r.extras['{key}']" if found.has(key) else "NULL"
    if not found.json:
        return in_map
    return f'CASE WHEN r."extra" IS NULL THEN {in_map} ELSE json_extract_string(r."extra", \'$.{key}\') END'


def _number(sql: str, kind: str) -> str:
    """A text or number as a finite number of its kind, else NULL (NaN and infinities are no values)."""
    as_double = f"TRY_CAST({sql} AS DOUBLE)"
    finite = f"CASE WHEN isfinite({as_double}) THEN {as_double} END"
    return f"CAST({finite} AS BIGINT)" if kind == "int" else finite


def _typed(text: str) -> str:
    """A text value of the extra object as JSON: an integer or a finite number becomes that number, NaN
    and infinities null, any other text stays text (what the kernel CSV's cells mean: docs/contracts.md)."""
    number = f"TRY_CAST({text} AS DOUBLE)"
    integer = f"TRY_CAST(trim({text}) AS BIGINT)"
    return (
        f"CASE WHEN regexp_full_match(trim({text}), '[+-]?[0-9]+') AND {integer} IS NOT NULL "
        f"THEN to_json({integer}) WHEN {number} IS NULL THEN to_json({text}) "
        f"WHEN isfinite({number}) THEN to_json({number}) ELSE 'null'::JSON END"
    )


# A row's extra object without the keys that are columns of their own, values typed. Schema 2 keeps
# objects of text as the map `extras` (a map of promoted keys only, the common case, is `{}` at once);
# other objects (and every row of schema 1) are JSON text in `extra`, whose numbers stay as they are.
_LEFT = ", ".join(f"'{k}'" for k in _PROMOTED)
_JSON_TEXT = "(e.value->>'$')"
_FROM_MAP = (
    f"to_json(map_from_entries(list_transform(list_filter(map_entries(r.extras), "
    f"lambda e: e.key NOT IN ({_LEFT})), lambda e: {{'key': e.key, 'value': {_typed('e.value')}}})))"
)
_FROM_JSON = (
    f"to_json(map_from_entries(list_transform(list_filter("
    f'map_entries(TRY_CAST(TRY_CAST(r."extra" AS JSON) AS MAP(VARCHAR, JSON))), '
    f"lambda e: e.key NOT IN ({_LEFT})), lambda e: {{'key': e.key, 'value': CASE WHEN "
    f"json_type(e.value) = 'VARCHAR' THEN {_typed(_JSON_TEXT)} ELSE e.value END}})))"
)


def _extra_object(found: _Keys) -> str:
    in_map = "NULL" if found.keys is not None and found.keys <= set(_PROMOTED) else _FROM_MAP
    in_json = f'WHEN r."extra" IS NOT NULL THEN {_FROM_JSON} ' if found.json else ""
    return f"coalesce(CASE WHEN cardinality(r.extras) > 0 THEN {in_map} {in_json}END, '{{}}'::JSON)"


def _column_sql(name: str, found: _Keys) -> str:
    """The SQL of one export column a file row `r` gives (the ledger's: campaign.results.attach)."""
    col = BY_NAME[name]
    if name == "extra":
        return _extra_object(found)
    if name == "params":
        return "coalesce(r.params, '')" if found.current else f"coalesce({_extra('params', found)}, r.params, '')"
    if col.where == "extra":
        return _number(_extra(name, found), col.kind) if col.kind in ("int", "float") else _extra(name, found)
    return _number(f"r.{name}", col.kind) if col.kind == "float" else f"r.{name}"


def results(led: Ledger, campaign: str | Sequence[str] | None = None) -> Export:
    """Every result row of the campaign or campaigns (all when None), job and imported, in
    the order they were stored, as EXPORT_COLUMNS, then a typed column per
    grid parameter of the rows' params (campaign.results.grid). An unknown campaign is a
    BadInputError; a changed or missing result file a LedgerError (files.verified).

    Each file is one scan, its rows streamed in their stored order, each batch
    given its attempts' ledger columns and its grid columns in Arrow
    (campaign.results.attach), into the writing connection: no sort, flat
    memory."""
    import duckdb
    import pyarrow as pa

    with led.session() as s:
        for name in [campaign] if isinstance(campaign, str) else campaign or ():
            q.require_campaign(s, name)
        paths, ids, values = scan.pointers(s, campaign, False, None, led.results_root)
    names = files.verified(paths)
    source = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": tempfile.gettempdir()})
    types = {c: _SQL_TYPES[BY_NAME[c].kind] for c in EXPORT_COLUMNS}
    own = [c for c in EXPORT_COLUMNS if BY_NAME[c].where != "ledger"]  # the rest: the ledger's (attach)
    # a file's rows in the current schema (file_scan.scan_sql: an older file's mapped onto it)
    rows = {current: file_scan.scan_sql("file_index", current) for current in (False, True)}
    found = [_keys(source, name, rows[False]) for name in names]
    texts = [
        t
        for name, keys in zip(names, found, strict=True)
        for (t,) in source.sql(
            f"SELECT DISTINCT {_column_sql('params', keys)} FROM {rows[keys.current]} r", params={"files": [name]}
        ).fetchall()
    ]
    made = grid(texts, EXPORT_COLUMNS)
    columns = [*EXPORT_COLUMNS, *(column for column, _ in made.columns.values())]
    types.update(made.columns.values())

    def one(found: _Keys, relation: str) -> str:
        select = [f'CAST({_column_sql(c, found)} AS {types[c]}) AS "{c}"' for c in own]
        select += [f'r."{c}"' for c in CARRIED_FILE_COLUMNS]  # an imported row's own ledger columns (attach)
        return f"SELECT {', '.join(select)}, coalesce(r.attempt_id, -1 - $index) AS {KEY} FROM {relation} r"

    # (no file: the columns' types from a relation of none)
    source.register("_typed", arrow_schema().empty_table().append_column("file_index", pa.array([], pa.int64())))
    mine = source.sql(one(_Keys(), "_typed").replace("$index", "0")).to_arrow_table().schema
    attach = Attach.make(ids, values, made.table())
    theirs = {f.name: f for f in attach.fields([c for c in EXPORT_COLUMNS if c not in own])}
    schema = pa.schema([mine.field(c) if c in own else theirs[c] for c in EXPORT_COLUMNS] + list(attach.grid.schema))

    def batches() -> Iterator[Any]:
        for index, (name, keys) in enumerate(zip(names, found, strict=True)):
            # (no ORDER BY: a scan keeps the file's order, DuckDB's preserve_insertion_order)
            for batch in source.sql(
                one(keys, rows[keys.current]), params={"files": [name], "index": index}
            ).to_arrow_reader(BATCH_ROWS):
                yield attach.batch(batch, schema)

    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": tempfile.gettempdir()})
    con.register("_rows", pa.RecordBatchReader.from_batches(schema, batches()))
    return Export(con, "SELECT * FROM _rows", columns, types, source)


def _keys(con: Any, path: str, relation: str) -> _Keys:
    """What a file's extra objects hold: its footer says so from schema 3 on (LedgerColumns.table),
    else one pass over the file's extras column (cheap beside a look per key and row)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    said, has_json = meta.get(EXTRA_KEYS.encode()), meta.get(EXTRA_JSON.encode())
    if int(meta.get(b"campaign.ledger.result_schema", b"0")) >= SCHEMA_VERSION and said is not None:
        return _Keys(has_json == b"1", frozenset(json.loads(said)), current=True)
    look = f'SELECT count(r."extra") > 0, list_distinct(flatten(list(map_keys(r.extras)))) FROM {relation} r'
    [(has_json, keys)] = con.sql(look, params={"files": [path]}).fetchall()
    return _Keys(bool(has_json), None if keys is None else frozenset(keys))


def frame_export(frame: Any) -> Export:
    """A DataFrame's rows (the hardware counters' export) as an Export: the same writers."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("_frame", pa.Table.from_pandas(frame, preserve_index=False))
    types = {str(row[0]): str(row[1]) for row in con.sql("DESCRIBE SELECT * FROM _frame").fetchall()}
    return Export(con, "SELECT * FROM _frame", [str(c) for c in frame.columns], types)


def _text(exp: Export) -> str:
    """The export with JSON as its text and doubles finite or NULL: what CSV, Parquet and tables hold."""
    kinds = exp.types
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
    tmp = fresh_temporary(path)
    try:
        exp.con.execute("SET VARIABLE out = ?", [str(tmp)])
        done = exp.con.execute(f"COPY ({_text(exp)}) TO (getvariable('out')) (FORMAT parquet)").fetchone()
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _unwritable(path, exc) from None
    except Exception as exc:  # DuckDB's IOException (an unwritable folder): one line, no traceback
        tmp.unlink(missing_ok=True)
        if type(exc).__name__ != "IOException":
            raise
        raise BadInputError(f"results --out {path}: {str(exc).splitlines()[0]}") from None
    return int(done[0]) if done else 0


def _check_out(out: Path) -> None:
    """The --out file is replaced by a rename: a device or FIFO there would be replaced by a
    regular file (as root, /dev/full), a folder or an empty name holds no file."""
    if out.name in ("", ".", ".."):
        raise BadInputError(f"results --out {str(out)!r} names no file; name a file you can write")
    try:
        found, regular = out.exists(), out.is_file()
    except OSError as exc:  # a name past 255 bytes
        raise _unwritable(out, exc) from None
    if found and out.is_dir():
        raise BadInputError(f"results --out {out} is a folder; name a file you can write")
    if found and not regular:
        raise BadInputError(
            f"results --out {out} is not a regular file (a device, FIFO or socket): the export "
            "replaces the file it names; name a file, or leave --out out for csv or json on stdout"
        )


def _unwritable(out: Path, exc: OSError) -> CampaignError:
    """One line for an --out file that could not be written: a full disk or read-only filesystem
    is the machine's (exit 1), anything else (a folder, a missing folder, no permission) the
    user's choice of --out (exit 2)."""
    if storage.is_storage(exc):
        return storage.from_os_error(exc, out)
    return BadInputError(f"results --out {out}: {exc.strerror or exc}; name a file you can write")


def write_csv(exp: Export, out: IO[str]) -> int:
    """RFC 4180 with a header, quoted only where a cell needs it (as Python's csv module writes:
    `cut -d,` and `split(",")` read plain cells), a batch of rows at a time; an empty cell is NULL.
    Returns the rows written."""
    import csv

    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(exp.columns)
    count = 0
    for batch in rows(exp):
        writer.writerows(["" if v is None else v for v in r] for r in batch)
        count += len(batch)
    return count


def write_json(exp: Export, out: IO[str]) -> int:
    """One JSON array of objects (numbers as numbers, `extra` an object), a batch of rows at a time.
    Returns the rows written."""
    obj = ", ".join(f"'{c}': \"{c}\"" for c in exp.columns)
    rows = f"SELECT CAST(to_json({{{obj}}}) AS VARCHAR) AS row FROM ({_text_json(exp)})"
    out.write("[")
    sep = ""
    count = 0
    for batch in _batches(exp.con, rows):
        texts = batch.column(0).to_pylist()
        out.write(sep + ",\n".join(texts))
        sep = ",\n" if texts else sep
        count += len(texts)
    out.write("]\n")
    return count


def _text_json(exp: Export) -> str:
    """The export with doubles finite or NULL (JSON has no NaN); JSON columns kept as JSON."""
    kinds = exp.types
    parts = [
        f'CASE WHEN isfinite("{c}") THEN "{c}" END AS "{c}"'
        if kinds[c] in ("DOUBLE", "FLOAT")
        else f'CAST("{c}" AS JSON) AS "{c}"'
        if kinds[c] == "JSON"
        else f'"{c}"'
        for c in exp.columns
    ]
    return f"SELECT {', '.join(parts)} FROM ({exp.sql})"


def rows(exp: Export) -> Iterator[list[list[Any]]]:
    """The rows as lists of values, a batch at a time (the table format)."""
    for batch in _batches(exp.con, _text(exp)):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        yield [list(r) for r in zip(*columns)]


def _batches(con: Any, sql: str) -> Iterator[Any]:
    reader = con.sql(sql).to_arrow_reader(BATCH_ROWS)
    yield from reader


def emit(exp: Export, fmt: str, out: Path | None) -> None:
    """The export in `fmt` (csv, json, parquet) into the file `out`, or for csv and json to stdout
    where no file is named. A csv or json file is written under this process's own temporary name
    beside it (two exports to one file never share one; what killed exports left there is swept:
    analysis.whole_file.fresh_temporary) and renamed when complete: a failed export leaves no half
    file under the name asked for."""
    try:
        if out is not None:
            _check_out(out)
        if fmt == "parquet":
            count = write_parquet(exp, out)
        else:
            write = write_json if fmt == "json" else write_csv
            if out is None:
                if isinstance(sys.stdout, io.TextIOWrapper):  # the bytes --out would hold, whatever the locale
                    sys.stdout.reconfigure(encoding="utf-8")
                write(exp, sys.stdout)
                return
            tmp = fresh_temporary(out)
            try:
                with open(tmp, "w", newline="", encoding="utf-8") as fh:
                    count = write(exp, fh)
                os.replace(tmp, out)
            except OSError as exc:
                if exc.filename not in (str(tmp), str(out)) and not storage.is_storage(exc):
                    raise  # a result file's, not the --out file's
                raise _unwritable(out, exc) from None
            finally:
                with contextlib.suppress(OSError):  # (the open's own error is the one to report)
                    tmp.unlink(missing_ok=True)
        print(f"{count} row(s) written to {out}", file=sys.stderr)
    finally:
        exp.close()
