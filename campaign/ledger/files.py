"""Result rows in files: each finished attempt's rows written once as an
immutable Parquet file, read back through DuckDB (issue 26).

The ledger keeps only a pointer per file (`result_file`: the path relative to
the campaign's folder, the SHA-256 of its bytes, its row count, the schema
version of campaign.ledger.result_schema). A file is written under a temporary
name, fsynced and renamed into place before the pointer is inserted, in the
transaction that marks its attempt done: a crash between the two leaves an
unreferenced file, which nothing reads and `campaign status` sweeps. A file
whose bytes no longer match its pointer's hash is refused with one line
naming it, never read.

Where the files live (docs/results.md): a pointer's path is relative to its
campaign's folder (campaign.workdir, where its jobs' folders are; on the
shared filesystem in PostgreSQL team mode), so a copied or renamed ledger
still finds them. A ledger whose campaign folders are not on this machine (one
committed elsewhere, upgraded here) keeps the files its upgrade writes beside
it, in `<ledger stem>.results/c<id>/`, which then stands in for the campaign's
folder: a write goes to the campaign's folder when it exists here, else there;
a read looks in the campaign's folder, then there.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaign.ledger.result_schema import COLUMNS, SCHEMA_VERSION, STORED, arrow_schema
from campaign.plumbing.errors import LedgerError

RESULTS = "results"  # the subfolder of a campaign's folder holding its result files
SWEEP_AGE_S = 3600  # an unreferenced file younger than this may be a sync's between rename and commit
_TMP = ".tmp-"


@dataclass
class LedgerColumns:
    """One attempt's (or one import's) rows as columns: `values` by stored
    column name (a missing column is NULL), and the `extra` object of each row
    either as columns (`extras`, None where a row lacks the key) or as each
    row's dict (`extra_rows`)."""

    length: int
    values: dict[str, list[Any]]
    extras: dict[str, list[Any]] = field(default_factory=dict)
    extra_rows: list[dict[str, Any] | None] | None = None

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

    @staticmethod
    def joined(blocks: Sequence[LedgerColumns]) -> LedgerColumns:
        """Several attempts' rows as one set of columns (one ingest batch's file)."""
        if len(blocks) == 1:
            return blocks[0]
        names = {name for b in blocks for name in b.values}
        values = {name: [v for b in blocks for v in (b.values.get(name) or [None] * b.length)] for name in names}
        if any(b.extra_rows is not None for b in blocks):
            extras = [e for b in blocks for e in b.extra_dicts()]
            return LedgerColumns(sum(b.length for b in blocks), values, extra_rows=extras)
        keys = list(dict.fromkeys(k for b in blocks for k in b.extras))
        return LedgerColumns(sum(b.length for b in blocks), values,
                             {k: [v for b in blocks for v in (b.extras.get(k) or [None] * b.length)] for k in keys})

    def table(self) -> Any:
        """The rows as an Arrow table of the stored schema."""
        import pyarrow as pa

        objects = _json_objects(self.extras, self.length) if self.extra_rows is None else None
        extras = self.extra_dicts() if objects is None else []
        cols: dict[str, Any] = {}
        for col in COLUMNS:
            if col.name == "extra":
                values: Any = objects if objects is not None else [json.dumps(e) if e else None for e in extras]
            elif col.name == "params" and objects is not None:
                values = self.extras.get("params") or [None] * self.length
            elif col.name == "params":
                values = [None if e is None or e.get("params") is None else str(e["params"]) for e in extras]
            else:
                values = self.values.get(col.name) or [None] * self.length
            cols[col.name] = values
        schema = arrow_schema()
        return pa.table([cols[f.name] if isinstance(cols[f.name], pa.Array) else
                         pa.array(cols[f.name], type=f.type, from_pandas=True) for f in schema], schema=schema)


def _json_objects(extras: dict[str, list[Any]], length: int) -> Any:
    """Each row's extra object as JSON text, built a column at a time
    (pyarrow.compute): `{"key": "text", ...}` with the row's non-null keys,
    NULL for a row of none. None where a value is no text or holds a control
    character: the caller then writes each row with json.dumps."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces = []
    for name, values in extras.items():
        try:
            text = pa.array(values)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            return None
        if text.type not in (pa.string(), pa.null()):
            return None  # numbers keep their JSON type through json.dumps
        text = text.cast(pa.string())
        if pc.any(pc.match_substring_regex(text, "[\x00-\x1f]")).as_py():
            return None
        text = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
        pieces.append(pc.fill_null(pc.binary_join_element_wise(f', {json.dumps(name)}: "', text, '"', ""), ""))
    if not pieces:
        return pa.nulls(length, pa.string())
    body = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*pieces, ""), 2)  # (each piece starts with ", ")
    return pc.if_else(pc.equal(body, ""), pa.scalar(None, pa.string()),
                      pc.binary_join_element_wise("{", body, "}", ""))


@dataclass(frozen=True)
class Pointer:
    """What the ledger records of one written file."""

    path: str  # relative to the campaign's folder: results/<stem>-<hash>.parquet
    sha256: str
    rows: int
    schema_version: int = SCHEMA_VERSION


def homes(root: Path | None, campaign_id: int, workdir: str) -> list[Path]:
    """Where a campaign's pointers may be relative to, in the order a read
    looks: its folder, then (SQLite ledger: `root` = Ledger.results_root)
    `root/c<id>` beside the ledger."""
    out = [Path(workdir)] if workdir else []
    if root is not None:
        out.append(root / f"c{campaign_id}")
    return out


def write_home(root: Path | None, campaign_id: int, workdir: str) -> Path:
    """Where a new file of the campaign goes: its folder when that exists on
    this machine, else beside an SQLite ledger (`homes`). A PostgreSQL ledger
    has no beside: the campaign's folder is made (the shared filesystem)."""
    if workdir and (root is None or Path(workdir).is_dir()):
        return Path(workdir)
    if root is not None:
        return root / f"c{campaign_id}"
    raise LedgerError(f"campaign {campaign_id} has no folder to keep its result files in")


