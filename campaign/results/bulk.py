"""Result rows inserted in bulk: one prepared INSERT handed to the driver's
executemany with plain tuples.

SQLAlchemy's ORM bulk insert builds and checks a parameter set per row (13 s
per 100,000 rows under profile, most of a sync's ingest time); the driver
needs only the tuples. Values go through each column type's own bind
processor (the JSON `extra` column as SQLAlchemy would write it), so the
stored bytes are the same as the ORM path's. On other databases than SQLite
the Core executemany is used (its drivers batch it themselves).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from campaign.ledger import ResultRow

TABLE: Table = ResultRow.__table__  # type: ignore[assignment]  # a mapped class's table is a Table
COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE.columns if c.name != "id")


def insert_results(s: Session, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT these result rows (dicts keyed by column name; a missing key is NULL)."""
    if not rows:
        return
    conn = s.connection()
    dialect = conn.dialect
    if dialect.name != "sqlite":
        conn.execute(insert(TABLE), list(rows))
        return
    procs = {name: p for name in COLUMNS if (p := TABLE.c[name].type._cached_bind_processor(dialect)) is not None}
    plain = [c for c in COLUMNS if c not in procs]  # values as they are, taken in one C call per row
    processed = list(procs)
    quote = dialect.identifier_preparer.quote
    sql = (f"INSERT INTO {quote(TABLE.name)} ({', '.join(quote(c) for c in plain + processed)}) "
           f"VALUES ({', '.join('?' for _ in COLUMNS)})")
    take = itemgetter(*plain)
    convert = [(name, procs[name]) for name in processed]
    data = []
    for row in rows:
        try:
            values = take(row)
        except KeyError:  # a row without some column: NULL there
            values = tuple(row.get(c) for c in plain)
        data.append((*values, *[proc(row.get(name)) for name, proc in convert]))
    conn.exec_driver_sql(sql, data)
