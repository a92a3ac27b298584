"""A point's summary (median over repeats, its order-statistic interval, the
fastest repeat, the replicates' medians) has one implementation: the SQL of
analysis/point_stats.py, which DuckDB runs over a DataFrame of rows
(summarize) or over the result files joined to their attempts (the report
over a ledger). A second copy (the numpy lexsort twin, pandas' grouped
median of each replicate) was kept equal to it by tests and is how two paths
drift: found statically, as an order statistic taken in a summary module, SQL
order statistics outside point_stats.py, a new module taking medians of rows,
or a removed twin's name."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("campaign", "analysis", "resultschema")
THE_SQL = "analysis/point_stats.py"
SUMMARY = ("analysis/summary.py", "analysis/replicates.py", "campaign/results/points.py", THE_SQL)
# numpy's and pandas' ways to sort or select an order statistic
ORDERING = frozenset({"lexsort", "argsort", "sort", "sort_values", "median", "nanmedian", "partition",
                      "argpartition", "quantile", "nanquantile", "percentile", "nanpercentile", "rank"})
SQL_ORDER = re.compile(r"\b(list_sort|array_sort|quantile|quantile_cont|quantile_disc|median|percentile_cont|"
                       r"percentile_disc)\(", re.IGNORECASE)
# Medians of rows that are not a point's summary: each analysis reads its rows one by one.
MEDIANS_ELSEWHERE = {
    "analysis/merit.py": "figures of merit: the value's median per configuration, nodes and ranks",
    "analysis/frames.py": "figures of merit: the value's median per point (merit, metric_scaling), without overflow",
    "analysis/rank_scaling.py": "multi-rank series: the median per ranks and nodes and its bootstrap",
    "analysis/counters.py": "hardware counters: the median time of a profiled configuration",
    "analysis/advise.py": "a pilot's time per configuration, summed into a cost",
    "analysis/display.py": "the typical magnitude of a column, for its display unit",
    "analysis/sawtooth.py": "a rolling median over n, the trend under a sawtooth",
    "campaign/commands/repeat_plan.py": "the pilot jobs' costs (statistics.median of a few numbers)",
}
TWINS = frozenset({"with_order_statistics", "interval_ranks", "replicate_keys"})


@cache
def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(REPO)): ast.parse(p.read_text(encoding="utf-8"))
            for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))}


def _attributes(tree: ast.Module) -> set[str]:
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def _strings(tree: ast.Module) -> list[str]:
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _median_aggregations(tree: ast.Module) -> bool:
    """pandas' "median" by name: `.agg(x=("time_s", "median"))`, `.transform("median")`."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in ("agg", "aggregate", "transform", "apply")
               and any(isinstance(c, ast.Constant) and c.value == "median" for c in ast.walk(node))
               for node in ast.walk(tree))


def test_the_summary_modules_take_no_order_statistic_of_their_own() -> None:
    modules = _modules()
    found = {path: sorted(_attributes(modules[path]) & ORDERING) for path in SUMMARY}
    assert not any(found.values()), f"an order statistic beside analysis/point_stats.py's SQL: {found}"


def test_sql_order_statistics_are_written_once() -> None:
    found = sorted(path for path, tree in _modules().items() if path != THE_SQL
                   and any(SQL_ORDER.search(text) for text in _strings(tree)))
    assert not found, f"SQL sorting or selecting order statistics outside {THE_SQL}: {found}"
    assert any(SQL_ORDER.search(text) for text in _strings(_modules()[THE_SQL]))


def test_no_new_module_takes_medians_of_rows() -> None:
    """A median (numpy, pandas, statistics, or the "median" aggregation) only
    in the listed analyses, which are not a point's summary."""
    takers = set()
    for path, tree in _modules().items():
        if {"median", "nanmedian"} & _attributes(tree) or _median_aggregations(tree):
            takers.add(path)
    assert takers <= set(MEDIANS_ELSEWHERE), (
        f"medians taken outside analysis/point_stats.py: {sorted(takers - set(MEDIANS_ELSEWHERE))}; "
        "a point's summary is summarize's (analysis.point_stats)")


def test_no_twin_function_comes_back() -> None:
    found = [f"{path}:{node.lineno} {node.name}" for path, tree in _modules().items() for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in TWINS]
    assert not found, f"a function named as a removed twin of the summary's order statistics: {found}"
