"""FLOPs and minimal DRAM bytes per kernel family — the one place they live.

The definitions are those of docs/contracts.md ("Kernel definitions"). Every
function accepts scalars or numpy arrays for `n`, `d` (and `ff`), so the same
code serves one run and a million-row result table. Unknown kernels give NaN:
a roofline point without a cost model is missing, not wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

ArrayLike = Any  # float | np.ndarray; numpy broadcasting does the rest

# Bytes per element of each dtype; a missing dtype means fp32 (the programs' default).
ELEMENT_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}
DEFAULT_DTYPE = "fp32"


def default_ff(d: ArrayLike) -> ArrayLike:
    """The MLP width the block kernels use without `--ff`: 64*ceil((8d/3)/64)."""
    return 64.0 * np.ceil((8.0 * np.asarray(d, dtype=float) / 3.0) / 64.0)


def _ff(d: ArrayLike, extra: dict[str, Any]) -> ArrayLike:
    ff = extra.get("ff")
    if ff is None:
        return default_ff(d)
    ff_arr = np.asarray(ff, dtype=float)
    # A per-row ff column may be partly empty: those rows use the default width.
    return np.where(np.isnan(ff_arr), default_ff(d), ff_arr)


def _given_flops(n: ArrayLike, d: ArrayLike, extra: dict[str, Any]) -> ArrayLike:
    """gemm_shapes rows carry their own count (2*m*n*k*batch); nothing to derive."""
    given = extra.get("flops")
    if given is None:
        return np.full(np.broadcast(np.asarray(n), np.asarray(d)).shape, np.nan)
    return np.asarray(given, dtype=float)


_FLOPS: dict[str, Callable[[ArrayLike, ArrayLike, dict[str, Any]], ArrayLike]] = {
    "attention_forward": lambda n, d, e: 4.0 * n * n * d,
    "attention_backward": lambda n, d, e: 8.0 * n * n * d,
    "attention_fwdbwd": lambda n, d, e: 12.0 * n * n * d,
    "decode": lambda n, d, e: 4.0 * n * d,
    "block_forward": lambda n, d, e: 6.0 * n * d * _ff(d, e),
    "mlp_backward": lambda n, d, e: 12.0 * n * d * _ff(d, e),
    "gemm_shapes": _given_flops,
}

# Minimal bytes in *elements*; multiplied by the element size below.
_ELEMENTS: dict[str, Callable[[ArrayLike, ArrayLike, dict[str, Any]], ArrayLike]] = {
    "attention_forward": lambda n, d, e: 4.0 * n * d,
    "attention_backward": lambda n, d, e: 7.0 * n * d + n * n,
    "attention_fwdbwd": lambda n, d, e: 8.0 * n * d,
    "decode": lambda n, d, e: 2.0 * n * d,
    "block_forward": lambda n, d, e: 2.0 * n * d + 3.0 * d * _ff(d, e) + d,
    "mlp_backward": lambda n, d, e: 3.0 * n * d + 6.0 * d * _ff(d, e),
}

# Of those, the elements *written* (the outputs); the rest are reads. Hardware
# counters report DRAM reads and writes apart, so the model says both.
_WRITE_ELEMENTS: dict[str, Callable[[ArrayLike, ArrayLike, dict[str, Any]], ArrayLike]] = {
    "attention_forward": lambda n, d, e: 1.0 * n * d,          # O
    "attention_backward": lambda n, d, e: 3.0 * n * d,         # dQ, dK, dV
    "attention_fwdbwd": lambda n, d, e: 4.0 * n * d,           # O, dQ, dK, dV
    "decode": lambda n, d, e: 0.0 * n * d + d,                 # o (1 x d)
    "block_forward": lambda n, d, e: 1.0 * n * d,
    "mlp_backward": lambda n, d, e: 1.0 * n * d + 3.0 * d * _ff(d, e),
}

KNOWN_KERNELS: tuple[str, ...] = tuple(_FLOPS)


def flops(kernel: str, n: ArrayLike, d: ArrayLike, **extra: Any) -> Any:
    """Useful FLOPs of one call of `kernel` at size n (and head/model dim d).

    `extra` carries kernel-specific arguments: `ff` for the block kernels,
    `flops` for gemm_shapes. Unknown kernels give NaN. Recomputation in fused
    kernels is not counted (docs/contracts.md#kernel-definitions), so fused and naive compare fairly.
    """
    n_arr = np.asarray(n, dtype=float)
    d_arr = np.asarray(d, dtype=float)
    rule = _FLOPS.get(kernel)
    if rule is None:
        return _nan_like(n_arr, d_arr)
    return _scalar_or_array(rule(n_arr, d_arr, extra))


def min_bytes(kernel: str, n: ArrayLike, d: ArrayLike, dtype: Any = DEFAULT_DTYPE,
              **extra: Any) -> Any:
    """Minimal DRAM traffic of one call: each input read and output written once.

    `dtype` is a name ("fp32", "bf16", ...) or an array of names; unknown
    kernels or dtypes give NaN.
    """
    n_arr = np.asarray(n, dtype=float)
    d_arr = np.asarray(d, dtype=float)
    rule = _ELEMENTS.get(kernel)
    if rule is None:
        return _nan_like(n_arr, d_arr)
    return _scalar_or_array(rule(n_arr, d_arr, extra) * element_bytes(dtype))


def min_write_bytes(kernel: str, n: ArrayLike, d: ArrayLike, dtype: Any = DEFAULT_DTYPE,
                    **extra: Any) -> Any:
    """The written part of `min_bytes` (each output once); reads are the rest."""
    n_arr = np.asarray(n, dtype=float)
    d_arr = np.asarray(d, dtype=float)
    rule = _WRITE_ELEMENTS.get(kernel)
    if rule is None:
        return _nan_like(n_arr, d_arr)
    return _scalar_or_array(rule(n_arr, d_arr, extra) * element_bytes(dtype))


def element_bytes(dtype: Any) -> Any:
    """Element size for a dtype name or an array of names (NaN if unknown)."""
    if isinstance(dtype, str) or dtype is None:
        return float(ELEMENT_BYTES.get(dtype or DEFAULT_DTYPE, np.nan))
    # looked up once per distinct name, not once per row (ten million rows name a few dtypes);
    # a missing name (code -1) is the default dtype
    codes, uniques = pd.factorize(np.asarray(dtype, dtype=object))
    sizes = np.array([ELEMENT_BYTES.get(name, np.nan) for name in uniques] + [ELEMENT_BYTES[DEFAULT_DTYPE]])
    return sizes[codes]


def _nan_like(n: np.ndarray, d: np.ndarray) -> Any:
    return _scalar_or_array(np.full(np.broadcast(n, d).shape, np.nan))


def _scalar_or_array(value: ArrayLike) -> Any:
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def add_cost_columns(results: pd.DataFrame) -> pd.DataFrame:
    """Return `results` with `flops` and `bytes` columns filled where missing.

    Rows that carry their own value keep it (gemm_shapes brings `flops`); rows
    of unknown kernels get NaN. A missing `d` or `dtype` column means NaN / fp32.
    Vectorised per kernel (a loop over a handful of kernel names).
    """
    # shallow: pandas copies on write, so the columns set below never reach
    # `results`; a deep copy of every column cost ~0.3 s per million rows
    out = results.copy(deep=False)
    n_rows = len(out)
    derived_flops = np.full(n_rows, np.nan)
    derived_bytes = np.full(n_rows, np.nan)
    kernels = out["kernel"].to_numpy(dtype=object)
    d_all = _column(out, "d")
    ff_all = _column(out, "ff") if "ff" in out.columns else None
    dtype_all = out["dtype"].to_numpy(dtype=object) if "dtype" in out.columns else None
    for kernel in pd.unique(kernels):
        rows = np.flatnonzero(kernels == kernel)
        extra: dict[str, Any] = {}
        if ff_all is not None:
            extra["ff"] = ff_all[rows]
        n, d = _column(out, "n")[rows], d_all[rows]
        derived_flops[rows] = flops(str(kernel), n, d, **extra)
        dtypes = dtype_all[rows] if dtype_all is not None else DEFAULT_DTYPE
        derived_bytes[rows] = min_bytes(str(kernel), n, d, dtypes, **extra)
    for name, derived in (("flops", derived_flops), ("bytes", derived_bytes)):
        given = _column(out, name) if name in out.columns else np.full(n_rows, np.nan)
        out[name] = np.where(np.isnan(given), derived, given)
    return out


def _column(df: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 (NaN for missing), or all-NaN if absent."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
