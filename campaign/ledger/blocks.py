"""Each attempt's per-row numbers packed once, beside its rows (issue 18, schema v11).

Python's sqlite3 makes one object per cell it returns, and for a read of every
row (metrics and the report over ten million rows) the cells that vary by row
(n, repeat, the times, a kernel's flops, bytes and error) were most of the
read even after the texts were taken once per attempt (campaign.results.by_attempt).
So when sync inserts one job's rows it also stores, in `result_block`, that
attempt's numbers as six packed arrays (little-endian int64 / float64, a NULL
as NaN; a float column NULL in every row as no bytes at all), and the read
joins the arrays instead of fetching the cells.

A block is a cache of the rows, never the record: the rows stay in `result`
and every other read uses them. It is written only when it holds exactly what
the rows hold:
- every row of the insert shares the values the read takes from the
  attempt's first row (ROW_SHARED below, and params), and
- every number has the type its column stores (an int in n and repeat, a
  float or int or NULL in the others), packed as SQLite stores it (NaN is
  stored as NULL, -0.0 as 0.0).
A block is used only while it still describes the rows. Its rows were the
consecutive ids first_id .. first_id + rows - 1 when it was written (the
read checks that too: an insert that did not get consecutive ids leaves the
attempt's first or last id elsewhere); triggers drop it when a row of its
attempt is updated or deleted; and a row added later, by any path, gets a
larger id, so the read, which finds each attempt's first and last row id in
the attempt index, sees that the attempt's rows no longer end at the
block's last id (tests/results/test_blocks.py runs each of these against
the general read). A REPLACE keeps the id of the row it replaces and fires
no delete trigger unless recursive_triggers is on (campaign's connections
turn it on; the sqlite3 shell and other tools do not): so the read also
compares each block with its rows' count and, per number, sum
as SQLite computes them (blocks_differ, with the least and greatest time; tests/results/test_block_replace.py).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from itertools import groupby
from typing import Any

import numpy as np

# (column, array typecode, numpy dtype): the layout of each packed column
LAYOUT: tuple[tuple[str, str, str], ...] = (
    ("n", "q", "<i8"), ("repeat", "q", "<i8"), ("time_s", "d", "<f8"), ("flops", "d", "<f8"),
    ("bytes", "d", "<f8"), ("rel_err", "d", "<f8"),
)
NUMBERS = tuple(name for name, _, _ in LAYOUT)
# Values of a result row that its attempt's other rows normally share, read from its first row (with
# params, extra["params"]): the texts, and the thread count and d of the run.
ROW_SHARED = ("source", "cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "job_id",
              "gpu_model", "campaign_id", "threads", "d")
TABLE = "result_block"
MAX_ROWS = 1_000_000  # 8 MB per packed column, far inside SQLite's 1 GB value limit; a bigger job is scanned
_PLAIN = (str, type(None))
_INT_TYPES = frozenset({int})
_REAL_TYPES = frozenset({float, int, type(None)})
_EXACT_INT = 2 ** 53  # an int beyond it in a REAL column: left to SQLite's own rounding, not packed
_NATIVE = sys.byteorder == "little" and array("q").itemsize == 8  # array's bytes are the layout's

INSERT = (f"INSERT OR REPLACE INTO {TABLE} (attempt_id, first_id, rows, {', '.join(NUMBERS)}) "
          f"VALUES ({', '.join('?' * (3 + len(NUMBERS)))})")


def constant(values: Sequence[Any]) -> bool:
    """Whether every row holds the same stored value: equal and of one type
    (SQLite's IS tells 1 from '1', and binding values[0] for all must store
    each one), and not a float zero, as -0.0 == 0.0."""
    first = values[0]
    kind = type(first)
    if kind is float and first == 0.0:
        return False
    if values.count(first) != len(values):
        return False
    # A text or None equals its own kind only (a str subclass binds as the same text); a number may
    # equal another type's (1 == 1.0 == True).
    return kind in _PLAIN or set(map(type, values)) == {kind}


def _pack_column(values: Sequence[Any], code: str) -> bytes | None:
    if code == "d" and values.count(None) == len(values):
        return b""  # every row NULL (most kernels record no flops, bytes or error): nothing stored
    kinds = set(map(type, values))
    if code == "q":
        if kinds != _INT_TYPES:
            return None
        try:
            return array("q", values).tobytes()
        except OverflowError:  # beyond int64: SQLite would not store it as an integer
            return None
    if not kinds <= _REAL_TYPES or (int in kinds and any(type(v) is int and abs(v) > _EXACT_INT for v in values)):
        return None
    if type(None) in kinds or 0.0 in values or (total := sum(values)) != total:  # (a NaN makes the sum NaN)
        # as SQLite gives them back: NULL and NaN (stored as NULL) as one NaN, -0.0 (== 0.0) as 0.0
        packed = np.array(values, dtype="<f8") + 0.0
        missing = np.isnan(packed)
        if missing.all():
            return b""
        packed[missing] = np.nan
        return packed.tobytes()
    return array("d", values).tobytes()


def pack(numbers: Mapping[str, Sequence[Any]]) -> list[bytes] | None:
    """The packed columns of one attempt's rows (in row order), or None when
    a value would not come back from SQLite as packed."""
    if not _NATIVE:
        return None
    out = []
    for name, code, _ in LAYOUT:
        packed = _pack_column(numbers[name], code)
        if packed is None:
            return None
        out.append(packed)
    return out


def record(cursor: sqlite3.Cursor, columns: Mapping[str, Sequence[Any]], params: Sequence[Any],
           length: int, shared: bool) -> bool:
    """After the INSERT of one job's `length` rows on `cursor` (their bound
    values by column, `params` each row's extra["params"]; `shared`: the
    attempt_id and every ROW_SHARED column hold one value, as `constant`
    says, which the INSERT has found out already): store their block
    when it describes them exactly. Returns whether one was stored."""
    if not 0 < length <= MAX_ROWS or cursor.lastrowid is None or not shared:
        return False
    attempt = columns["attempt_id"]
    # params too: the same stored value in every row (the type too, as SQLite's IS tells 1 from '1')
    if attempt[0] is None or not constant(params):
        return False
    packed = pack(columns)
    if packed is None:
        return False
    first_id = cursor.lastrowid - length + 1  # VALUES rows take consecutive ids; the read checks that they did
    cursor.execute(INSERT, [attempt[0], first_id, length, *packed])
    return True


MAX_STALE = 10_000  # more blocks than this no longer describing their rows: the read uses none


def blocks_differ(found: Sequence[Sequence[Any]], attempts: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Attempts of `found` (rows: attempt_id, first_id, rows, the packed columns) whose block does
    not hold what their rows hold: `actual` row k is attempt `attempts[k]`'s row count, the total
    of each NUMBERS column, then the least and the greatest time_s, as SQLite computes them (NaN:
    no value). See campaign.results.by_attempt._stale."""
    if not found:
        return np.empty(0, dtype=np.int64)
    width = 3 + len(NUMBERS)
    rows = np.fromiter((r[2] for r in found), dtype=np.int64, count=len(found))
    aids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
    numbers = unpack([r[3:] for r in found], rows)
    starts = np.cumsum(rows) - rows
    lookup = dict(zip(attempts.tolist(), range(len(attempts)), strict=True))
    index = np.fromiter((lookup.get(a, -1) for a in aids.tolist()), dtype=np.int64, count=len(aids))
    sql = np.vstack([actual.reshape(len(attempts), width), np.full((1, width), np.nan)])[index]  # -1: NaN
    bad = (index < 0) | (sql[:, 0] != rows)
    with np.errstate(invalid="ignore"):
        for i, name in enumerate(NUMBERS):
            values = numbers[name].astype(np.float64)
            present = np.where(np.isnan(values), 0.0, values)
            total = np.add.reduceat(present, starts)
            size = np.add.reduceat(np.abs(present), starts)
            bad |= ~((sql[:, 1 + i] == total) | (np.abs(sql[:, 1 + i] - total) <= 1e-12 * size))
        times = numbers["time_s"].astype(np.float64)
        for col, end in ((width - 2, np.fmin.reduceat(times, starts)), (width - 1, np.fmax.reduceat(times, starts))):
            bad |= ~((sql[:, col] == end) | (np.isnan(sql[:, col]) & np.isnan(end)))
    return aids[bad]


