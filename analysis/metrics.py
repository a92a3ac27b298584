"""All metrics of a result table at once, and their JSON form.

`all_metrics` summarises once (medians over repeats) and hands the summary to
every metric, so a million-row table is grouped and sorted a handful of times,
not once per metric. `metrics_json` is what `campaign report --json` prints;
its schema is documented in analysis/SCHEMA.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis import rank_scaling
from analysis.penalties import doubling_penalty
from analysis.ratios import all_ratios, ratios, variant_ratio
from analysis.roofline import roofline
from analysis.scaling import fitted_exponents, local_exponents
from analysis.summary import ensure_summary, is_summary, summarize
from analysis.threads import best_threads, crossovers, speedup

__all__ = [
    "METRIC_KEYS", "all_metrics", "best_threads", "crossovers", "doubling_penalty",
    "filter_cluster", "fitted_exponents", "local_exponents", "metrics_json", "ratios",
    "roofline", "speedup", "summarize", "to_records", "variant_ratio",
]

METRIC_KEYS: tuple[str, ...] = (
    "exponents", "fits", "speedup", "best_threads", "doubling_penalty", "crossovers",
    "ratios", "roofline", "strong_scaling", "weak_scaling", "serial_fraction", "comm_compute",
)
# Fields that are integers by meaning; a float column holding them (after a
# merge introduced NaN) is written back as JSON integers.
INTEGER_FIELDS = frozenset({
    "n", "d", "threads", "n_lo", "n_hi", "n_min", "n_max", "points", "best_threads",
    "max_threads", "threads_half", "threads_a", "threads_b", "n_before", "n_at", "repeats",
    "ranks", "nodes", "base_ranks", "base_nodes", "min_ranks", "max_ranks", "resamples",
})


def all_metrics(results: pd.DataFrame, partitions: pd.DataFrame | None,
                timings: dict[str, float] | None = None,
                keys: tuple[str, ...] = METRIC_KEYS) -> dict[str, pd.DataFrame]:
    """Every metric of docs/design.md#metrics, keyed as METRIC_KEYS.

    `results` are raw rows (or a summary); `partitions` the partition facts
    (may be None: flags then say `facts_missing`, ceilings are NaN). If
    `timings` is given, it receives the seconds each step took ("summary" too).
    `keys` limits the metrics computed (`report --json --keys`).
    """
    clock = timings if timings is not None else {}
    summary = _timed(clock, "summary", lambda: ensure_summary(results))
    rows = results.iloc[:0] if is_summary(results) else results  # a summary has no repeats to scale
    steps: dict[str, Callable[[], pd.DataFrame]] = {
        "exponents": lambda: local_exponents(summary),
        "fits": lambda: fitted_exponents(summary),
        "speedup": lambda: speedup(summary),
        "best_threads": lambda: best_threads(summary),
        "doubling_penalty": lambda: doubling_penalty(summary, partitions),
        "crossovers": lambda: crossovers(summary),
        "ratios": lambda: all_ratios(summary),
        "roofline": lambda: roofline(summary, partitions),
        # over ranks and nodes: from the rows (a bootstrap over repeats; the programs' comm and compute times)
        "strong_scaling": lambda: rank_scaling.strong_scaling(rows),
        "weak_scaling": lambda: rank_scaling.weak_scaling(rows),
        "serial_fraction": lambda: rank_scaling.serial_fractions(rows),
        "comm_compute": lambda: rank_scaling.comm_compute(rows),
    }
    return {key: _timed(clock, key, steps[key]) for key in keys}


def _timed(clock: dict[str, float], key: str,
           step: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    start = time.perf_counter()
    frame = step()
    clock[key] = time.perf_counter() - start
    return frame


def filter_cluster(metrics: dict[str, pd.DataFrame], cluster: str) -> dict[str, pd.DataFrame]:
    """The metrics that concern one cluster.

    A cross-cluster ratio concerns both clusters, so it is kept when the
    cluster is on either side (`a` or `b` of dimension `cluster`).
    """
    out: dict[str, pd.DataFrame] = {}
    for key, frame in metrics.items():
        mine = frame["cluster"].astype("str") == cluster
        if key == "ratios" and len(frame):
            mine = mine | ((frame["dimension"] == "cluster") & (frame["b"] == cluster))
        out[key] = frame[mine.to_numpy()].reset_index(drop=True)
    return out


def to_records(frame: pd.DataFrame) -> list[dict[str, object]]:
    """JSON-safe records: NaN/NA/inf -> None, numpy scalars -> Python ones.

    Converted column by column (vectorised) because `report --json` over a big
    campaign has millions of cells.
    """
    columns = [_json_column(frame[name], name in INTEGER_FIELDS) for name in frame.columns]
    names = [str(c) for c in frame.columns]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _json_column(col: pd.Series, as_int: bool) -> list[object]:
    """One column as a list of JSON-safe Python values."""
    kind = col.dtype.kind
    if kind == "b":
        return [bool(v) for v in col.to_numpy(dtype=bool)]
    masked = isinstance(col.dtype, pd.api.extensions.ExtensionDtype) and col.hasnans
    if kind in "iu" and not masked:
        return col.to_numpy().tolist()
    if kind in "iuf":
        values = col.to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(values)
        if as_int and np.all(values[finite] == np.round(values[finite])):
            out: list[object] = values.astype(np.int64, copy=False).tolist() if finite.all() \
                else np.where(finite, values, 0).astype(np.int64).tolist()
        else:
            out = values.tolist()
        if not finite.all():
            for i in np.flatnonzero(~finite):
                out[i] = None
        return out
    missing = col.isna().to_numpy()
    if isinstance(col.dtype, pd.StringDtype):  # texts already (a point's key: most cells)
        return [None if m else v for v, m in zip(col.tolist(), missing, strict=True)]
    return [None if m else _scalar(v) for v, m in zip(col.tolist(), missing, strict=True)]


def _scalar(value: object) -> object:
    """A Python scalar for JSON: numpy scalars unwrapped, other objects as text."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, (bool, int, str)):
        return value
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def metrics_json(results: pd.DataFrame, partitions: pd.DataFrame | None,
                 cluster: str | None = None,
                 metrics: dict[str, pd.DataFrame] | None = None,
                 ) -> dict[str, list[dict[str, object]]]:
    """The `campaign report --json` object: {metric key: [record, ...]}.

    Pass precomputed `metrics` to avoid recomputing; `cluster` restricts the
    output as `filter_cluster` does.
    """
    frames = metrics if metrics is not None else all_metrics(results, partitions)
    if cluster is not None:
        frames = filter_cluster(frames, cluster)
    return {key: to_records(frames[key]) for key in METRIC_KEYS}
