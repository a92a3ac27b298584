"""Result rows from SQLite with each attempt's shared values read once (issue 18).

A job's rows repeat their attempt's texts (cluster, partition, kernel, impl,
variant, device, dtype, job ID, params, the campaign's name, the state) and
its run's thread count and d. Python's sqlite3 makes one object per cell, and
those cells were most of the ~90 s that reading 10 million rows took. Here
the database copies the first row of every selected attempt into a temporary
table. An attempt whose block (campaign.ledger.blocks) still describes its
rows takes its numbers from there; the rows of the others are scanned for
only what varies by row (n, repeat, times, a kernel's own flops, bytes and
error) plus one flag: are this row's shared values its attempt's first
row's? Rows of attempts where they are take those values from that table;
attempts where any row differs (a file of mixed devices, say), and imported
rows, are read the general way (campaign.results.query). The frame is the
one the general read gives, row for row (tests/results/test_by_attempt.py
and test_blocks.py compare them on hostile ledgers).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import count
from typing import Any

import numpy as np
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    Table,
    and_,
    delete,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    type_coerce,
)
from sqlalchemy.orm import Session, aliased

from analysis.columns import SCALE_COLUMNS
from campaign.ledger import JobAttempt, ResultRow
from campaign.ledger.blocks import MAX_STALE, ROW_SHARED, blocks_differ, unpack
from campaign.ledger.blocks import NUMBERS as ROW_NUMBERS  # per-row values (a kernel's flops, bytes, error vary by n)
from campaign.ledger.models import ResultBlock
from campaign.results.query import RowFilter, read_frame, settled_dtypes, statement

BLOCK = ResultBlock.__table__
_names = count()


def applies(s: Session) -> bool:
    """On SQLite (a temporary table per read). PostgreSQL's driver is not
    the per-cell bottleneck this avoids."""
    driver = getattr(s.connection().connection, "driver_connection", None)
    return isinstance(driver, sqlite3.Connection)


def read(s: Session, campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool,
         where: RowFilter | None) -> Any:
    """The general read's frame (query.statement without extras), in row id order."""
    general = statement(campaign, cluster, usable_only, False, where)
    columns = [c.name for c in general.selected_columns]
    firsts = _first_rows(s, campaign, usable_only, where)
    try:
        attempts = read_frame(s, select(firsts), objects=True)  # dtypes: of the rows selected (_frame)
        blocked = _blocks(s, firsts, cluster)  # these attempts leave `firsts`
        (ids, aids, numbers), mixed = _scan(s, firsts, cluster)
        slow = _mixed_and_imported(s, general, mixed)
    finally:
        firsts.drop(s.connection())
    keep = ~np.isin(aids, mixed)
    scanned = ids[keep], aids[keep], {name: values[keep] for name, values in numbers.items()}
    return _frame(columns, attempts, slow, [blocked, scanned])


Part = tuple[np.ndarray, np.ndarray, dict[str, Any]]  # rows' ids, their attempts, their ROW_NUMBERS


def _frame(columns: list[str], attempts: Any, slow: Any, parts: list[Part]) -> Any:
    """The frame of the parts' rows and the rows read the general way
    (`slow`), in id order. Each slow row is an attempt of its own (a negative
    key), so that every column is one take from the attempts' values: no
    concatenation and sort of ten million rows when a ledger holds one
    imported row. Dtypes are settled on the values of the attempts that have
    rows here (as the general read settles them on its rows); the numbers are
    arrays already."""
    import pandas as pd  # lazy, as in export

    values = attempts.set_index("_attempt")[columns]
    if len(slow):
        slow = slow.reset_index(drop=True)
        keys = -1 - np.arange(len(slow), dtype=np.int64)
        values = pd.concat([values, slow[columns].set_index(pd.Index(keys))])
        numbers = settled_dtypes(slow[list(ROW_NUMBERS)])
        parts = parts + [(slow["_id"].to_numpy(dtype=np.int64), keys,
                          {name: numbers[name].to_numpy() for name in ROW_NUMBERS})]
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return settled_dtypes(values.iloc[:0].reset_index(drop=True))
    _, aids, numbers = parts[0]  # (the ids only order the parts)
    if len(parts) > 1:
        order = np.argsort(np.concatenate([p[0] for p in parts]), kind="stable")
        aids = np.concatenate([p[1] for p in parts])[order]
        numbers = {name: np.concatenate([p[2][name] for p in parts])[order] for name in ROW_NUMBERS}
    rows = values.index.get_indexer(aids)
    used = np.zeros(len(values), dtype=bool)
    used[rows] = True
    values = settled_dtypes(values.iloc[np.flatnonzero(used)].reset_index(drop=True))
    rows = (np.cumsum(used) - 1)[rows]  # the take keeps each column's settled dtype
    return pd.DataFrame({name: (numbers[name] if name in numbers else values[name].array.take(rows))
                         for name in columns}, copy=False)


