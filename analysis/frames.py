"""Small DataFrame helpers shared by the metric modules.

Group-wise metrics on a million rows stay fast by turning the key columns into
one integer code per row once, and then working on numpy arrays; pandas'
multi-column groupby on string keys is several times slower.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_MAX_RADIX = 2**62


def group_codes(df: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, int]:
    """Dense int64 code per row for the combination of `cols`, and the count.

    Codes follow the sorted order of the combinations (missing values sort
    last within a column), so code order is the lexicographic order of `cols`.
    Missing values are a value of their own, never dropped.
    """
    if not cols:
        return np.zeros(len(df), dtype=np.int64), 1 if len(df) else 0
    combined = np.zeros(len(df), dtype=np.int64)
    radix = 1
    for col in cols:
        codes, uniques = pd.factorize(df[col], sort=True, use_na_sentinel=False)
        size = max(len(uniques), 1)
        if radix * size >= _MAX_RADIX:
            combined = _dense(combined)
            radix = int(combined.max()) + 1 if len(combined) else 1
        combined = combined * size + codes.astype(np.int64)
        radix *= size
    dense = _dense(combined)
    return dense, int(dense.max()) + 1 if len(dense) else 0


def _dense(values: np.ndarray) -> np.ndarray:
    """Renumber int64 values to 0..k-1 keeping their order (a hash table and
    a sort of the distinct values: np.unique would sort all ten million)."""
    codes, _ = pd.factorize(values, sort=True)
    return codes.astype(np.int64, copy=False)


def present(df: pd.DataFrame, cols: list[str] | tuple[str, ...]) -> list[str]:
    """The subset of `cols` that `df` has, in the given order."""
    return [c for c in cols if c in df.columns]


def group_median(frame: pd.DataFrame, keys: list[str], column: str) -> np.ndarray:
    """The median of `column` per group of `keys` (NaN skipped; groups as
    `groupby(keys, dropna=False, sort=True)` orders them). pandas takes the
    mean of two middle values as 0.5 * (a + b), which is inf for two finite
    figures near 1.8e308; those groups take twice the median of the halves,
    the same number without the overflow (halving is exact far from the
    subnormals)."""
    med = frame.groupby(keys, dropna=False, sort=True)[column].median().to_numpy(dtype=float, copy=True)
    over = np.isinf(med)
    if over.any():  # where the middle values are finite, so is the median of the halves; an inf stays inf
        halves = frame[keys].assign(**{column: frame[column] * 0.5}).groupby(keys, dropna=False, sort=True)[column]
        half = halves.median().to_numpy(dtype=float)
        fixed = over & np.isfinite(half)
        med[fixed] = half[fixed] * 2.0
    return med
