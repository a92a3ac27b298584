"""The figures of merit in `report --json`: the medians (figures_of_merit),
each figure's exponent over n (figure_exponents), its speedup over
threads, ranks and nodes (figure_scaling), its ratios between values of
one dimension (figure_ratios), its serial fraction (figure_serial_fractions)
and crossovers over n (figure_crossovers), as plain JSON values.
The report's tables of the same figures are analysis/merit.py's.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from analysis import metric_scaling
from analysis.merit import figure_frame, has_figures, medians
from analysis.metric_fits import figure_crossovers, serial_fractions
from analysis.metric_ratios import figure_ratios
from analysis.metrics import to_records


def figures_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figures_of_merit: the medians, one record per
    configuration, figure, threads and n ([] without figures of merit)."""
    if not has_figures(results):
        return []
    rows = results if cluster is None else results[results["cluster"].astype(str) == cluster]
    return to_records(medians(rows))


def exponents_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figure_exponents: each figure's fitted exponent over n
    (analysis/metric_scaling.py; [] without figures or without two sizes)."""
    if not has_figures(results):
        return []
    rows = results if cluster is None else results[(results["cluster"].astype(str) == cluster).to_numpy()]
    return to_records(metric_scaling.exponents(figure_frame(rows)))


def scaling_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figure_scaling: each figure's speedup and efficiency
    over threads, ranks and nodes (analysis/metric_scaling.py; [] without figures)."""
    if not has_figures(results):
        return []
    rows = results if cluster is None else results[(results["cluster"].astype(str) == cluster).to_numpy()]
    return to_records(metric_scaling.all_scaling(figure_frame(rows)))


def ratios_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figure_ratios: each figure's ratios between values of
    cluster, partition, impl and variant (analysis/metric_ratios.py; [] without figures)."""
    return to_records(figure_ratios(results, cluster))


def fractions_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figure_serial_fractions: Amdahl's serial fraction of each
    figure's strong series over threads, ranks and nodes (analysis/metric_fits.py; [] without figures)."""
    if not has_figures(results):
        return []
    rows = results if cluster is None else results[(results["cluster"].astype(str) == cluster).to_numpy()]
    return to_records(serial_fractions(figure_frame(rows)))


def crossovers_json(results: pd.DataFrame, cluster: str | None) -> list[dict[str, object]]:
    """`report --json` key figure_crossovers: the first n at which more threads, ranks
    or nodes give a better figure (analysis/metric_fits.py; [] without figures or sizes)."""
    return to_records(figure_crossovers(results, cluster))


# `report --json`'s keys of the figures, each made from (results, cluster), in their order
FIGURE_KEYS: dict[str, Callable[[pd.DataFrame, str | None], list[dict[str, object]]]] = {
    "figures_of_merit": figures_json, "figure_scaling": scaling_json, "figure_exponents": exponents_json,
    "figure_ratios": ratios_json, "figure_serial_fractions": fractions_json, "figure_crossovers": crossovers_json}