def _first_rows(s: Session, campaign: str | Sequence[str] | None, usable_only: bool,
                where: RowFilter | None) -> Table:
    """A temporary table: for each attempt the general read selects (every
    filter but the cluster's, which is a row's), its first row's values. Its
    columns take the source columns' types, so SQLite stores each value as the
    source does (a column's affinity can change a value's storage class)."""
    # each attempt's first and last row id, found in the attempt index (a seek per attempt: a
    # GROUP BY over the index would visit all ten million entries)
    other, attempt = aliased(ResultRow), aliased(JobAttempt)
    first = (select(select(func.min(other.id)).where(other.attempt_id == attempt.id).correlate(attempt)
                    .scalar_subquery()).select_from(attempt).correlate(None))
    last = select(func.max(other.id)).where(other.attempt_id == ResultRow.attempt_id).scalar_subquery()
    stmt = (statement(campaign, None, usable_only, False, where).order_by(None)
            .add_columns(ResultRow.attempt_id.label("_attempt"), ResultRow.campaign_id.label("_campaign_id"),
                         ResultRow.id.label("_first"), last.label("_last"))
            .where(ResultRow.id.in_(first)))
    table = Table(f"campaign_first_rows_{next(_names)}", MetaData(),
                  *(Column(c.name, c.type, primary_key=c.name == "_attempt") for c in stmt.selected_columns),
                  prefixes=["TEMPORARY"])
    table.create(s.connection())
    s.execute(insert(table).from_select([c.name for c in table.columns], stmt))
    return table


def _valid(firsts: Table) -> Any:
    """SQL: the attempt's rows span its block's ids. That is enough: its rows were consecutive ids
    when the block was written, a row added since has a larger id, and a row changed or deleted
    since dropped the block (campaign.ledger.blocks). (`+ 0`: the selected attempts are scanned and
    their blocks found by key; with the temporary table's key usable, SQLite scanned every block of
    the ledger for one campaign's.)"""
    return and_(BLOCK.c.attempt_id == firsts.c._attempt + literal_column("0"), BLOCK.c.first_id == firsts.c._first,
                BLOCK.c.first_id + BLOCK.c.rows - 1 == firsts.c._last)


def blocks_statement(firsts: Table, cluster: str | None) -> Any:
    """The selected attempts' blocks that still describe their rows, in id order."""
    stmt = select(BLOCK.c.attempt_id, BLOCK.c.first_id, BLOCK.c.rows, *(BLOCK.c[n] for n in ROW_NUMBERS)).where(
        _valid(firsts))
    if cluster:  # a block's rows share their cluster
        stmt = stmt.where(firsts.c.cluster == cluster)
    return stmt.order_by(BLOCK.c.first_id)


def _blocks(s: Session, firsts: Table, cluster: str | None) -> Part:
    """Ids, attempts and numbers of the rows of the selected attempts whose
    block still describes them, in id order; every attempt with such a block
    leaves `firsts`, which then holds only the attempts whose rows must be
    scanned."""
    compiled = blocks_statement(firsts, cluster).compile(dialect=s.get_bind().dialect)
    # the driver's own bytes: LargeBinary's result processor would copy each of 1.2M values again
    found = s.connection().exec_driver_sql(str(compiled), tuple(compiled.params[k] for k in compiled.positiontup or ())
                                           ).fetchall()
    served: Any = exists(select(BLOCK.c.attempt_id).where(_valid(firsts)))
    stale = _stale(s, firsts, found)
    if len(stale) > MAX_STALE:  # (an exclusion list that long: no block is used)
        found, served = [], literal_column("0") == 1
    elif stale:  # their rows are scanned instead
        found = [r for r in found if r[0] not in stale]
        served = and_(served, firsts.c._attempt.notin_(sorted(stale)))
    s.execute(delete(firsts).where(served))
    aids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
    first = np.fromiter((r[1] for r in found), dtype=np.int64, count=len(found))
    rows = np.fromiter((r[2] for r in found), dtype=np.int64, count=len(found))
    starts = np.cumsum(rows) - rows
    ids = np.repeat(first - starts, rows) + np.arange(int(rows.sum()), dtype=np.int64)
    return ids, np.repeat(aids, rows), unpack([r[3:] for r in found], rows)


