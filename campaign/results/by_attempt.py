"""Result rows from SQLite with each attempt's shared values read once (issue 18).

A job's rows repeat their attempt's texts (cluster, partition, kernel, impl,
variant, device, dtype, job ID, params, the campaign's name, the state) and
its run's thread count and d. Python's sqlite3 makes one object per cell, and
those cells were most of the ~90 s that reading 10 million rows took. Here
the database copies the first row of every selected attempt into a temporary
table, and the scan of the rows fetches only what varies by row (n, repeat,
times, a kernel's own flops, bytes and error) plus one flag: are this row's
shared values its attempt's first row's? Rows of attempts where they are take
those values from that table; attempts where any row differs (a file of mixed
devices, say), and imported rows, are read the general way
(campaign.results.query). The frame is the one the general read gives, row
for row (tests/results/test_by_attempt.py compares them on hostile ledgers).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import count
from typing import Any

import numpy as np
from sqlalchemy import Column, Integer, MetaData, Table, and_, func, insert, literal_column, or_, select, type_coerce
from sqlalchemy.orm import Session

from campaign.ledger import JobAttempt, ResultRow
from campaign.results.query import RowFilter, read_frame, statement

# Values of a result row that its attempt's other rows normally share (compared per row, in SQL):
# the texts, and the thread count and d of the run.
ROW_SHARED = ("source", "cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "job_id",
              "gpu_model", "campaign_id", "threads", "d")
# Per-row values, fetched for every row (a kernel's own flops, bytes and error vary by n).
ROW_NUMBERS = ("n", "repeat", "time_s", "flops", "bytes", "rel_err")
_names = count()


def applies(s: Session) -> bool:
    """On SQLite (a temporary table per read). PostgreSQL's driver is not
    the per-cell bottleneck this avoids."""
    driver = getattr(s.connection().connection, "driver_connection", None)
    return isinstance(driver, sqlite3.Connection)


def read(s: Session, campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool,
         where: RowFilter | None) -> Any:
    """The general read's frame (query.statement without extras), in row id order."""
    import pandas as pd  # lazy, as in export

    general = statement(campaign, cluster, usable_only, False, where)
    columns = [c.name for c in general.selected_columns]
    firsts = _first_rows(s, campaign, usable_only, where)
    try:
        attempts = read_frame(s, select(firsts))
        ids, aids, numbers, mixed = _scan(s, firsts, cluster)
        slow = _mixed_and_imported(s, general, mixed)
    finally:
        firsts.drop(s.connection())
    attempts = attempts.set_index("_attempt")
    keep = ~np.isin(aids, mixed) if len(mixed) else slice(None)
    rows = attempts.index.get_indexer(aids[keep])
    fast = pd.DataFrame({name: (numbers[name][keep] if name in numbers else attempts[name].to_numpy()[rows])
                         for name in columns})
    if slow.empty:
        return fast
    if fast.empty:
        return slow.drop(columns="_id").reset_index(drop=True)
    both = pd.concat([fast.assign(_id=ids[keep]), slow], ignore_index=True)
    return both.sort_values("_id", kind="stable").drop(columns="_id").reset_index(drop=True)


def _first_rows(s: Session, campaign: str | Sequence[str] | None, usable_only: bool,
                where: RowFilter | None) -> Table:
    """A temporary table: for each attempt the general read selects (every
    filter but the cluster's, which is a row's), its first row's values. Its
    columns take the source columns' types, so SQLite stores each value as the
    source does (a column's affinity can change a value's storage class)."""
    first = select(func.min(ResultRow.id)).where(ResultRow.attempt_id.isnot(None)).group_by(ResultRow.attempt_id)
    stmt = (statement(campaign, None, usable_only, False, where).order_by(None)
            .add_columns(ResultRow.attempt_id.label("_attempt"), ResultRow.campaign_id.label("_campaign_id"))
            .where(ResultRow.id.in_(first)))
    table = Table(f"campaign_first_rows_{next(_names)}", MetaData(),
                  *(Column(c.name, c.type, primary_key=c.name == "_attempt") for c in stmt.selected_columns),
                  prefixes=["TEMPORARY"])
    table.create(s.connection())
    s.execute(insert(table).from_select([c.name for c in table.columns], stmt))
    return table


def _same_shared(firsts: Table) -> Any:
    """SQL: this row's shared values are its attempt's first row's (IS: NULL equals NULL)."""
    params = ResultRow.extra["params"].as_string()
    return and_(*(getattr(ResultRow, c).is_(firsts.c[c if c != "campaign_id" else "_campaign_id"])
                  for c in ROW_SHARED), params.is_(firsts.c.params))


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


def _scan(s: Session, firsts: Table, cluster: str | None) -> tuple[np.ndarray, np.ndarray, dict[str, Any], np.ndarray]:
    """The scan's ids, attempts and number columns; and the attempts whose texts vary."""
    selected = s.scalar(select(func.count()).select_from(firsts)) or 0
    few = selected * 4 < (s.scalar(select(func.count(JobAttempt.id))) or 0)  # a few campaigns of many
    frame = read_frame(s, scan_statement(firsts, cluster, few=few))
    ids = frame["id"].to_numpy(dtype=np.int64)
    aids = frame["attempt_id"].to_numpy(dtype=np.int64)
    mixed = np.unique(aids[frame["same"].to_numpy() != 1])
    return ids, aids, {c: frame[c].to_numpy() for c in ROW_NUMBERS}, mixed


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
