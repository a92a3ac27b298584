"""The result table's schema: which columns exist, which identify a group, and
how an untrusted table (an imported CSV) is checked and coerced.

`validate_results` is all-or-nothing: it either returns a fully typed copy or
raises `SchemaError` naming the first bad row, so `campaign import` can reject
a file with a line number (line = index + 2 for a CSV with a header) and never
half-import it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.columns import (
    BASE_GROUP_COLUMNS,
    FLOAT_RULES,
    INT_RULES,
    OPTIONAL_COLUMNS,
    OPTIONAL_GROUP_COLUMNS,
    REQUIRED_COLUMNS,
    TEXT_COLUMNS,
)

__all__ = ["BASE_GROUP_COLUMNS", "OPTIONAL_COLUMNS", "OPTIONAL_GROUP_COLUMNS", "REQUIRED_COLUMNS",
           "SchemaError", "group_columns", "validate_results"]

_STRING_COLUMNS = tuple(c for c in REQUIRED_COLUMNS if c in TEXT_COLUMNS)
_OPTIONAL_STRING_COLUMNS = tuple(c for c in TEXT_COLUMNS if c not in _STRING_COLUMNS)
# column -> smallest allowed value (integers).
_INT_COLUMNS = {c: r.minimum for c, r in INT_RULES.items() if c in REQUIRED_COLUMNS}
_OPTIONAL_INT_COLUMNS = {c: r.minimum for c, r in INT_RULES.items() if c not in REQUIRED_COLUMNS}
# column -> (allow NaN, must be > 0)
_FLOAT_COLUMNS = {c: (r.allow_nan, r.positive) for c, r in FLOAT_RULES.items() if c in REQUIRED_COLUMNS}
_OPTIONAL_FLOAT_COLUMNS = {c: (r.allow_nan, r.positive) for c, r in FLOAT_RULES.items() if c not in REQUIRED_COLUMNS}


class SchemaError(ValueError):
    """A result table violates the schema.

    `index` is the DataFrame index label of the first bad row (None when a
    whole column is missing), `column` the offending column.
    """

    def __init__(self, message: str, index: object | None, column: str) -> None:
        super().__init__(message)
        self.index = index
        self.column = column


def group_columns(df: pd.DataFrame) -> list[str]:
    """Group key columns present in `df`: the base six plus dtype/d if present."""
    return list(BASE_GROUP_COLUMNS) + [c for c in OPTIONAL_GROUP_COLUMNS if c in df.columns]


def _string_bad(col: pd.Series, required: bool) -> tuple[pd.Series, pd.Series]:
    """Return (stripped strings, bad mask). Empty/blank strings count as missing."""
    text = col.astype("str").str.strip()
    missing = text.isna() | (text == "")
    text = text.where(~missing, np.nan)
    bad = missing if required else pd.Series(False, index=col.index)
    return text, bad


def _blank(col: pd.Series) -> pd.Series:
    """Missing or whitespace-only cells (how a CSV spells 'no value')."""
    if col.dtype.kind in "iufb":
        return col.isna()
    text = col.astype("str").str.strip()
    return text.isna() | (text == "")


def _int_bad(col: pd.Series, minimum: int, required: bool) -> tuple[pd.Series, pd.Series]:
    """Return (coerced Int64, bad mask): non-numbers, non-integers, too small."""
    num = pd.to_numeric(col, errors="coerce")
    missing = _blank(col)
    values = num.to_numpy(dtype=float, na_value=np.nan)
    not_int = np.isfinite(values) & (np.floor(values) != values)
    bad = (num.isna() & ~missing) | not_int | (values < minimum)
    if required:
        bad = bad | missing
    ints = pd.array(np.where(np.isfinite(values) & ~bad, values, np.nan)).astype("Int64")
    return pd.Series(ints, index=col.index), pd.Series(bad, index=col.index)


def _float_bad(col: pd.Series, allow_nan: bool, positive: bool) -> tuple[pd.Series, pd.Series]:
    """Return (coerced float64, bad mask): non-numbers, infinities, signs.

    A blank cell or the text "nan" is a missing value, which `allow_nan` accepts.
    """
    num = pd.to_numeric(col, errors="coerce").astype(float)
    values = num.to_numpy()
    missing = _blank(col).to_numpy()
    if col.dtype.kind not in "iufb":
        missing = missing | (col.astype("str").str.strip().str.lower() == "nan").to_numpy()
    unparsable = np.isnan(values) & ~missing
    bad = unparsable | np.isinf(values)
    if not allow_nan:
        bad = bad | np.isnan(values)
    finite = np.isfinite(values)
    bad = bad | (finite & ((values <= 0) if positive else (values < 0)))
    return pd.Series(values, index=col.index), pd.Series(bad, index=col.index)


def validate_results(df: pd.DataFrame) -> pd.DataFrame:
    """Check and coerce a result table; return a typed copy.

    Strings are stripped (empty = missing), `threads`, `n`, `repeat`, `d` become
    integers (`threads`, `n`, `d` >= 1, `repeat` >= 0), `time_s` a finite float
    > 0, `flops`/`bytes`/`rel_err` floats (>= 0, NaN allowed). Extra columns pass
    through untouched. Raises `SchemaError` (a ValueError) naming the first bad
    row's index and the first bad column in that row.
    """
    missing_cols = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing_cols:
        raise SchemaError(f"missing required column {missing_cols[0]!r}", None, missing_cols[0])
    out = df.copy()
    bad: dict[str, pd.Series] = {}
    for name in _STRING_COLUMNS:
        out[name], bad[name] = _string_bad(df[name], required=True)
    for name in _OPTIONAL_STRING_COLUMNS:
        if name in df.columns:
            out[name], bad[name] = _string_bad(df[name], required=False)
    for name, minimum in {**_INT_COLUMNS, **_OPTIONAL_INT_COLUMNS}.items():
        if name in df.columns:
            out[name], bad[name] = _int_bad(df[name], minimum, name in _INT_COLUMNS)
    for name, (allow_nan, positive) in {**_FLOAT_COLUMNS, **_OPTIONAL_FLOAT_COLUMNS}.items():
        if name in df.columns:
            out[name], bad[name] = _float_bad(df[name], allow_nan, positive)
    _raise_first_bad(df, bad)
    for name in _INT_COLUMNS:
        out[name] = out[name].astype("int64")
    return out


def _raise_first_bad(df: pd.DataFrame, bad: dict[str, pd.Series]) -> None:
    """Raise SchemaError for the first row (in table order) with a bad cell."""
    ordered = [c for c in df.columns if c in bad]
    matrix = np.column_stack([bad[c].to_numpy(dtype=bool) for c in ordered])
    rows = np.flatnonzero(matrix.any(axis=1))
    if rows.size == 0:
        return
    pos = int(rows[0])
    column = ordered[int(np.flatnonzero(matrix[pos])[0])]
    label = df.index[pos]
    value = df[column].iloc[pos]
    raise SchemaError(
        f"row {label!r}: column {column!r} has invalid value '{value}'", label, column
    )
