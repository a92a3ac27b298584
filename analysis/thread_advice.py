"""How many threads to use for a kernel at each n, and what the usual default
(all cores) costs there: the validation paper's lesson that the 128-thread
default cost 535x on Delta for small n.

Per configuration (impl, variant, dtype, ... of one cluster and partition)
and n: `best_threads` is the measured argmin (analysis/threads.py); the
recommendation is the fewest threads whose median is within `tolerance`
(default 5%) of the best and whose interval overlaps the best one's, i.e.
that the data cannot tell from the best, since more threads for no shown
gain only cost cores (both conditions: with three repeats an interval can be
wide enough to overlap a thread count twice as slow). Consecutive sizes with the same
recommendation form one n range; the boundary between two ranges is the
crossover bracket (last n of one range, first n of the next).
`default_cost` = t(default threads)/t(recommended) at each n, where the
default is the partition's core count if the configuration measured it at
some n, else the most threads the configuration measured (`default_measured`
says which): one thread count per configuration, and at an n where it was not
measured the cost is NaN and said to be "not measured", never a ratio of
another thread count ("cost of 2 threads ... 1.00x" at sizes where
no 2-thread run existed). A size where any of the thread counts was timed on a
shared or busy machine (the results' `overlap` note) states no cost and no
recommendation: `shared` holds the note, and the text says so instead of a
number the sharing made (a 2-thread run beside a CPU hog comes out thousands
of times slower than the 1-thread one).

The rows advice reads (advice_rows): one figure per run, and for a
fixed-duration program the figure of merit it is judged on instead of its time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.merit import figure_frame, has_figures, timing_rows
from analysis.metric_frame import fixed_duration, strip_metric
from analysis.overlap_points import flagged_rows
from analysis.schema import group_columns
from analysis.summary import ensure_summary, is_summary

PER_N_COLUMNS: tuple[str, ...] = ("n", "best_threads", "recommended", "t_recommended", "default_threads",
                                  "t_default", "default_cost", "default_measured", "shared")
RANGE_COLUMNS: tuple[str, ...] = ("n_lo", "n_hi", "recommended", "max_default_cost")


@dataclass(frozen=True)
class ThreadAdvice:
    """`per_n`: group columns + PER_N_COLUMNS; `ranges`: group columns + RANGE_COLUMNS."""

    per_n: pd.DataFrame
    ranges: pd.DataFrame
    default_threads: int | None


def _cell_advice(cell: pd.DataFrame, default: int, measured: bool, tolerance: float) -> dict[str, object]:
    """One (group, n): best, recommended (fewest within noise and tolerance of best), and the cost of
    the configuration's `default` thread count (NaN where this n did not measure it)."""
    cell = cell.sort_values("threads")
    thr = cell["threads"].to_numpy()
    t = cell["median_s"].to_numpy(float)
    lo, hi = cell["ci_lo_s"].to_numpy(float), cell["ci_hi_s"].to_numpy(float)
    best = int(np.argmin(t))  # first minimum = fewest threads on a tie
    close = (lo <= hi[best]) & (lo[best] <= hi) & (t <= t[best] * (1.0 + tolerance))
    rec = int(np.flatnonzero(close)[0])
    here = np.flatnonzero(thr == default)
    t_default = float(t[here[0]]) if len(here) else float("nan")
    return {"best_threads": int(thr[best]), "recommended": int(thr[rec]), "t_recommended": float(t[rec]),
            "default_threads": int(default), "t_default": t_default,
            "default_cost": t_default / float(t[rec]), "default_measured": bool(measured)}


def thread_advice(results: pd.DataFrame, default_threads: int | None = None,
                  n: int | None = None, tolerance: float = 0.05) -> ThreadAdvice:
    """Advice for every configuration in `results` (raw or summary); `n`
    restricts it to one size. Raises ValueError when nothing is left."""
    s = ensure_summary(results)
    if s.empty:
        raise ValueError("no measurements to advise on")
    keys = group_columns(s)
    shared = _shared_cells(results, keys)
    rows = []
    for key, config in s.groupby(keys, sort=True, dropna=False):
        # the default is chosen over every n of the configuration, before `n` narrows it: at one size
        # where only 1 thread ran, "the most threads measured" is not the default that costs cores
        present = set(config["threads"].astype(int).tolist())
        measured = default_threads is not None and default_threads in present
        default = int(default_threads) if measured and default_threads is not None else max(present)
        for n_value, cell in config.groupby("n", sort=True, dropna=False):  # NULL n: a program without a size
            if n is None or n_value == n:
                row = {**dict(zip(keys, key, strict=True)), "n": n_value,
                       **_cell_advice(cell, default, measured, tolerance), "shared": None}
                note = shared.get(_cell_key((*(key if isinstance(key, tuple) else (key,)), n_value)))
                if note:  # what the sharing made is no advice
                    row.update(default_cost=float("nan"), shared=note)
                rows.append(row)
    if not rows:
        raise ValueError(f"no measurements at n = {n}")
    per_n = pd.DataFrame(rows, columns=keys + list(PER_N_COLUMNS))
    return ThreadAdvice(per_n, _ranges(per_n, keys), default_threads)


def _shared_cells(results: pd.DataFrame, keys: list[str]) -> dict[tuple[str, ...], str]:
    """(group columns, n) as texts -> the first `overlap` note of a row of
    that size at any thread count; none for a summary, which has no rows."""
    if is_summary(results) or "overlap" not in results.columns:
        return {}
    hit = results[flagged_rows(results).to_numpy()]
    return {_cell_key((*(row[k] for k in keys), row["n"])): str(row["overlap"])
            for row in hit.drop_duplicates(keys + ["n"]).to_dict("records")}