def _stale(s: Session, firsts: Table, found: Sequence[Any]) -> set[int]:
    """The attempts of `found` whose block no longer describes its rows although its ids still
    span them: rows replaced in place (SQLite's REPLACE deletes the old row without firing the
    delete trigger unless recursive_triggers is on; a row moved to another attempt under its id).
    Each block's count, per number its sum, and the least and greatest time, against the same
    aggregates of the rows, computed by SQLite without a cell reaching Python (0.3 s per million
    rows; every aggregate more costs about 0.05 s). Exact but for sums, which may differ in
    rounding (within 1e-12 of the sum of magnitudes)."""
    if not found:
        return set()
    aggregates: list[Any] = [func.count(), *(func.total(getattr(ResultRow, name)) for name in ROW_NUMBERS),
                             func.min(ResultRow.time_s), func.max(ResultRow.time_s)]
    served = select(BLOCK.c.attempt_id).where(_valid(firsts))
    rows = s.execute(select(ResultRow.attempt_id, *aggregates).where(ResultRow.attempt_id.in_(served))
                     .group_by(ResultRow.attempt_id)).all()
    import pandas as pd  # lazy, as in export

    table = pd.DataFrame.from_records(rows, columns=range(4 + len(ROW_NUMBERS)))
    attempts = table[0].to_numpy(dtype=np.int64)
    actual = table.iloc[:, 1:].to_numpy(dtype=np.float64, na_value=np.nan)
    return {int(a) for a in blocks_differ(found, attempts, actual)}


def _same_shared(firsts: Table) -> Any:
    """SQL: this row's shared values are its attempt's first row's (IS: NULL equals NULL)."""
    params = ResultRow.extra["params"].as_string()
    # ranks and nodes too (a job's rows share them: campaign.results.expected), as the general read extracts them
    scale = (ResultRow.extra[c].as_string().is_(firsts.c[c]) for c in SCALE_COLUMNS)
    return and_(*(getattr(ResultRow, c).is_(firsts.c[c if c != "campaign_id" else "_campaign_id"])
                  for c in ROW_SHARED), params.is_(firsts.c.params), *scale)


def scan_statement(firsts: Table, cluster: str | None, *, few: bool) -> Any:
    """Every selected row's id, attempt, whether its shared values are its first row's, numbers.

    `+ 0` takes an index out of SQLite's choice: over most of the ledger the
    rows are scanned in id order (driven by the attempt index, SQLite would
    sort ten million rows back into it); for `few` attempts of many, they are
    found by the attempt index and only they are sorted."""
    if few:
        on = firsts.c._attempt + literal_column("0") == ResultRow.attempt_id
    else:
        on = firsts.c._attempt == ResultRow.attempt_id + literal_column("0")
    same = type_coerce(_same_shared(firsts), Integer).label("same")  # an int: a Boolean has a result processor
    stmt = (select(ResultRow.id, ResultRow.attempt_id, same, *(getattr(ResultRow, c) for c in ROW_NUMBERS))
            .join_from(ResultRow, firsts, on).order_by(ResultRow.id))
    return stmt.where(ResultRow.cluster == cluster) if cluster else stmt


def _scan(s: Session, firsts: Table, cluster: str | None) -> tuple[Part, np.ndarray]:
    """The scanned rows (ids, attempts, numbers); and the attempts whose texts vary."""
    selected = s.scalar(select(func.count()).select_from(firsts)) or 0
    if not selected:
        none = np.empty(0, dtype=np.int64)
        return (none, none, {c: np.empty(0) for c in ROW_NUMBERS}), none
    few = selected * 4 < (s.scalar(select(func.count(JobAttempt.id))) or 0)  # a few campaigns of many
    frame = read_frame(s, scan_statement(firsts, cluster, few=few))
    ids = frame["id"].to_numpy(dtype=np.int64)
    aids = frame["attempt_id"].to_numpy(dtype=np.int64)
    mixed = np.unique(aids[frame["same"].to_numpy() != 1])
    return (ids, aids, {c: frame[c].to_numpy() for c in ROW_NUMBERS}), mixed


def _mixed_and_imported(s: Session, general: Any, mixed: np.ndarray) -> Any:
    """The general read of imported rows and of the attempts whose texts vary
    (listed in a temporary table, only when there are any)."""
    stmt = general.add_columns(ResultRow.id.label("_id"))
    if not len(mixed):
        return read_frame(s, stmt.where(ResultRow.attempt_id.is_(None)))
    holder = Table(f"campaign_mixed_{next(_names)}", MetaData(), Column("attempt_id", Integer, primary_key=True),
                   prefixes=["TEMPORARY"])
    holder.create(s.connection())
    try:
        s.execute(insert(holder), [{"attempt_id": int(a)} for a in mixed])
        return read_frame(s, stmt.where(or_(ResultRow.attempt_id.is_(None),
                                            ResultRow.attempt_id.in_(select(holder.c.attempt_id)))))
    finally:
        holder.drop(s.connection())
