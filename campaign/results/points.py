"""The report's summary (one row per measured point: medians over repeats,
their intervals, replicates) aggregated by DuckDB over the result files, so
that `report` over ten million rows never holds them in pandas (issue 26).

DuckDB groups the rows by point and replicate and sorts each group's times;
the order statistics and the replicate interval are then the analysis's own
(analysis.summary.with_order_statistics, analysis.replicates.between_medians)
over those sorted times, so the numbers are the row path's to the bit (DuckDB's
`median` interpolates differently in the last place). Only selections that
need nothing row by row take this path (`summary` says None otherwise): no
imported rows, no figures of merit, no multi-rank rows, no overlap notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from analysis.columns import BASE_GROUP_COLUMNS, OPTIONAL_GROUP_COLUMNS, SCALE_COLUMNS
from campaign.ledger import Ledger, files
from campaign.results import scan
from campaign.results.latest import Superseded, holder
from campaign.results.latest import find as superseded
from campaign.results.query import RowFilter, statement

# a point's key as the row read makes it (campaign.results.export._read: params "" where none)
_KEY = [*BASE_GROUP_COLUMNS, *(c for c in OPTIONAL_GROUP_COLUMNS if c not in SCALE_COLUMNS), "threads", "n"]
_EXPR = {"params": "coalesce(f.params, '')"}
_FIRST = ("flops", "bytes", "alloc_cpus")  # taken from the point's fastest repeat, as summarize does
_ROW_BY_ROW = ("f.params LIKE '%metric=%' OR f.extra LIKE '%\"ranks\"%' OR f.extra LIKE '%\"nodes\"%'")


def summary(led: Ledger, campaign: str | Sequence[str] | None, models: Any) -> tuple[Any, Superseded] | None:
    """analysis.summary.summarize of the usable rows of the latest identities
    (latest_frame's selection, cost columns by `models`) and what was left
    out; None where the rows are needed one by one (see the module doc)."""
    with led.session() as s:
        found = superseded(s, campaign, True, None)
        table = holder(s, found)
        where = replace(RowFilter(), without_runs=table) if table is not None else None
        try:
            if s.execute(statement(campaign, None, True, False, where, imported=True).limit(1)).first():
                return None
            paths, ids, values = scan.pointers(s, campaign, True, where, led.results_root)
        finally:
            if table is not None:
                table.drop(s.connection())
    ledger = dict(zip(scan.LEDGER, zip(*values, strict=True), strict=True)) if values else {}
    if not paths or any(v not in (None, "") for v in ledger["overlap"]) or any(
            v not in (None, 1) for c in scan.PLANNED_SCALE for v in ledger[c]):
        return None
    made = _aggregate(files.verified(paths), ids, ledger, models)
    return None if made is None else (made, found)


def _aggregate(paths: list[str], ids: list[int], ledger: dict[str, Any], models: Any) -> Any:
    import duckdb
    import pyarrow as pa

    from analysis.cost_model import add_cost_columns
    from analysis.replicates import add_between, between_medians
    from analysis.summary import with_order_statistics

    attempts = pa.table({"attempt_id": pa.array(ids, pa.int64()), "campaign": pa.array(ledger["campaign"], pa.string()),
                         "alloc_cpus": pa.array(ledger["alloc_cpus"], pa.float64()),
                         "replicate": pa.array(ledger["replicate"], pa.int64())})
    key = ", ".join(f'{_EXPR.get(c, f"f.{c}")} AS "{c}"' for c in _KEY)
    names = ", ".join(f'"{c}"' for c in _KEY)
    con = duckdb.connect()
    try:
        con.register("attempts", attempts)
        # per point and replicate: the times sorted, the fastest row (ties: the earlier row, as a stable sort)
        con.execute(f"""
            CREATE TEMP TABLE reps AS
            SELECT {key}, coalesce(a.campaign, '') AS campaign, coalesce(a.replicate, 0) AS replicate,
                   list_sort(list(t)) AS times, list_sort(list(t) FILTER (NOT isnan(t))) AS measured,
                   min((t, f.file_index, f.file_row_number)) AS first_key,
                   arg_min({{'flops': f.flops, 'bytes': f.bytes, 'alloc_cpus': a.alloc_cpus}},
                           (t, f.file_index, f.file_row_number)) AS first,
                   count(a.alloc_cpus) AS n_alloc,
                   count(*) AS n_rows, bool_or({_ROW_BY_ROW}) AS row_by_row
            FROM (SELECT *, file_index, file_row_number, coalesce(time_s, 'NaN'::DOUBLE) AS t FROM read_parquet($files, union_by_name = true)) f
                 JOIN attempts a USING (attempt_id)
            GROUP BY ALL""", {"files": paths})
        if con.sql("SELECT bool_or(row_by_row) FROM reps").fetchall()[0][0]:
            return None
        counts = con.sql("SELECT sum(n_alloc), sum(n_rows), "
                         "count(DISTINCT (campaign, replicate)) FROM reps").fetchall()[0]
        points = con.sql(f"""
            SELECT {names}, arg_min(first, first_key) AS first, list_sort(flatten(list(times))) AS times
            FROM reps GROUP BY ALL ORDER BY {names}""").to_arrow_table()
        reps = con.sql(f"SELECT {names}, measured FROM reps ORDER BY {names}, campaign, replicate").to_arrow_table()
    finally:
        con.close()
    assert counts is not None
    n_alloc, n_rows, keys = counts
    sorted_t, lengths = _flat(points.column("times"))
    first = points.column("first").combine_chunks()
    frame = points.drop_columns(["times", "first"]).to_pandas()
    for name in ("dtype", "d"):  # a column no row has is absent, as the row read leaves it (latest_frame)
        if frame[name].isna().all():
            frame = frame.drop(columns=name)
    for name in _FIRST:  # flops and bytes always (the cost columns), the allocation where recorded
        values = first.field(name).to_numpy(zero_copy_only=False).astype(float)
        if name != "alloc_cpus":
            frame[name] = values
        elif n_alloc:
            frame[name] = values if n_alloc < n_rows else values.astype("int64")
    cols = [c for c in _KEY if c in frame.columns]
    frame = add_cost_columns(frame, models)
    found = None
    if keys >= 2:
        rep_t, rep_n = _flat(reps.column("measured"))  # (pandas' median skips NaN)
        rep_frame = reps.drop_columns(["measured"]).to_pandas()[cols]
        rep_frame["median_s"] = _medians(rep_t, rep_n)
        found = between_medians(rep_frame, cols)
    return add_between(add_cost_columns(with_order_statistics(frame, sorted_t, lengths)), frame, found)


def _flat(column: Any) -> tuple[Any, Any]:
    """A list column's values (float64) and each list's length."""
    import numpy as np

    lists = column.combine_chunks()
    values = lists.flatten().to_numpy(zero_copy_only=False).astype(float)
    offsets = lists.offsets.to_numpy()
    return values, np.diff(offsets).astype(np.int64)


def _medians(sorted_t: Any, counts: Any) -> Any:
    """Each run's median, as pandas' (the middle value, or the mean of the
    two; NaN for an empty run)."""
    import numpy as np

    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    padded = np.append(sorted_t, np.nan)  # (an empty run at the end points past the values)
    middle = (padded[starts + np.maximum(counts - 1, 0) // 2] + padded[starts + counts // 2]) / 2
    return np.where(counts > 0, middle, np.nan)


__all__ = ["summary"]
