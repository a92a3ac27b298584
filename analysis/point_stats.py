"""The order statistics of every measured point, as one SQL text that DuckDB
runs over whichever relation holds the rows: a DataFrame of rows
(analysis.summary.summarize, analysis.replicates.replicate_medians) or the
result files joined to their attempts (campaign.results.points: the report
over a ledger, which never holds the rows in pandas). One text, so that a
point's median cannot depend on where its rows were read from.

The relation gives each row its point (the `cols`), its replicate key `rep`
(one independent job set: analysis.replicates), its time `t` (NaN where
none: sorted after every time) and its order `o` (ties of `t` go to the
smaller `o`: the earlier row). Per point, from its m times sorted:
- the median 0.5 * (x_((m+1)//2) + x_(m//2+1)) (halves summed where the sum
  of two finite values overflows) and the interval
  [x_(r), x_(m-r+1)], r from analysis.summary.rank_and_coverage;
- `first`: what the caller keeps of its fastest row (ties: the earlier row).
Per replicate: its median over the times it measured (NaN skipped: the
middle value, or the mean of the two middle ones), its repeats and, where
asked, the mean and sample variance of the logs of its positive times.

Why lists sorted per group and not DuckDB's `median`: the interval's ranks
depend on each point's count, and `median` interpolates (its last bit
differs from the mean of the two middle values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from analysis.dist import sign_test_rank
from analysis.duck_engine import cursor
from analysis.frames import group_codes
from analysis.schema import group_columns

REPLICATE = "replicate"


@cache
def rank_and_coverage(m: int) -> tuple[int, float]:
    """Order-statistic rank r (1-based) of the interval and its exact coverage."""
    best, coverage = sign_test_rank(m, 0.05)
    return best, max(coverage, 0.0)


@dataclass(frozen=True)
class PointStats:
    """`points`: per point, in the order of its columns (NULLs last): the
    point's columns, `median_s`, `lo`, `hi`, `m` (repeats), `first`.
    `reps`: per point and replicate, in that order: `p` (the point's row in
    `points`), `rep`, `median_s`, `repeats` (and `log_mean`, `log_var` where
    asked); None where not asked for and the rows hold one replicate key."""

    points: Any
    reps: Any | None


def _names(cols: Sequence[str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def reps_sql(source: str, cols: Sequence[str], first: str, checks: str = "") -> str:
    """The rows of `source` per point and replicate (the relation `reps` of
    `finish`): the times sorted, `m`, the measured `k`, the fastest row's
    `t`, `o` and `first` as one struct, `fastest` (one aggregate: its order is
    that of (t, o), and o is unique); `checks`: more aggregates over the rows,
    for the caller."""
    extra = f", {checks}" if checks else ""
    return f"""
        SELECT {_names(cols)}, rep, list_sort(list(t)) AS times, count(*)::BIGINT AS m,
               count(*) FILTER (NOT isnan(t))::BIGINT AS k, min({{'t': t, 'o': o, 'first': {first}}}) AS fastest
               {extra}
        FROM {source} GROUP BY ALL"""


def wants_reps(keys: int, replicates: bool | None) -> bool:
    """Whether `finish` makes the per-replicate medians: always (True), or only
    where the rows hold two replicate keys or more (None)."""
    return bool(replicates or (replicates is None and keys >= 2))


def finish(con: Any, cols: Sequence[str], reps: str, keys: int, counts: Sequence[int] | None = None, *,
           replicates: bool | None = None, moments: bool = False, pooled: bool = True) -> PointStats:
    """The statistics of the points of `reps` (reps_sql's relation: a table of
    `con`, or its statement in parentheses) over `keys` replicate keys in all.
    `counts`: the points' numbers of rows where known (else asked of the
    points). `replicates`: see wants_reps. Two shapes: where the replicate
    medians are wanted (`reps` then a table: read twice) or the counts are
    unknown, the points are a table numbered in their order, which numbers the
    replicates' rows (`p`: a join on one integer, not on the point's columns);
    else one statement (a 60-row frame pays DuckDB's ~1 ms per statement).
    `pooled` False: a point of two replicates or more gets no median and
    interval of its rows pooled (NULL): for callers that replace them by the
    between-replicate ones (analysis.replicates.add_between), which is every
    such point, so its rows are never merged and sorted for nothing."""
    names = _names(cols)
    want_reps = wants_reps(keys, replicates)
    if keys >= 2:  # a point's times: its replicates' lists merged; its fastest row: theirs, fastest
        merged = "list_sort(flatten(list(times)))" if pooled else "CASE WHEN count(*) = 1 THEN first(times) END"
        pts = (f"SELECT {names}, {merged} AS t, sum(m)::BIGINT AS m, "
               f"struct_extract(min(fastest), 'first') AS first FROM {reps} GROUP BY ALL")
    else:  # one replicate key: each point is one group of reps, its list sorted already
        pts = f"SELECT {names}, times AS t, m, struct_extract(fastest, 'first') AS first FROM {reps}"
    stats = f"""SELECT {names}, {_mid("t[(m - 1) // 2 + 1]", "t[m // 2 + 1]")} AS median_s, t[r] AS lo,
                       t[m - r + 1] AS hi, m, first
                FROM pts JOIN ranks USING (m)"""
    if counts is not None and not want_reps:
        _ranks(con, counts)
        return PointStats(con.sql(f"WITH pts AS ({pts}) {stats} ORDER BY {names}").to_arrow_table(), None)
    con.execute(f"CREATE TEMP TABLE pts AS SELECT *, row_number() OVER (ORDER BY {names}) - 1 AS p FROM ({pts})")
    _ranks(con, [m for (m,) in con.sql("SELECT DISTINCT m FROM pts").fetchall()] if counts is None else counts)
    points = con.sql(f"{stats} ORDER BY p").to_arrow_table()
    if not want_reps:
        return PointStats(points, None)
    logs = "list_transform(list_filter(r.times, lambda x: x > 0 AND NOT isnan(x)), lambda x: ln(x))"
    more = (f", coalesce(list_aggregate({logs}, 'avg'), 'NaN'::DOUBLE) AS log_mean, "
            f"coalesce(list_aggregate({logs}, 'var_samp'), 'NaN'::DOUBLE) AS log_var") if moments else ""
    same = " AND ".join(f'r."{c}" IS NOT DISTINCT FROM pts."{c}"' for c in cols)  # (a NULL key is a value)
    made = con.sql(f"""
        SELECT p, rep, CASE WHEN k = 0 THEN 'NaN'::DOUBLE WHEN k % 2 = 1 THEN r.times[k // 2 + 1]
                            ELSE {_mid("r.times[k // 2]", "r.times[k // 2 + 1]")} END AS median_s, r.m AS repeats {more}
        FROM {reps} r JOIN pts ON {same} ORDER BY p, rep""").to_arrow_table()
    return PointStats(points, made)


def _mid(a: str, b: str) -> str:
    """The mean of two middle values, 0.5 * (a + b); where a + b overflows
    though both are finite (two figures near 1.8e308), 0.5 * a + 0.5 * b,
    which is then the same number without the overflow (halving is exact
    there, far from the subnormals where it would not be)."""
    return f"CASE WHEN isinf({a} + {b}) AND isfinite({a}) AND isfinite({b}) THEN {a} * 0.5 + {b} * 0.5 ELSE ({a} + {b}) * 0.5 END"


def _ranks(con: Any, counts: Sequence[int]) -> None:
    """The table `ranks`: each count m of repeats and its interval's rank r."""
    import pyarrow as pa

    con.register("ranks", pa.table({"m": pa.array(counts, pa.int64()),
                                    "r": pa.array([rank_and_coverage(int(m))[0] for m in counts], pa.int64())}))


def replicate_codes(results: pd.DataFrame) -> np.ndarray:
    """Which independent job set each row belongs to, as dense codes in the
    order of the keys: the replicate number within its campaign (replicate 0
    of two campaigns pooled in one report are two jobs, not one). Rows
    without a `replicate` column are replicate 0."""
    number = results[REPLICATE].to_numpy() if REPLICATE in results else np.zeros(len(results), dtype="int64")
    keys = pd.DataFrame({"r": number})
    if "campaign" in results and results["campaign"].nunique(dropna=False) > 1:
        keys.insert(0, "c", results["campaign"].astype(str).to_numpy())
    return group_codes(keys, list(keys.columns))[0]


def point_columns(results: pd.DataFrame) -> list[str]:
    """A point: the group key, threads and n."""
    return group_columns(results) + ["threads", "n"]


def of_frame(results: pd.DataFrame, replicates: bool | None = None, moments: bool = False,
             pooled: bool = True) -> PointStats:
    """`finish` over a DataFrame of rows: each point is its columns' dense
    code `code` (analysis.frames.group_codes: missing values a value of their
    own, sorted last) and `first` its fastest row's position in `results`."""
    import pyarrow as pa

    codes, _ = group_codes(results, point_columns(results))
    rep = replicate_codes(results)
    times = results["time_s"].to_numpy(dtype=float, na_value=np.nan)
    rows = pa.table({"code": pa.array(codes, pa.int64()), "rep": pa.array(rep, pa.int64()),
                     "t": pa.array(times, pa.float64()), "o": pa.array(np.arange(len(results)), pa.int64())})
    keys = len(np.unique(rep))
    grouped = reps_sql("rows", ["code"], "o")
    con = cursor()
    try:
        con.register("rows", rows)
        if wants_reps(keys, replicates):  # read twice by finish: made once
            con.execute(f"CREATE TEMP TABLE reps AS {grouped}")
            grouped = "reps"
        else:
            grouped = f"({grouped})"
        return finish(con, ["code"], grouped, keys, np.unique(np.bincount(codes)).tolist(),
                      replicates=replicates, moments=moments, pooled=pooled)
    finally:
        con.close()