def locate(places: Sequence[Path], path: str) -> Path:
    """The first of `places` holding the pointer's `path`; a LedgerError
    naming where it was looked for when none does."""
    for place in places:
        if (place / path).is_file():
            return place / path
    where = " or ".join(str(place / path) for place in places) or path
    raise LedgerError(f"result file {where} is missing; its rows cannot be reported (restore it, or the "
                      f"campaign's folder, from a backup)")


def write(home: Path, stem: str, table: Any) -> Pointer:
    """`table` as the immutable file `home/results/<stem>-<hash>.parquet` (`write_many`)."""
    return write_many([(home, stem, table)])[0]


def write_many(items: Sequence[tuple[Path, str, Any]]) -> list[Pointer]:
    """Each table as the immutable file `home/results/<stem>-<hash>.parquet`
    (pointer path `results/<stem>-<hash>.parquet`): written whole under a
    temporary name, made durable, renamed, the renames made durable. Durable
    once per batch, not per file: one syncfs(2) of each filesystem written
    (Linux), else an fsync of every file and folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    staged, pointers = [], []
    for home, stem, table in items:
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        data = sink.getvalue().to_pybytes()
        digest = hashlib.sha256(data).hexdigest()
        name = f"{stem}-{digest[:16]}.parquet"
        folder = home / RESULTS
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{_TMP}{os.getpid()}-{name}"
        with open(tmp, "wb") as f:
            f.write(data)
        staged.append((tmp, folder / name))
        pointers.append(Pointer(f"{RESULTS}/{name}", digest, table.num_rows))
    _durable([tmp for tmp, _ in staged])
    for tmp, final in staged:
        os.replace(tmp, final)
    _durable(sorted({final.parent for _, final in staged}))
    return pointers


def _durable(paths: Sequence[Path]) -> None:
    """What was written to these files (or folder entries) on stable storage."""
    syncfs = getattr(_libc(), "syncfs", None)
    done: set[int] = set()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            device = os.fstat(fd).st_dev
            if syncfs is not None and device in done:
                continue
            if syncfs is None or syncfs(fd) != 0:
                os.fsync(fd)
            done.add(device)
        finally:
            os.close(fd)


def _libc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def sha256(path: Path) -> str:
    """SHA-256 of the file's bytes (a result file's pointer, an imported file's fingerprint)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verified(paths: Sequence[tuple[Path, str]]) -> list[str]:
    """The files as strings, each checked against its pointer's hash; a
    missing or changed one is a LedgerError naming it (never read)."""
    out = []
    for path, digest in paths:
        try:
            actual = sha256(path)
        except OSError as exc:
            raise LedgerError(f"result file {path} is unreadable ({exc.strerror}); its rows cannot be reported") from None
        if actual != digest:
            raise LedgerError(f"result file {path} does not match the hash the ledger recorded for it "
                              f"(sha256 {actual[:16]}..., recorded {digest[:16]}...): it was changed after it was "
                              f"written; restore it from a backup")
        out.append(str(path))
    return out


def read(paths: Sequence[str], columns: Sequence[str], cluster: str | None = None,
         from_extra: Sequence[str] = ()) -> Any:
    """The rows of these files, in file order then row order, as an Arrow
    table of `columns` plus `file_index` (the position of its file in
    `paths`); `cluster` is pushed down into the scan. `from_extra`: keys of
    the row's extra object read as text columns of their own (NULL where absent)."""
    import duckdb

    present = [c for c in columns if c in STORED]
    keys = [k for k in from_extra if k.isidentifier()]  # names of ours (SQL text is built from them)
    select = ", ".join([*(f'"{c}"' for c in present),
                        *(f"json_extract_string(\"extra\", '$.{k}') AS \"{k}\"" for k in keys), "file_index"])
    where = " WHERE cluster = $cluster" if cluster else ""
    con = duckdb.connect()
    try:
        params: dict[str, Any] = {"files": list(paths)}
        if cluster:
            params["cluster"] = cluster
        # union_by_name: a file written before a column was added lacks it (NULL)
        return con.sql(f"SELECT {select} FROM read_parquet($files, union_by_name = true){where}",
                       params=params).to_arrow_table()
    finally:
        con.close()


def sweep(places: Sequence[Path], referenced: set[Path], superseded: Callable[[Path], bool],
          older_than_s: float = SWEEP_AGE_S) -> list[Path]:
    """Remove, from each place's `results/`, the leftover temporary files and
    the result files no pointer names that `superseded` says this ledger
    holds elsewhere (a sync killed between the rename and its commit, whose
    attempts a later sync stored again), once older than `older_than_s`. A
    campaign's folder may be shared by copies of the ledger: a file another
    copy points to is never superseded here. Returns what was removed."""
    cutoff = time.time() - older_than_s
    removed = []
    for place in places:
        folder = place / RESULTS
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if not path.name.endswith(".parquet") or path in referenced:
                continue
            try:
                if path.stat().st_mtime >= cutoff or not (path.name.startswith(_TMP) or superseded(path)):
                    continue
                path.unlink()
                removed.append(path)
            except OSError:
                continue
    return removed


def attempts_in(path: Path) -> set[tuple[int, str]]:
    """The (attempt id, job id) pairs of a result file's rows."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["attempt_id", "job_id"])
    return set(zip(table.column("attempt_id").to_pylist(), table.column("job_id").to_pylist()))
