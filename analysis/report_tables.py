"""The report's tables: metric frames reshaped for reading, not for machines.

Wide tables (one column per n) read best for sweeps; the JSON output keeps
the long form. Each function returns a DataFrame of display values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.schema import group_columns


def labels(frame: pd.DataFrame) -> pd.Series:
    """Vectorised group label: kernel/impl/variant [dtype] [d=..] partition [device]."""
    label = (frame["kernel"].astype("str") + "/" + frame["impl"].astype("str") + "/"
             + frame["variant"].astype("str"))
    if "dtype" in frame.columns:
        label = label + (" " + frame["dtype"].astype("str")).fillna("")
    if "d" in frame.columns:
        d = pd.to_numeric(frame["d"], errors="coerce")
        label = label + (" d=" + d.astype("Int64").astype("str")).where(d.notna(), "")
    label = label + " " + frame["partition"].astype("str")
    device = frame["device"].astype("str")
    label = label + (" " + device).where(device != "cpu", "")
    if "params" in frame.columns:  # extra program args make a different configuration
        params = frame["params"].fillna("").astype("str")
        label = label + (" [" + params + "]").where(params != "", "")
    return label


def _wide(frame: pd.DataFrame, index: list[str], column: str, values: pd.Series) -> pd.DataFrame:
    """Pivot display strings to one column per value of `column` (e.g. n)."""
    long = frame[index + [column]].copy()
    long["_v"] = values.to_numpy()
    wide = long.pivot_table(index=index, columns=column, values="_v", aggfunc="first")
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index().fillna("")


def median_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Median time per (group, threads) and n; '*' marks a single repeat."""
    if summary.empty:
        return pd.DataFrame()
    frame = summary.assign(group=labels(summary))
    text = frame["median_s"].map(lambda v: f"{v:.3g}") + np.where(frame["single_repeat"], "*", "")
    return _wide(frame, ["group", "threads"], "n", pd.Series(text))


def exponent_table(exponents: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """Local exponent per n_hi, plus the fitted slope [95% interval]."""
    if exponents.empty:
        return pd.DataFrame()
    frame = exponents.assign(group=labels(exponents))
    wide = _wide(frame, ["group", "threads"], "n_hi", frame["exponent"].map(lambda v: f"{v:.2f}"))
    fit = fits.assign(group=labels(fits))
    text = fit["slope"].map(lambda v: f"{v:.2f}") + " [" + fit["ci_lo"].map(
        lambda v: f"{v:.2f}") + ", " + fit["ci_hi"].map(lambda v: f"{v:.2f}") + "]"
    fit = fit.assign(fit=text)[["group", "threads", "fit"]]
    return wide.merge(fit, on=["group", "threads"], how="left")


def best_thread_table(best: pd.DataFrame) -> pd.DataFrame:
    """T*(n) per group with the max-thread penalty in parentheses."""
    if best.empty:
        return pd.DataFrame()
    frame = best.assign(group=labels(best))
    text = (frame["best_threads"].astype("str") + " (" + frame["max_thread_penalty"].map(
        lambda v: f"{v:.2f}") + np.where(frame["penalty_within_noise"], "~", "") + ")")
    return _wide(frame, ["group"], "n", text)


def penalty_table(penalty: pd.DataFrame) -> pd.DataFrame:
    """Doubling penalties above 1 that are outside the noise, worst first."""
    if penalty.empty:
        return pd.DataFrame()
    bad = penalty[(penalty["penalty"] > 1.0) & ~penalty["within_noise"].astype(bool)]
    bad = bad.sort_values("penalty", ascending=False)
    cols = ["n", "threads", "threads_half", "penalty", "crosses_numa", "crosses_cores",
            "facts_missing"]
    return bad.assign(group=labels(bad))[["group"] + cols].reset_index(drop=True)


def crossover_table(crossovers: pd.DataFrame) -> pd.DataFrame:
    """Pairs of thread counts where the larger one starts winning."""
    if crossovers.empty:
        return pd.DataFrame()
    done = crossovers[crossovers["crossed"].astype(bool)]
    cols = ["threads_a", "threads_b", "n_before", "n_at", "within_noise"]
    return done.assign(group=labels(done))[["group"] + cols].reset_index(drop=True)


def ratio_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """Each comparison at its largest matched n (one row per threads)."""
    if ratios.empty:
        return pd.DataFrame()
    keys = [c for c in group_columns(ratios) if c != "cluster"] + [
        "dimension", "a", "b", "partition_b", "threads"]
    last = ratios.sort_values("n").groupby(keys, dropna=False, sort=True).tail(1)
    last = last.assign(group=labels(last)).sort_values(["dimension", "a", "b", "group"])
    cols = ["dimension", "a", "b", "group", "partition_b", "threads", "n", "ratio",
            "within_noise"]
    return last[cols].reset_index(drop=True)


def roofline_table(roof: pd.DataFrame) -> pd.DataFrame:
    """Per group, the point closest to its roofline (or the fastest, without one)."""
    usable = roof[np.isfinite(roof["flops_per_s"])]
    if usable.empty:
        return pd.DataFrame()
    score = usable["frac_roof"].fillna(-1.0) * 1e30 + usable["flops_per_s"].fillna(0.0)
    order = usable.assign(_score=score).sort_values("_score", ascending=False)
    best = order.groupby(group_columns(usable), dropna=False, sort=True).head(1)
    cols = ["n", "threads", "flops_per_s", "bytes_per_s", "intensity", "frac_peak_flops",
            "frac_mem_bw", "frac_roof"]
    return best.assign(group=labels(best))[["group"] + cols].sort_values("group").reset_index(
        drop=True)
