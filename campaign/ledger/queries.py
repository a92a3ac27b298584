"""Queries take a Session; the caller owns the transaction (docs/style.md#ledger-and-transactions)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, ColumnElement, Table, bindparam, exists, insert, select, text, update
from sqlalchemy.orm import Session, aliased, contains_eager

from campaign.ledger.models import Campaign, JobAttempt, Run
from campaign.plumbing.errors import BadInputError, did_you_mean


def campaign_by_name(s: Session, name: str) -> Campaign | None:
    return s.scalar(select(Campaign).where(Campaign.name == name))


def require_campaign(s: Session, name: str) -> Campaign:
    camp = campaign_by_name(s, name)
    if camp is None:
        names = list(s.scalars(select(Campaign.name).order_by(Campaign.id)))
        raise BadInputError(f"unknown campaign {name!r}{did_you_mean(name, names)} "
                            f"(known: {', '.join(names) or 'none yet'})")
    return camp


def is_newest_attempt() -> ColumnElement[bool]:
    """Whether a row's JobAttempt is its run's newest (no later attempt of the
    same run): one probe of the (run_id, attempt) index per row, where a join
    with each run's max(attempt) groups every attempt first. The one rule for
    what a run's state is now: a filter (listings, counts) or a column
    (campaign.results.frames)."""
    later = aliased(JobAttempt)
    return ~exists().where(later.run_id == JobAttempt.run_id, later.attempt > JobAttempt.attempt)


def latest_attempts(s: Session, campaign_id: int | None = None) -> list[JobAttempt]:
    """The newest attempt of every run (what the run's state is now)."""
    q = (
        select(JobAttempt)
        .join(Run, Run.id == JobAttempt.run_id)
        .where(is_newest_attempt())
        # the views print each attempt's run and campaign: load them in the same query, not one per row
        .options(contains_eager(JobAttempt.run).joinedload(Run.campaign))
        .order_by(JobAttempt.id)
    )
    if campaign_id is not None:
        q = q.where(Run.campaign_id == campaign_id)
    return list(s.scalars(q).unique())


def attempts_by_job_id(s: Session, job_id: str) -> list[JobAttempt]:
    found = list(s.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id).order_by(JobAttempt.id)))
    if not found:
        raise BadInputError(f"unknown job ID {job_id!r}: `campaign jobs` lists the known ones")
    return found


def lineage(s: Session, attempt: JobAttempt) -> Sequence[JobAttempt]:
    return list(s.scalars(select(JobAttempt).where(JobAttempt.run_id == attempt.run_id).order_by(JobAttempt.attempt)))


def attempt_columns(s: Session, columns: Sequence[Any], campaign_id: int | None = None, *,
                    latest: bool = True, state: Any = None) -> list[tuple[Any, ...]]:
    """Columns of attempts (of JobAttempt, Run, Campaign) as plain tuples in
    attempt order: the newest attempt of each run (latest) or all of them,
    optionally of one state or a collection of states. `jobs` and `status` print 10,000s of rows; ORM
    objects with their runs' decoded specs cost seconds there."""
    stmt = (select(*columns).select_from(JobAttempt).join(Run, Run.id == JobAttempt.run_id)
            .join(Campaign, Campaign.id == Run.campaign_id))
    if latest:
        stmt = stmt.where(is_newest_attempt())
    if campaign_id is not None:
        stmt = stmt.where(Run.campaign_id == campaign_id)
    if isinstance(state, (tuple, list, set, frozenset)):  # several states (`jobs --failed`)
        stmt = stmt.where(JobAttempt.state.in_(state))
    elif state is not None:
        stmt = stmt.where(JobAttempt.state == state)
    return [tuple(row) for row in s.execute(stmt.order_by(JobAttempt.id))]


