"""Pure analysis of benchmark results: pandas DataFrames in, DataFrames out.

This package never imports `campaign` (the dependency points one way:
campaign -> analysis). The names below are loaded on first use, so that
`resultschema.columns` (the schema, no pandas) can be read cheaply. `ratios` and
`roofline` are both modules and functions: import those functions from
their modules (`from analysis.ratios import ratios`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS: dict[str, str] = {
    "add_cost_columns": "cost_model", "flops": "cost_model", "min_bytes": "cost_model",
    "METRIC_KEYS": "metrics", "all_metrics": "metrics", "filter_cluster": "metrics", "metrics_json": "metrics",
    "doubling_penalty": "penalties", "variant_ratio": "ratios",
    "ReportFiles": "report", "render_report": "report",
    "fitted_exponents": "scaling", "local_exponents": "scaling",
    "SchemaError": "schema", "group_columns": "schema", "validate_results": "schema",
    "summarize": "summary", "best_threads": "threads", "crossovers": "threads", "speedup": "threads",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    return getattr(import_module(f"analysis.{module}"), name)