def unpack(blobs: Sequence[Sequence[bytes]], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Blocks' packed columns (each block's tuple in NUMBERS order; `rows`
    their row counts) as one array per column, the blocks one after another."""
    out: dict[str, np.ndarray] = {}
    for i, (name, _, dtype) in enumerate(LAYOUT):
        column = [b[i] for b in blobs]
        whole = np.frombuffer(b"".join(column), dtype=dtype)  # read-only: the frame copies it
        if len(whole) == rows.sum():
            out[name] = whole
            continue
        full = np.fromiter(map(len, column), dtype=np.int64, count=len(column)) > 0  # b"": every row NULL
        out[name] = np.full(int(rows.sum()), np.nan)
        out[name][np.repeat(full, rows)] = whole
    return out


_PARAMS = "CAST(JSON_EXTRACT({t}.extra, '$.\"params\"') AS VARCHAR)"  # as the read extracts params
_SPAN = ("SELECT attempt_id AS a, min(id) AS f, max(id) AS l, count(*) AS c FROM result "
         "WHERE attempt_id IS NOT NULL GROUP BY attempt_id HAVING max(id) - min(id) + 1 = count(*)")


def backfill(con: sqlite3.Connection, chunk: int = 100_000) -> int:
    """Blocks for the attempts that have none, from their stored rows (an
    upgraded ledger's, migrations/versions/v11): the same blocks sync would
    have written, read back through the driver as the read reads them.
    Only attempts whose rows are one run of ids and share their first row's
    values get one. Returns how many were written."""
    same = " AND ".join([f"r.{c} IS fr.{c}" for c in ROW_SHARED] + [f"{_PARAMS.format(t='r')} IS "
                                                                   f"{_PARAMS.format(t='fr')}"])
    cursor = con.execute(
        f"SELECT g.a, g.f, g.c, ({same}), {', '.join('r.' + c for c in NUMBERS)} FROM ({_SPAN}) g "
        f"JOIN result fr ON fr.id = g.f JOIN result r ON r.id BETWEEN g.f AND g.l "
        f"WHERE g.a NOT IN (SELECT attempt_id FROM {TABLE}) ORDER BY r.id")
    written, pending = 0, []
    for (attempt, first, count), group in groupby(_fetched(cursor, chunk), key=lambda row: row[:3]):
        if count > MAX_ROWS:
            continue  # (groupby skips the rest of the group)
        rows = list(group)
        packed = pack({name: [r[4 + i] for r in rows] for i, name in enumerate(NUMBERS)})
        if packed is None or not all(r[3] == 1 for r in rows):
            continue
        pending.append([attempt, first, count, *packed])
        if len(pending) >= 1000:
            con.executemany(INSERT, pending)
            written, pending = written + len(pending), []
    con.executemany(INSERT, pending)
    return written + len(pending)


def _fetched(cursor: sqlite3.Cursor, chunk: int) -> Iterator[tuple[Any, ...]]:
    while batch := cursor.fetchmany(chunk):
        yield from batch
