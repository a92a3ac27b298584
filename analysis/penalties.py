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
from analysis.threads import _CELL, _overlap, _with_gid


def facts_columns(partitions: pd.DataFrame | None, cols: list[str]) -> pd.DataFrame:
    """The `cols` of the partition facts (analysis.columns.PARTITION_COLUMNS),
    keyed by (cluster, partition), NaN where absent.

    One row per partition; duplicates keep the first. Tolerates None/empty.
    """
    keys = ["cluster", "partition"]
    if partitions is None or len(partitions) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object if c in keys else float)
                             for c in keys + cols})
    facts = partitions.drop_duplicates(keys)[[c for c in keys + cols
                                              if c in partitions.columns]].copy()
    for col in cols:
        facts[col] = pd.to_numeric(facts[col], errors="coerce") if col in facts else np.nan
    for key in keys:
        facts[key] = facts[key].astype("str")
    return facts


def numa_crossing(threads: np.ndarray, cores: np.ndarray,
                  numa_domains: np.ndarray) -> np.ndarray:
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


def doubling_penalty(df: pd.DataFrame, partitions: pd.DataFrame | None) -> pd.DataFrame:
    """t(T, n)/t(T/2, n) for every T whose half was also measured.

    Flags: `crosses_numa` (see `numa_crossing`), `crosses_cores` (T > physical
    cores of the node, i.e. `cores` of the partition facts), `facts_missing`,
    and `within_noise` (the two intervals overlap). Output: group columns, `n`,
    `threads`, `threads_half`, `penalty`, and those flags.
    """
    s = _with_gid(df)
    cols = _CELL + ["threads", "median_s", "ci_lo_s", "ci_hi_s"]
    upper = s[group_columns(s) + cols]
    upper = upper[upper["threads"] % 2 == 0].copy()
    upper["threads_half"] = upper["threads"] // 2
    lower = s[cols].rename(columns={"threads": "threads_half", "median_s": "_t_half",
                                    "ci_lo_s": "_lo_half", "ci_hi_s": "_hi_half"})
    merged = upper.merge(lower, on=_CELL + ["threads_half"], how="inner")
    facts = facts_columns(partitions, ["cores", "numa_domains"])
    merged["_k_cluster"] = merged["cluster"].astype("str")
    merged["_k_partition"] = merged["partition"].astype("str")
    merged = merged.merge(facts.rename(columns={"cluster": "_k_cluster",
                                                "partition": "_k_partition"}),
                          on=["_k_cluster", "_k_partition"], how="left")
    thr = merged["threads"].to_numpy(dtype=float)
    cores = merged["cores"].to_numpy(dtype=float)
    numa = merged["numa_domains"].to_numpy(dtype=float)
    out = merged[group_columns(s) + ["n", "threads", "threads_half"]].copy()
    out["penalty"] = merged["median_s"].to_numpy() / merged["_t_half"].to_numpy()
    out["facts_missing"] = ~(np.isfinite(cores) & np.isfinite(numa))
    out["crosses_numa"] = numa_crossing(thr, cores, numa) & ~out["facts_missing"].to_numpy()
    out["crosses_cores"] = np.where(np.isfinite(cores), thr > cores, False)
    out["within_noise"] = _overlap(merged["ci_lo_s"].to_numpy(), merged["ci_hi_s"].to_numpy(),
                                   merged["_lo_half"].to_numpy(), merged["_hi_half"].to_numpy())
    return out.sort_values(group_columns(s) + ["n", "threads"], kind="stable",
                           na_position="last").reset_index(drop=True)
