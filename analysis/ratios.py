"""Ratios t(a)/t(b) along one dimension, per matched n and thread count.

Dimensions (docs/design.md#metrics): `cluster` (matched on everything but cluster and
partition), `partition`, `impl`, `variant`. A ratio > 1 means a is slower.
The baseline may be a sum of kernels — the naive baseline of a fused kernel
is forward + backward — via `variant_ratio`. A ratio whose two 95% intervals
overlap is flagged `within_noise`: it does not show a difference. For a sum,
the interval of the sum is [sum of lower bounds, sum of upper bounds], a
conservative (wider) interval. With a single repeat on either side the
interval is the degenerate [t, t], which says nothing about the noise: such a
ratio is flagged `single_repeat` and counted `within_noise` (never a shown
difference). `ratio_lo`/`ratio_hi` bound the ratio by the two intervals,
[lo_a/hi_b, hi_a/lo_b].

Output columns (all ratio functions): the group columns with the a side's
values, `dimension`, `a`, `b` (labels of the two sides), `partition_b` (the b
side's partition: it differs for the cluster dimension), `n`, `threads`,
`t_a`, `t_b`, `ratio`, `ratio_lo`, `ratio_hi`, `within_noise`, `single_repeat`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd

from analysis.frames import group_codes
from analysis.schema import group_columns
from analysis.summary import ensure_summary

DIMENSIONS: tuple[str, ...] = ("cluster", "partition", "impl", "variant")
RATIO_COLUMNS: tuple[str, ...] = (
    "dimension", "a", "b", "partition_b", "n", "threads", "t_a", "t_b", "ratio",
    "ratio_lo", "ratio_hi", "within_noise", "single_repeat",
)
# Composite baselines that all_metrics reports whenever both sides are present.
COMPOSITE_BASELINES: tuple[tuple[tuple[str, str], tuple[tuple[str, str], ...]], ...] = (
    (("attention_fwdbwd", "fused"),
     (("attention_forward", "naive"), ("attention_backward", "naive"))),
)
_VALUES = ["median_s", "ci_lo_s", "ci_hi_s", "repeats"]


def ratios(df: pd.DataFrame, dimension: str) -> pd.DataFrame:
    """All pairs a < b (sorted by label) of values of `dimension`, matched.

    For `cluster` the two sides may be on any partitions of their clusters,
    and pairs within one cluster are not cluster ratios (they are partition
    ratios). See the module doc for the columns.
    """
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown ratio dimension {dimension!r}; known: {', '.join(DIMENSIONS)}")
    s = ensure_summary(df)
    varied = ["cluster", "partition"] if dimension == "cluster" else [dimension]
    match = [c for c in group_columns(s) if c not in varied] + ["threads", "n"]
    s = s.copy()
    s["_mid"], _ = group_codes(s, match)
    left = s[group_columns(s) + ["threads", "n", "_mid"] + _VALUES]
    right = s[["_mid"] + varied + _VALUES]
    pairs = left.merge(right, on="_mid", suffixes=("", "_b"))
    label_b = pairs[f"{dimension}_b"].astype("str")
    pairs = pairs[pairs[dimension].astype("str").to_numpy() < label_b.to_numpy()]
    if dimension not in ("cluster", "partition"):
        pairs["partition_b"] = pairs["partition"]
    out = pairs[group_columns(s)].copy()
    out["dimension"] = dimension
    out["a"] = pairs[dimension].astype("str")
    out["b"] = pairs[f"{dimension}_b"].astype("str")
    out["partition_b"] = pairs["partition_b"].to_numpy()
    _fill_values(out, pairs, "", "_b")
    return out.reset_index(drop=True)


def _fill_values(out: pd.DataFrame, pairs: pd.DataFrame, sa: str, sb: str) -> None:
    """Add n, threads, t_a, t_b, ratio, within_noise from a merged frame."""
    out["n"] = pairs["n"].to_numpy()
    out["threads"] = pairs["threads"].to_numpy()
    t_a, t_b = pairs["median_s" + sa].to_numpy(), pairs["median_s" + sb].to_numpy()
    out["t_a"] = t_a
    out["t_b"] = t_b
    out["ratio"] = t_a / t_b
    lo_a, hi_a = pairs["ci_lo_s" + sa].to_numpy(), pairs["ci_hi_s" + sa].to_numpy()
    lo_b, hi_b = pairs["ci_lo_s" + sb].to_numpy(), pairs["ci_hi_s" + sb].to_numpy()
    out["ratio_lo"] = lo_a / hi_b
    out["ratio_hi"] = hi_a / lo_b
    single = (pairs["repeats" + sa].to_numpy() <= 1) | (pairs["repeats" + sb].to_numpy() <= 1)
    out["within_noise"] = ((lo_a <= hi_b) & (lo_b <= hi_a)) | single
    out["single_repeat"] = single


def _side(s: pd.DataFrame, kernel: str, variant: str) -> pd.DataFrame:
    """Rows of one (kernel, variant) indexed for matching with other kernels."""
    return s[(s["kernel"] == kernel) & (s["variant"] == variant)]


def _parts(b: tuple[str, str] | Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """One (kernel, variant) or a sequence of them, as a list."""
    if isinstance(b[0], str):
        single = cast(tuple[str, str], b)
        return [(single[0], single[1])]
    return [(str(k), str(v)) for k, v in cast(Sequence[tuple[str, str]], b)]


def variant_ratio(df: pd.DataFrame, a: tuple[str, str],
                  b: tuple[str, str] | Sequence[tuple[str, str]]) -> pd.DataFrame:
    """t(a)/t(b) where a is a (kernel, variant) and b one or a sum of several.

    Example: `variant_ratio(df, a=("attention_fwdbwd", "fused"),
    b=[("attention_forward", "naive"), ("attention_backward", "naive")])`.
    Matched on every group column but kernel and variant, plus threads and n;
    a cell is reported only where every part of b was measured. The kernel and
    variant columns carry a's values; `b` is the label "k/v+k/v".
    """
    parts = _parts(b)
    s = ensure_summary(df)
    match = [c for c in group_columns(s) if c not in ("kernel", "variant")] + ["threads", "n"]
    base: pd.DataFrame | None = None
    for kernel, variant in parts:
        side = _side(s, kernel, variant)[match + _VALUES]
        if base is None:
            base = side
            continue
        merged = base.merge(side, on=match, suffixes=("", "_p"))
        for col in _VALUES[:3]:
            merged[col] = merged[col] + merged[col + "_p"]
        # A sum is as poorly repeated as its least repeated part.
        merged["repeats"] = np.minimum(merged["repeats"], merged["repeats_p"])
        base = merged[match + _VALUES]
    assert base is not None
    a_side = _side(s, *a)[group_columns(s) + ["threads", "n"] + _VALUES]
    pairs = a_side.merge(base, on=match, suffixes=("", "_b"))
    out = pairs[group_columns(s)].copy()
    out["dimension"] = "variant"
    out["a"] = f"{a[0]}/{a[1]}"
    out["b"] = "+".join(f"{k}/{v}" for k, v in parts)
    out["partition_b"] = pairs["partition"].to_numpy()
    _fill_values(out, pairs, "", "_b")
    return out.reset_index(drop=True)


def all_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Every dimension's ratios plus the composite baselines that are present."""
    s = ensure_summary(df)
    frames = [ratios(s, dim) for dim in DIMENSIONS]
    kernels = set(s["kernel"].astype("str"))
    for a, b in COMPOSITE_BASELINES:
        if a[0] in kernels and all(k in kernels for k, _ in b):
            frames.append(variant_ratio(s, a, b))
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=group_columns(s) + list(RATIO_COLUMNS))
    return pd.concat(frames, ignore_index=True)
