"""The report's summary (one row per measured point: medians over repeats,
their intervals, replicates) over the result files, so that `report` over ten
million rows never holds them in pandas: the files joined to their attempts
are the relation that analysis.point_stats's SQL groups, the one text that
summarize runs over a DataFrame, so the numbers are the same whichever way
the rows came. Only selections that need nothing row by row take this path
(`summary` says None otherwise): no imported rows, no figures of merit, no
rows of more than one rank or node, no overlap notes; the report then reads
the rows and summarize runs the same SQL over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from campaign.ledger import Ledger, file_scan, files
from campaign.ledger.result_schema import SCHEMA_VERSION
from campaign.results import scan
from campaign.results.latest import Superseded, holder
from campaign.results.latest import find as superseded
from campaign.results.query import RowFilter
from resultschema.columns import BASE_GROUP_COLUMNS, OPTIONAL_GROUP_COLUMNS, SCALE_COLUMNS

# a point's key as the row read makes it (campaign.results.export._read: params "" where none)
_KEY = [*BASE_GROUP_COLUMNS, *(c for c in OPTIONAL_GROUP_COLUMNS if c not in SCALE_COLUMNS), "threads", "n"]
_EXPR = {"params": "coalesce(f.params, '')"}
# taken from a point's fastest repeat (ties: the earlier row), as summarize takes them
_FIRST = "{'flops': flops, 'bytes': bytes, 'alloc_cpus': alloc_cpus}"
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
    import pyarrow as pa
    import pyarrow.compute as pc

    from analysis.cost_model import add_cost_columns
    from analysis.duck_engine import cursor
    from analysis.point_stats import finish, reps_sql
    from analysis.replicates import add_between
    from analysis.summary import with_statistics

    attempts = pa.table({"attempt_id": pa.array(ids, pa.int64()), "rep": _replicate_codes(ledger),
                         "alloc_cpus": pa.array(ledger["alloc_cpus"], pa.float64())})
    key = ", ".join(f'{_EXPR.get(c, f"f.{c}")} AS "{c}"' for c in _KEY)
    # files all of the current schema: nothing to map (the row-by-row check would decode every row's extras)
    current = min(ledger[scan.SCHEMA]) >= SCHEMA_VERSION
    # each row: its point, replicate, time (NaN where none) and place (file, then row: one integer, which
    # compares faster than a pair), what its fastest repeat gives
    rows = f"""(SELECT {key}, a.rep, coalesce(f.time_s, 'NaN'::DOUBLE) AS t,
                       (f.file_index::BIGINT << 32) + f.file_row_number AS o,
                       f.flops, f.bytes, a.alloc_cpus, {_ROW_BY_ROW} AS row_by_row
                FROM {file_scan.scan_sql("file_index, file_row_number", current)} f JOIN attempts a USING (attempt_id))"""
    con = cursor()
    try:
        con.register("attempts", attempts)
        checks = "bool_or(row_by_row) AS row_by_row, count(alloc_cpus) AS n_alloc"
        con.execute(f"CREATE TEMP TABLE reps AS {reps_sql(rows, _KEY, _FIRST, checks)}", {"files": paths})
        (row_by_row, n_alloc, n_rows, keys), = con.sql(
            "SELECT bool_or(row_by_row), sum(n_alloc), sum(m), count(DISTINCT rep) FROM reps").fetchall()
        if row_by_row:
            return None
        stats = finish(con, _KEY, "reps", keys, pooled=False)  # add_between below replaces them
    finally:
        con.close()
    made = stats.points
    frame = made.select(_KEY).to_pandas()
    for name in ("dtype", "d"):  # a column no row has is absent, as the row read leaves it (latest_frame)
        if frame[name].isna().all():
            frame = frame.drop(columns=name)
    first = made.column("first")
    frame["flops"], frame["bytes"] = (pc.struct_field(first, c).to_numpy(zero_copy_only=False).astype(float)
                                      for c in ("flops", "bytes"))
    if n_alloc:  # the allocation where recorded; whole numbers where every row has one
        alloc = pc.struct_field(first, "alloc_cpus").to_numpy(zero_copy_only=False).astype(float)
        frame["alloc_cpus"] = alloc if n_alloc < n_rows else alloc.astype("int64")
    found = None if stats.reps is None else _between(stats.reps, frame[[c for c in _KEY if c in frame.columns]])
    median, lo, hi, m = (made.column(c).to_numpy() for c in ("median_s", "lo", "hi", "m"))
    frame = add_cost_columns(frame, models)
    return add_between(add_cost_columns(with_statistics(frame, median, lo, hi, m)), frame, found)


def _between(reps: Any, keys: Any) -> Any:
    """analysis.replicates.between_medians of the replicates' medians, grouped
    by their point's row `p` (one integer, not the point's columns), with the
    point's columns from `keys` (the points' frame: every point has a replicate)."""
    from analysis.replicates import between_medians

    found = between_medians(reps.select(["p", "median_s"]).to_pandas(), ["p"])
    out = keys.iloc[found.pop("p").to_numpy()].reset_index(drop=True)
    for name in found.columns:
        out[name] = found[name].to_numpy()
    return out


def _replicate_codes(ledger: dict[str, Any]) -> Any:
    """Each attempt's independent job set: its (campaign, replicate) as a dense
    code in their order, as analysis.point_stats.replicate_codes numbers a
    DataFrame's (a run planned before replicates: replicate 0)."""
    import pyarrow as pa

    pairs = list(zip(ledger["campaign"], ledger["replicate"], strict=True))
    order = {pair: code for code, pair in enumerate(sorted({(c or "", r or 0) for c, r in pairs}))}
    return pa.array([order[c or "", r or 0] for c, r in pairs], pa.int64())


__all__ = ["summary"]