def _cell_key(values: tuple[object, ...]) -> tuple[str, ...]:
    """A cell's values as texts, every missing value one text (a NULL n reads as NaN from a
    groupby and as NA or None from the rows: the same cell)."""
    return tuple("" if pd.isna(v) else str(v) for v in values)  # type: ignore[call-overload]


def _ranges(per_n: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Consecutive n with one recommendation -> (n_lo, n_hi, threads). The rows of a
    program without a problem size (NULL n) are a range of their own, n_lo = n_hi = None: all n."""
    rows = []
    for key, grp in per_n.groupby(keys, sort=True, dropna=False):
        grp = grp.sort_values("n", na_position="last")
        advised = np.where(grp["shared"].isna(), grp["recommended"].to_numpy(), -1)  # -1: not advised
        unsized = grp["n"].isna().to_numpy()
        change = np.r_[True, (advised[1:] != advised[:-1]) | (unsized[1:] != unsized[:-1])]
        run_id = np.cumsum(change)
        for _, part in grp.groupby(run_id, sort=True):
            sized = part["n"].notna().all()
            rows.append({**dict(zip(keys, key, strict=True)), "n_lo": int(part["n"].min()) if sized else None,
                         "n_hi": int(part["n"].max()) if sized else None,
                         "recommended": int(part["recommended"].iloc[0]) if part["shared"].isna().all() else None,
                         "max_default_cost": float(part["default_cost"].max())})  # NaN: none measured
    return pd.DataFrame(rows, columns=keys + list(RANGE_COLUMNS))


def _shape(info: dict[str, object]) -> str:
    """A configuration's nodes and total ranks where it has more than one of
    either, as `compare` names them: configurations at 1, 2 and 4 nodes must
    not read alike."""
    nodes, ranks = pd.to_numeric(pd.Series([info.get("nodes"), info.get("ranks")]), errors="coerce")
    if pd.isna(nodes) or pd.isna(ranks):
        return ""
    shape = int(nodes), int(ranks)
    return "" if shape == (1, 1) else f"/nodes={shape[0]}/ranks={shape[1]}"


def format_thread_advice(advice: ThreadAdvice, title: str) -> str:
    """Text: per configuration, the n ranges with their thread count, then
    the per-n cost of the default."""
    lines = [title]
    keys = [c for c in advice.per_n.columns if c not in PER_N_COLUMNS]
    label_cols = [c for c in ("impl", "variant", "dtype", "d", "params") if c in keys]
    for key, grp in advice.per_n.groupby(keys, sort=True, dropna=False):
        info = dict(zip(keys, key, strict=True))
        label = "/".join(str(info[c]) for c in label_cols if str(info[c]) not in ("", "nan", "<NA>"))
        lines.append(f"{info['kernel']} {label}{_shape(info)}:")
        ranges = advice.ranges
        mine = ranges[np.logical_and.reduce([ranges[c].astype("str") == str(info[c]) for c in keys])]
        for r in mine.itertuples():
            span = ("n = all" if pd.isna(r.n_lo) else f"n = {int(r.n_lo)}" if r.n_lo == r.n_hi
                    else f"n = {int(r.n_lo)}..{int(r.n_hi)}")
            lines.append(f"  {span}: " + ("no advice, timed on a shared or busy machine" if pd.isna(r.recommended)
                                          else f"{int(r.recommended)} thread{'' if r.recommended == 1 else 's'}"))
        default = grp["default_threads"].iloc[0]
        how = "all cores" if bool(grp["default_measured"].all()) else "most threads measured"
        costs = ", ".join(f"n={'all' if pd.isna(row.n) else int(row.n)}: " + (f"{row.default_cost:.2f}x" if np.isfinite(row.default_cost)
                                                  else "not judged (shared)" if isinstance(row.shared, str)
                                                  else "not measured") for row in grp.itertuples())
        lines.append(f"  cost of {default} threads ({how}) vs recommended: {costs}")
        notes = list(dict.fromkeys(str(v) for v in grp["shared"].dropna()))
        if notes:
            lines.append(f"  {len(grp['shared'].dropna())} size(s) not judged: {notes[0]}")
    return "\n".join(lines)


def advice_rows(results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, object] | None]:
    """The rows thread advice reads, and the figure it is judged on (None: time).

    Advice picks the thread count of least cost, read from `time_s`. A
    fixed-duration program's time is its setting, so its first figure becomes
    the cost: the value where lower is better, 1/value
    where higher is (the fewest threads within the tolerance of the best rate
    is then the fewest within the tolerance of the least 1/rate). Other rows:
    one figure per run (timing_rows)."""
    fixed = fixed_duration(results).to_numpy() if has_figures(results) else np.zeros(len(results), dtype=bool)
    if not fixed.any():
        return timing_rows(results), None
    frame = figure_frame(results[fixed])
    if not len(frame):
        return results.iloc[:0], None
    metric = str(frame["metric"].iloc[0])
    chosen = results[fixed & (results["metric"].astype(str) == metric).to_numpy()].copy()
    value = pd.to_numeric(chosen["value"], errors="coerce").to_numpy(float)
    higher = bool(frame["higher_is_better"].iloc[0])
    with np.errstate(divide="ignore"):
        chosen["time_s"] = 1.0 / value if higher else value
    chosen["params"] = strip_metric(chosen["params"]).to_numpy()
    return chosen, {"metric": metric, "unit": str(frame["unit"].iloc[0]), "higher_is_better": higher,
                    "cost": "1/value" if higher else "value"}
