"""A ledger's results as SQL in DuckDB: `result` (every row of the result
files, job and imported, hash-checked) beside the ledger's tables
(`campaign`, `run`, `job_attempt`, `result_file`, ...) as they are at the
call. For a user's own queries (docs/results.md) and the tests' look at what
was stored; the report itself reads through campaign.results.scan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Enum, select

from campaign.ledger import Campaign, Ledger, ResultFile, file_scan, files, result_schema
from campaign.ledger.models import Base


def connect(led: Ledger) -> Any:
    """An in-memory DuckDB connection holding the views above."""
    import duckdb

    con = duckdb.connect()
    with led.session() as s:
        for name, table in Base.metadata.tables.items():  # every ledger table, as it is now
            rows = s.connection().execute(select(table)).all()
            con.register(f"_{name}", _frame(table, rows))
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM _{name}")
        pointers = s.execute(select(ResultFile.campaign_id, Campaign.workdir, ResultFile.path, ResultFile.sha256)
                             .outerjoin(Campaign, Campaign.id == ResultFile.campaign_id).order_by(ResultFile.id)).all()
    unique = {(files.locate(files.pointer_homes(led.results_root, cid, wd), p), h): None for cid, wd, p, h in pointers}
    paths = files.verified(list(unique))  # (a file holds the attempts of one ingest batch: read once)
    if not paths:  # (no file yet: the columns of one, no row)
        con.register("_empty", result_schema.arrow_schema().empty_table())
    # (a view takes no parameters: the paths as an SQL list of text)
    listed = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
    relation = file_scan.scan_sql().replace("$files", listed) if paths else "(SELECT *, NULL::BIGINT AS file_index FROM _empty)"
    # each row's extra object as JSON text, whichever column of its file holds it (file_scan.EXTRA_SQL)
    con.execute(f"CREATE VIEW result AS SELECT * EXCLUDE (extras, file_index) REPLACE ({file_scan.EXTRA_SQL} AS extra) FROM {relation}")
    return con


def _frame(table: Any, rows: Sequence[Any]) -> Any:
    """A table's rows as DuckDB takes them: JSON as its text, states as their names."""
    import pandas as pd

    frame = pd.DataFrame.from_records([tuple(r) for r in rows], columns=[c.name for c in table.columns])
    for column in table.columns:
        values = frame[column.name].astype(object)
        if isinstance(column.type, JSON):
            frame[column.name] = values.map(lambda v: None if v is None else json.dumps(v))
        elif isinstance(column.type, Enum):
            frame[column.name] = values.map(lambda v: None if v is None else getattr(v, "value", v))
    return frame
