"""Thread-doubling penalties t(T)/t(T/2), flagged at NUMA and core boundaries.

A penalty above 1 means doubling the threads made the kernel slower. Where it
happens matters: when the added threads land on a new NUMA domain (remote
memory), or past the physical cores (SMT siblings or oversubscription). The
flags come from the partition facts (docs/contracts.md); without facts the
flags are False and `facts_missing` is True, so a reader can tell "no boundary"
from "unknown".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.schema import group_columns
from analysis.summary import ALLOC_COLUMN
from analysis.threads import _CELL, _with_gid, _within_noise


def facts_columns(partitions: pd.DataFrame | None, cols: list[str]) -> pd.DataFrame:
    """The `cols` of the partition facts (resultschema.partition.PARTITION_COLUMNS),
    keyed by (cluster, partition), NaN where absent.

    One row per partition; duplicates keep the first. Tolerates None/empty.
    """
    keys = ["cluster", "partition"]
    if partitions is None or len(partitions) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object if c in keys else float) for c in keys + cols})
    facts = partitions.drop_duplicates(keys)[[c for c in keys + cols if c in partitions.columns]].copy()
    for col in cols:
        facts[col] = pd.to_numeric(facts[col], errors="coerce") if col in facts else np.nan
    for key in keys:
        facts[key] = facts[key].astype("str")
    return facts


def numa_crossing(threads: np.ndarray, cores: np.ndarray, numa_domains: np.ndarray) -> np.ndarray:
    """True where going from T/2 to T threads passes an interior NUMA boundary.

    With c = cores/numa_domains, that is T/2 <= k*c < T for some k in
    1..numa_domains-1. The last boundary (k = numa_domains, all cores) is the
    core boundary, flagged separately as `crosses_cores`.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        per_domain = cores / numa_domains
        half = threads / 2.0
        k = np.maximum(np.ceil(half / per_domain), 1.0)
        crossing = (k * per_domain < threads) & (k <= numa_domains - 1)
    return np.where(np.isfinite(per_domain) & (per_domain > 0), crossing, False)


def used_cores(threads: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """Cores T threads spread over: all T, or the allocation when T exceeds it
    (oversubscription adds threads, not cores). NaN allocation: unknown, T."""
    return np.where(np.isfinite(alloc), np.minimum(threads, alloc), threads)


def numa_crossing_used(
    used_half: np.ndarray, used: np.ndarray, cores: np.ndarray, numa_domains: np.ndarray
) -> np.ndarray:
    """True where the cores in use grew from `used_half` to `used` across an
    interior NUMA boundary k*c (c = cores/numa_domains, k in 1..numa_domains-1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per_domain = cores / numa_domains
        k = np.maximum(np.ceil(used_half / per_domain), 1.0)
        crossing = (k * per_domain < used) & (k * per_domain >= used_half) & (k <= numa_domains - 1)
    return np.where(np.isfinite(per_domain) & (per_domain > 0), crossing, False)


def doubling_penalty(df: pd.DataFrame, partitions: pd.DataFrame | None) -> pd.DataFrame:
    """t(T, n)/t(T/2, n) for every T whose half was also measured.

    Flags: `crosses_numa` (see `numa_crossing`), `crosses_cores` (T > physical
    cores of the node, i.e. `cores` of the partition facts), `facts_missing`,
    and `within_noise` (the two intervals overlap). Output: group columns, `n`,
    `threads`, `threads_half`, `penalty`, and those flags.

    With the optional column `alloc_cpus` (the cores each job was given) the
    flags judge the allocation, not the node: `crosses_cores` is T above the
    allocated cores (oversubscription, e.g. 64 threads on 32 cores), and
    `crosses_numa` asks whether the cores in use (at most the allocation)
    crossed a NUMA boundary. Rows without it are judged from the node.
    """
    s = _with_gid(df)
    cols = _CELL + ["threads", "median_s", "ci_lo_s", "ci_hi_s"]
    s["_row"] = np.arange(len(s))  # a point's place in s, for _within_noise
    alloc_cols = [ALLOC_COLUMN] if ALLOC_COLUMN in s.columns else []
    upper = s[group_columns(s) + cols + alloc_cols + ["_row"]]
    upper = upper[upper["threads"] % 2 == 0].copy()
    upper["threads_half"] = upper["threads"] // 2
    lower = s[[*_CELL, "threads", "median_s", "_row"]].rename(
        columns={"threads": "threads_half", "median_s": "_t_half", "_row": "_row_half"}
    )
    merged = upper.merge(lower, on=_CELL + ["threads_half"], how="inner")
    facts = facts_columns(partitions, ["cores", "numa_domains"])
    merged["_k_cluster"] = merged["cluster"].astype("str")
    merged["_k_partition"] = merged["partition"].astype("str")
    merged = merged.merge(
        facts.rename(columns={"cluster": "_k_cluster", "partition": "_k_partition"}),
        on=["_k_cluster", "_k_partition"],
        how="left",
    )
    thr = merged["threads"].to_numpy(dtype=float)
    cores = merged["cores"].to_numpy(dtype=float)
    numa = merged["numa_domains"].to_numpy(dtype=float)
    out = merged[group_columns(s) + ["n", "threads", "threads_half"]].copy()
    out["penalty"] = merged["median_s"].to_numpy() / merged["_t_half"].to_numpy()
    out["facts_missing"] = ~(np.isfinite(cores) & np.isfinite(numa))
    node_numa = numa_crossing(thr, cores, numa)
    node_cores = np.where(np.isfinite(cores), thr > cores, False)
    if alloc_cols:
        alloc = pd.to_numeric(merged[ALLOC_COLUMN], errors="coerce").to_numpy(dtype=float)
        known = np.isfinite(alloc)
        alloc_numa = numa_crossing_used(used_cores(thr / 2.0, alloc), used_cores(thr, alloc), cores, numa)
        node_numa = np.where(known, alloc_numa, node_numa)
        node_cores = np.where(known, thr > alloc, node_cores)
    out["crosses_numa"] = node_numa & ~out["facts_missing"].to_numpy()
    out["crosses_cores"] = node_cores
    out["within_noise"] = _within_noise(s, merged["_row"].to_numpy(), merged["_row_half"].to_numpy())
    return out.sort_values(group_columns(s) + ["n", "threads"], kind="stable", na_position="last").reset_index(
        drop=True
    )
