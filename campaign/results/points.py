"""The report's summary (one row per measured point: medians over repeats,
their intervals, replicates) aggregated by DuckDB over the result files, so
that `report` over ten million rows never holds them in pandas.

DuckDB groups the rows by point and replicate, sorts each group's times and
indexes them as the row path does (the median 0.5 * (x_a + x_b), the interval
[x_(r), x_(m-r+1)] with r from analysis.summary.rank_and_coverage, each
replicate's median as pandas' (x_a + x_b) / 2): the same float operations, so
the numbers are the row path's to the bit (DuckDB's own `median` interpolates
and differs in the last place). The summary columns are then
analysis.summary.with_statistics's and the replicate interval
analysis.replicates.between_medians's, as from rows. Only selections that
need nothing row by row take this path (`summary` says None otherwise): no
imported rows, no figures of merit, no rows of more than one rank or node, no
overlap notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from campaign.ledger import Ledger, file_scan, files
from campaign.results import scan
from campaign.results.latest import Superseded, holder
from campaign.results.latest import find as superseded
from campaign.results.query import RowFilter
from resultschema.columns import BASE_GROUP_COLUMNS, OPTIONAL_GROUP_COLUMNS, SCALE_COLUMNS

# a point's key as the row read makes it (campaign.results.export._read: params "" where none)
_KEY = [*BASE_GROUP_COLUMNS, *(c for c in OPTIONAL_GROUP_COLUMNS if c not in SCALE_COLUMNS), "threads", "n"]
_EXPR = {"params": "coalesce(f.params, '')"}
# taken from a point's fastest repeat, as summarize does
_FIRST = "{'flops': f.flops, 'bytes': f.bytes, 'alloc_cpus': a.alloc_cpus}"
_HUGE = 1e300  # times above it take the row path (see _aggregate)
# a row of more than one rank or node (the typed columns, an older file's mapped by file_scan.scan_sql: a row
# that says 1 is one of the row path's too), or of a figure of merit
_NAMES_SCALE = " OR ".join(f"coalesce(f.{k}, 1) <> 1" for k in SCALE_COLUMNS)
_ROW_BY_ROW = f"f.params LIKE '%metric=%' OR f.metric IS NOT NULL OR {_NAMES_SCALE}"


def summary(led: Ledger, campaign: str | Sequence[str] | None, models: Any) -> tuple[Any, Superseded] | None:
    """analysis.summary.summarize of the usable rows of the latest identities
    (latest_frame's selection, cost columns by `models`) and what was left
    out; None where the rows are needed one by one (see the module doc)."""
    with led.session() as s:
        found = superseded(s, campaign, True, None)
        table = holder(s, found)
        where = replace(RowFilter(), without_runs=table) if table is not None else None
        try:
            paths, ids, values = scan.pointers(s, campaign, True, where, led.results_root)
        finally:
            if table is not None:
                table.drop(s.connection())
    # (sets: one pass in C over 200,000 attempts, not a Python test per value; 1 == 1.0 == True as before)
    if not paths or min(ids) < 0 or not set(values["overlap"]) <= {None, ""} or any(  # (< 0: imported rows)
            not set(values[c]) <= {None, 1} for c in scan.PLANNED_SCALE):
        return None
    made = _aggregate(files.verified(paths), ids, values, models)
    return None if made is None else (made, found)


def _aggregate(paths: list[str], ids: list[int], ledger: dict[str, Any], models: Any) -> Any:
    import duckdb
    import pyarrow as pa

    from analysis.cost_model import add_cost_columns
    from analysis.replicates import add_between, between_medians
    from analysis.summary import rank_and_coverage, with_statistics

    attempts = pa.table({"attempt_id": pa.array(ids, pa.int64()), "campaign": pa.array(ledger["campaign"], pa.string()),
                         "alloc_cpus": pa.array(ledger["alloc_cpus"], pa.float64()),
                         "replicate": pa.array(ledger["replicate"], pa.int64())})
    key = ", ".join(f'{_EXPR.get(c, f"f.{c}")} AS "{c}"' for c in _KEY)
    names = ", ".join(f'"{c}"' for c in _KEY)
    con = duckdb.connect()
    try:
        con.register("attempts", attempts)
        # per point and replicate: the times sorted (NaN last: the k measured ones first), the fastest repeat
        # (ties: the earlier row, as the row path's stable sort) with its order and its flops, bytes and
        # allocation (as summarize takes them), whether a row needs the row path
        con.execute(f"""
            CREATE TEMP TABLE reps AS
            SELECT {key}, coalesce(a.campaign, '') AS campaign, coalesce(a.replicate, 0) AS replicate,
                   list_sort(list(f.t)) AS times, count(*) AS m, count(*) FILTER (NOT isnan(f.t)) AS k,
                   min(f.o) AS o, arg_min({_FIRST}, f.o) AS first, count(a.alloc_cpus) AS n_alloc,
                   max(f.t) AS top, bool_or({_ROW_BY_ROW}) AS row_by_row
            FROM (SELECT *, coalesce(time_s, 'NaN'::DOUBLE) AS t,
                         (coalesce(time_s, 'NaN'::DOUBLE), file_index, file_row_number) AS o
                  FROM {file_scan.scan_sql("file_index, file_row_number")}) f
                 JOIN attempts a USING (attempt_id)
            GROUP BY ALL""", {"files": paths})
        # (beyond HUGE, 0.5 * (a + b) overflows where the row path's arithmetic might not: the row path)
        (row_by_row, top, n_alloc, n_rows, keys), = con.sql(
            "SELECT bool_or(row_by_row), max(top), sum(n_alloc), sum(m), count(DISTINCT (campaign, replicate)) "
            "FROM reps").fetchall()
        if row_by_row or not top < _HUGE:
            return None
        if keys >= 2:  # a point's times: its replicates' lists, merged; its fastest repeat: theirs, fastest
            con.execute(f"CREATE TEMP TABLE pts AS SELECT {names}, list_sort(flatten(list(times))) AS t, "
                        f"sum(m)::BIGINT AS m, arg_min(first, o) AS first FROM reps GROUP BY ALL")
        else:  # one campaign and replicate: each point is one group of reps, its list sorted already
            con.execute(f"CREATE TEMP TABLE pts AS SELECT {names}, times AS t, m::BIGINT AS m, first FROM reps")
        counts = [m for (m,) in con.sql("SELECT DISTINCT m FROM pts").fetchall()]
        con.register("ranks", pa.table({"m": pa.array(counts, pa.int64()),
                                        "r": pa.array([rank_and_coverage(m)[0] for m in counts], pa.int64())}))
        made = con.sql(f"""
            SELECT {names}, (t[(m - 1) // 2 + 1] + t[m // 2 + 1]) * 0.5 AS median_s, t[r] AS lo, t[m - r + 1] AS hi,
                   m, first.flops AS flops, first.bytes AS bytes, first.alloc_cpus AS alloc_cpus
            FROM pts JOIN ranks USING (m) ORDER BY {names}""").to_arrow_table().to_pandas()
        reps = None
        if keys >= 2:  # replicates: each one's median as pandas' (the middle value, or the mean of the two)
            reps = con.sql(f"""
                SELECT {names}, CASE WHEN k = 0 THEN 'NaN'::DOUBLE WHEN k % 2 = 1 THEN times[k // 2 + 1]
                                     ELSE (times[k // 2] + times[k // 2 + 1]) / 2 END AS median_s
                FROM reps ORDER BY {names}, campaign, replicate""").to_arrow_table().to_pandas()
    finally:
        con.close()
    median, lo, hi, m = (made.pop(c).to_numpy() for c in ("median_s", "lo", "hi", "m"))
    frame = made
    for name in ("dtype", "d"):  # a column no row has is absent, as the row read leaves it (latest_frame)
        if frame[name].isna().all():
            frame = frame.drop(columns=name)
    frame["flops"], frame["bytes"] = (frame[c].astype(float) for c in ("flops", "bytes"))
    alloc = frame.pop("alloc_cpus").astype(float)
    if n_alloc:  # the allocation where recorded; whole numbers where every row has one
        frame["alloc_cpus"] = alloc if n_alloc < n_rows else alloc.astype("int64")
    cols = [c for c in _KEY if c in frame.columns]
    frame = add_cost_columns(frame, models)
    found = None if reps is None else between_medians(reps[cols + ["median_s"]], cols)
    return add_between(add_cost_columns(with_statistics(frame, median, lo, hi, m)), frame, found)


__all__ = ["summary"]
