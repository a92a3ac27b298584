"""The result table's schema for the analysis: which columns identify a
group, and how an untrusted table (an imported CSV, a DataFrame handed in)
is checked and coerced by the one rule set (analysis.rules).

`validate_results` is all-or-nothing: it either returns a fully typed copy or
raises `SchemaError` naming the first bad row, so a caller can reject a table
with a line number (line = index + 2 for a CSV with a header) and never
half-use it.
"""

from __future__ import annotations

import pandas as pd

from analysis.rules import as_text, check
from resultschema.columns import (
    BASE_GROUP_COLUMNS,
    BY_NAME,
    OPTIONAL_COLUMNS,
    OPTIONAL_GROUP_COLUMNS,
    REQUIRED_COLUMNS,
    RULE_COLUMNS,
)

__all__ = ["BASE_GROUP_COLUMNS", "OPTIONAL_COLUMNS", "OPTIONAL_GROUP_COLUMNS", "REQUIRED_COLUMNS",
           "SchemaError", "group_columns", "validate_results"]


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
    """Group key columns present in `df`: the base six plus dtype/d/params/ranks/nodes if present."""
    return list(BASE_GROUP_COLUMNS) + [c for c in OPTIONAL_GROUP_COLUMNS if c in df.columns]


def validate_results(df: pd.DataFrame) -> pd.DataFrame:
    """Check and coerce a result table by analysis.rules; return a typed copy.

    Strings are stripped (empty = missing), integer columns become int64
    (Int64 where optional), float columns float64 (NaN = missing where
    allowed). Extra columns pass through untouched. Raises `SchemaError` (a
    ValueError) naming the first bad row's index and its first bad column.
    """
    missing_cols = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing_cols:
        raise SchemaError(f"missing required column {missing_cols[0]!r}", None, missing_cols[0])
    judged = {name: check(name, as_text(df[name].tolist(), name), required=name in REQUIRED_COLUMNS)
              for name in df.columns if name in RULE_COLUMNS}
    bad = [(row, place, name) for place, name in enumerate(df.columns)
           if name in judged and (row := judged[name].first_bad()) is not None]
    if bad:
        pos, _, column = min(bad)  # the first bad row, then its first bad column in table order
        label = df.index[pos]
        raise SchemaError(f"row {label!r}: column {column!r} has invalid value '{df[column].iloc[pos]}'",
                          label, column)
    out = df.copy()
    for name, checked in judged.items():
        if name not in REQUIRED_COLUMNS and checked.values.null_count == len(df):
            out = out.drop(columns=name)  # an optional column empty in every row is absent
            continue
        values = checked.values.to_pandas()
        values.index = df.index
        kind = BY_NAME[name].kind
        out[name] = values.astype(("int64" if name in REQUIRED_COLUMNS else "Int64") if kind == "int" else
                                  float if kind == "float" else object)
    return out
