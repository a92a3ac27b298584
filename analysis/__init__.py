"""Pure analysis of benchmark results: pandas DataFrames in, DataFrames out.

This package never imports `campaign` (the dependency points one way:
campaign -> analysis). Heavy plotting imports live inside the report functions.
"""

from analysis.cost_model import add_cost_columns, flops, min_bytes
from analysis.metrics import METRIC_KEYS, all_metrics, filter_cluster, metrics_json
from analysis.penalties import doubling_penalty
from analysis.ratios import ratios, variant_ratio
from analysis.report import ReportFiles, render_report
from analysis.roofline import roofline
from analysis.scaling import fitted_exponents, local_exponents
from analysis.schema import SchemaError, group_columns, validate_results
from analysis.summary import summarize
from analysis.threads import best_threads, crossovers, speedup

__all__ = [
    "METRIC_KEYS", "ReportFiles", "SchemaError", "add_cost_columns", "all_metrics", "best_threads",
    "crossovers", "doubling_penalty", "filter_cluster", "fitted_exponents", "flops",
    "group_columns", "local_exponents", "metrics_json", "min_bytes", "ratios", "render_report",
    "roofline", "speedup", "summarize", "validate_results", "variant_ratio",
]