def insert_many(s: Session, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """INSERT plain tuples (one value per `columns` entry) with one driver
    executemany on SQLite: the ORM's bulk insert builds and checks a parameter
    dict per row (10 s of a 100,000-run submit under profile). Values pass
    through each column type's own bind processor, so the stored bytes are the
    ORM path's. Other databases get Core's executemany (their drivers batch)."""
    if not rows:
        return
    conn = s.connection()
    dialect = conn.dialect
    if dialect.name != "sqlite":
        conn.execute(insert(table), [dict(zip(columns, row)) for row in rows])
        return
    procs = _processors(table, columns, dialect)
    quote = dialect.identifier_preparer.quote
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
           f"VALUES ({', '.join('?' for _ in columns)})")
    conn.exec_driver_sql(sql, [_processed(row, procs) for row in rows] if procs else [tuple(row) for row in rows])


def update_many(s: Session, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """UPDATE rows by primary key `id`: each row is the values of `columns`
    followed by the id; one driver executemany on SQLite (as insert_many)."""
    if not rows:
        return
    conn = s.connection()
    dialect = conn.dialect
    if dialect.name != "sqlite":
        conn.execute(update(table).where(table.c.id == bindparam("_id")),
                     [{**dict(zip(columns, row)), "_id": row[-1]} for row in rows])
        return
    procs = _processors(table, columns, dialect)
    quote = dialect.identifier_preparer.quote
    sql = f"UPDATE {quote(table.name)} SET {', '.join(f'{quote(c)} = ?' for c in columns)} WHERE id = ?"
    conn.exec_driver_sql(sql, [_processed(row, procs) for row in rows] if procs else [tuple(row) for row in rows])


def update_same(s: Session, table: Table, values: Mapping[str, Any], ids: Sequence[int], chunk: int = 10_000) -> None:
    """SET the same `values` on every row of `ids`: one statement per `chunk`
    ids, not one per row (the first sync of 100,000 pending jobs gives each
    the same pending reason). Values pass through the column types' bind
    processors, as in update_many."""
    conn = s.connection()
    dialect = conn.dialect
    names = list(values)
    if dialect.name != "sqlite":
        for i in range(0, len(ids), chunk):
            conn.execute(update(table).where(table.c.id.in_(list(ids[i:i + chunk]))).values(dict(values)))
        return
    bound = _processed([values[c] for c in names], _processors(table, names, dialect))  # the same for every chunk
    quote = dialect.identifier_preparer.quote
    assign = ", ".join(f"{quote(c)} = ?" for c in names)
    for i in range(0, len(ids), chunk):
        part = list(ids[i:i + chunk])
        sql = f"UPDATE {quote(table.name)} SET {assign} WHERE id IN ({', '.join('?' for _ in part)})"
        conn.exec_driver_sql(sql, (*bound, *part))


def stored_rows(s: Session, table: Table, columns: Sequence[str], ids: Collection[int],
                chunk: int = 10_000) -> dict[int, tuple[Any, ...]]:
    """id -> the driver's own values of `columns` (text for times and states
    on SQLite) of the rows with these ids: no SQLAlchemy result processor runs
    (re-reading 100,000 open attempts as ORM values cost seconds of a sync).
    Compare them with `stored_equal`; ids past SQLite's variable limit go in chunks."""
    conn = s.connection()
    quote = conn.dialect.identifier_preparer.quote
    cols = ", ".join(quote(c) for c in ("id", *columns))
    wanted = list(ids)
    out: dict[int, tuple[Any, ...]] = {}
    for i in range(0, len(wanted), chunk):
        part = wanted[i:i + chunk]
        if conn.dialect.name == "sqlite":
            rows: Any = conn.exec_driver_sql(
                f"SELECT {cols} FROM {quote(table.name)} WHERE id IN ({', '.join('?' for _ in part)})",
                tuple(part)).all()
        else:  # text(): untyped columns, so no result processors there either
            stmt = text(f"SELECT {cols} FROM {quote(table.name)} WHERE id IN :ids")
            rows = conn.execute(stmt.bindparams(bindparam("ids", expanding=True)), {"ids": part}).all()
        for row in rows:
            out[row[0]] = tuple(row[1:])
    return out


def stored_instant(value: Any) -> datetime | None:
    """A stored time as UTCDateTime returns it (aware UTC): SQLite's text
    ('2026-12-01 12:00:00.000000') or a driver's naive UTC datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def stored_equal(stored: Any, value: Any) -> bool:
    """Whether a driver's stored value (stored_rows) is `value`: times are
    compared as instants, a JobState with its stored name (a str enum)."""
    if isinstance(value, datetime):
        return stored_instant(stored) == value
    return bool(stored == value)


def _processed(row: Sequence[Any], procs: list[tuple[int, Any, dict[Any, Any]]]) -> tuple[Any, ...]:
    values = list(row)
    for i, proc, seen in procs:
        value = values[i]
        if value.__hash__ is None:  # a dict or list (JSON): processed each time
            values[i] = proc(value)
            continue
        # the same stamp, state or NULL in every row: processed once (by type too: 1 and True differ in JSON)
        key = (type(value), value)
        if key not in seen:
            seen[key] = proc(value)
        values[i] = seen[key]
    return tuple(values)


def _processors(table: Table, columns: Sequence[str], dialect: Any) -> list[tuple[int, Any, dict[Any, Any]]]:
    """(position, bind processor, memo) of each column whose type converts values."""
    out: list[tuple[int, Any, dict[Any, Any]]] = []
    for i, name in enumerate(columns):
        kind = table.c[name].type
        proc = kind.dialect_impl(dialect).bind_processor(dialect)
        # campaign.ledger.db makes every engine with SQLAlchemy's default JSON serializer (json.dumps)
        if proc is not None and isinstance(kind, JSON):
            proc = _json_text(proc)
        if proc is not None:
            out.append((i, proc, {}))
    return out


# json.dumps' own settings without its circular check (the JSON is plain data): the same text,
# ~15% less time for each of a 100,000-run submit's specs
_JSON_TEXT = json.JSONEncoder(check_circular=False).encode


def _json_text(proc: Any) -> Any:
    """A JSON column's bind processor (json.dumps of the value) for dicts and
    lists; None and SQLAlchemy's NULL markers still go to the column's own."""

    def process(value: Any) -> Any:
        return _JSON_TEXT(value) if type(value) in (dict, list) else proc(value)
    return process


def run_ids(s: Session, campaign_id: int) -> dict[str, int]:
    """Run key -> id of a campaign's runs (the ids of rows insert_many just wrote)."""
    return {key: rid for key, rid in s.execute(select(Run.key, Run.id).where(Run.campaign_id == campaign_id))}


def first_attempt_ids(s: Session, campaign_id: int) -> dict[int, int]:
    """Run id -> id of its attempt 1, for a campaign's runs."""
    stmt = (select(JobAttempt.run_id, JobAttempt.id).join(Run, Run.id == JobAttempt.run_id)
            .where(Run.campaign_id == campaign_id, JobAttempt.attempt == 1))
    return {rid: aid for rid, aid in s.execute(stmt)}


def write_changes(s: Session, table: Table, writes: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
    """Set only the columns that changed, `writes` holding (row id, its changed
    columns). Rows given the same values (the same pending reason, 100,000 at
    once at scale) share UPDATE ... WHERE id IN statements; the others, one
    driver executemany per set of columns."""
    same: dict[tuple[tuple[str, Any], ...], list[int]] = defaultdict(list)
    by_keys: dict[tuple[str, ...], list[list[Any]]] = defaultdict(list)
    for aid, diff in writes:
        items = tuple(sorted(diff.items()))
        if all(v.__hash__ is not None for _, v in items):  # missing_n is a list: written row by row
            same[items].append(aid)
        else:
            by_keys[tuple(k for k, _ in items)].append([v for _, v in items] + [aid])
    for items, ids in same.items():
        if len(ids) > 1:
            update_same(s, table, dict(items), ids)
        else:
            by_keys[tuple(k for k, _ in items)].append([v for _, v in items] + ids)
    for keys, group in by_keys.items():
        update_many(s, table, keys, group)
