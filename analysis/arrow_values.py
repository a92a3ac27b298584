"""Arrow scalars and arrays of plain values (Python numbers and texts, numpy
arrays), built from their bytes with `pyarrow.Array.from_buffers`.

Why not `pa.scalar` / `pa.array`: both first ask pyarrow's pandas shim
whether the value is a pandas object, and that imports pandas, ~0.14 s of
every `campaign status` that ingests a single row (and of every compute call
given a Python literal, which pyarrow wraps with `pa.scalar`). Ingest needs
no pandas (BENCHMARKS.md §13i), so the values on its path are built here.
Each builder gives the same array as `pa.array(values, type)` would
(tests/analysis/test_arrow_values.py holds them to each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

_NUMPY = {pa.int64(): np.int64, pa.int32(): np.int32, pa.float64(): np.float64}


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    """Arrow's validity bitmap (least significant bit first), or None when every value is there."""
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def from_numpy(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array of int64, int32, float64 or bool as an Arrow array (`valid`: False where missing)."""
    mask = None if valid is None else _validity(np.asarray(valid, dtype=bool))
    if values.dtype == np.bool_:
        bits = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [mask, bits])
    kind = {np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32(), np.dtype(np.float64): pa.float64()}
    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(kind[data.dtype], len(data), [mask, pa.py_buffer(data)])


def from_list(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """Python values (None: missing) as an Arrow array of `kind`: string,
    int64, int32, float64 or bool; any other kind through `pa.array`."""
    if not _plain(values, kind):  # (pa.array then says what is wrong with them, as it always did)
        return pa.array(values, kind)
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    if kind == pa.string():
        data = [v.encode() for v in values if v is not None]
        lengths = np.zeros(len(values), dtype=np.int64)
        lengths[valid] = [len(d) for d in data]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        if offsets[-1] >= 2**31:
            return pa.array(values, kind)
        return pa.Array.from_buffers(kind, len(values), [_validity(valid), pa.py_buffer(offsets.astype(np.int32)),
                                                         pa.py_buffer(b"".join(data))])
    if kind == pa.bool_():
        return from_numpy(np.array([bool(v) for v in values], dtype=bool), valid)
    return from_numpy(np.array([0 if v is None else v for v in values], dtype=_NUMPY[kind]), valid)


def _plain(values: Sequence[Any], kind: pa.DataType) -> bool:
    """Every value None or of the Python type that `kind` holds (an int inside int64/int32)."""
    if kind == pa.string():
        return all(v is None or type(v) is str for v in values)
    if kind == pa.bool_():
        return all(v is None or type(v) is bool for v in values)
    if kind == pa.float64():
        return all(v is None or type(v) is float or (type(v) is int and -2**53 <= v <= 2**53) for v in values)
    if kind in _NUMPY:
        low, high = (-2**63, 2**63 - 1) if kind == pa.int64() else (-2**31, 2**31 - 1)
        return all(v is None or (type(v) is int and low <= v <= high) for v in values)
    return False


@lru_cache(maxsize=256, typed=True)
def lit(value: bool | int | float | str | None, kind: pa.DataType) -> pa.Scalar:
    """One value as an Arrow scalar of `kind` (a compute function's operand)."""
    if value is None:
        return pa.nulls(1, kind)[0]
    return from_list([value], kind)[0]


def to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow column of int64, int32, float64 or bool without missing values
    as a numpy array, read from its buffers (`to_numpy` itself imports pandas);
    any other column through `to_numpy`."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n, start = len(values), values.offset
    if values.null_count or not (values.type in _NUMPY or values.type == pa.bool_()):
        return values.to_numpy(zero_copy_only=False)
    data = values.buffers()[1]
    if n == 0:
        return np.zeros(0, dtype=bool if values.type == pa.bool_() else _NUMPY[values.type])
    if values.type == pa.bool_():
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
        return bits[start:start + n].astype(bool)
    kind = np.dtype(_NUMPY[values.type])
    return np.frombuffer(data, dtype=kind, count=n, offset=start * kind.itemsize).copy()
