"""A run's grid parameters and extra arguments (its `params` text,
`a=32,alpha=0.5,metric=bandwidth`) as typed columns of `campaign results`.

Why columns: a script that plots a figure over a grid value should read that
value as a number, not split the `params` text itself. Each key found in the
selected rows' params is one column, named as the key (`param_<key>` where the
key is already a column of the export), typed by every value it takes: all
integers BIGINT, all finite numbers DOUBLE, else text; NULL in a row whose
params lack the key. Text too where the numbers would not keep the values
apart (`1.1` and `1.10`, `1` and `1.0`: one number of two configurations)
or an integer part is zero-padded (`007`): a string choice that reads as a
number is a name. The figure's own `metric=` pair is the `metric` column
already. The params texts are few (one per configuration), so the values are
parsed here once per distinct text and joined to the rows in SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

FIGURE_KEY = "metric"  # the figure's own pair (campaign.results.job_rows._with_metric): the `metric` column
PREFIX = "param_"  # before a key that is already a column of the export
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)
_PADDED = re.compile(r"[+-]?0[0-9]")  # an integer part with a leading zero: 007, -01, 00.5


def pairs(text: Any) -> list[tuple[str, str]]:
    """A `params` text (`key=value,...`, campaign.results.job_rows.params_text) as pairs; a
    part without `=` belongs to the previous value (a list argument such as `--a 20,32`)."""
    out: list[tuple[str, str]] = []
    for part in str(text or "").split(","):
        key, sep, value = part.partition("=")
        if sep or not out:
            out.append((key, value))
        else:
            out[-1] = (out[-1][0], f"{out[-1][1]},{part}")
    return [p for p in out if p[0]]


@dataclass(frozen=True)
class Grid:
    """The grid columns of a selection: (column name, SQL type) per key, in
    the order the keys first appear, and each distinct params text's values."""

    columns: dict[str, tuple[str, str]]  # key -> (column, BIGINT | DOUBLE | VARCHAR)
    texts: list[str]

    def table(self) -> Any:
        """One row per params text (`params`), a typed column per key: what the rows join."""
        import pyarrow as pa

        found = [dict(pairs(t)) for t in self.texts]
        kinds = {"BIGINT": pa.int64(), "DOUBLE": pa.float64(), "VARCHAR": pa.string()}
        out = {"params": pa.array(self.texts, pa.string())}
        for key, (name, kind) in self.columns.items():
            out[name] = pa.array([_value(row.get(key), kind) for row in found], kinds[kind])
        return pa.table(out)


def grid(texts: Iterable[str | None], taken: Iterable[str]) -> Grid:
    """The Grid of these params texts; `taken`: the export's own column names."""
    distinct = list(dict.fromkeys(t or "" for t in texts))
    values: dict[str, list[str]] = {}
    for text in distinct:
        for key, value in pairs(text):
            if key != FIGURE_KEY:
                values.setdefault(key, []).append(value)
    fixed = set(taken)
    columns = {key: (f"{PREFIX}{key}" if key in fixed else key, _kind(found)) for key, found in values.items()}
    return Grid(columns, distinct)


def _kind(values: list[str]) -> str:
    given = [v.strip() for v in values if v.strip()]
    if not given or any(_PADDED.match(v) for v in given):  # `007` is a name: as a number its zeros go
        return "VARCHAR"
    if all(_INTEGER.fullmatch(v) and _INT64[0] <= int(v) <= _INT64[1] for v in given):
        kind = "BIGINT"
    elif all(_finite(v) for v in given):
        kind = "DOUBLE"
    else:
        return "VARCHAR"
    # two texts of one number (`1.1` and `1.10` of a string choice; `1` and `1.0`, two runs) would be one
    # value of the column, their configurations pooled by whoever groups by it: text as written
    numbers = {_value(v, kind) for v in set(given)}
    return kind if len(numbers) == len(set(given)) else "VARCHAR"


def _finite(text: str) -> bool:
    if "_" in text:  # (Python's float reads 1_000; no program's number is written so)
        return False
    try:
        number = float(text)
    except ValueError:
        return False
    return number - number == 0  # (not NaN, not an infinity)


def _value(text: str | None, kind: str) -> Any:
    if text is None or (kind != "VARCHAR" and not text.strip()):
        return None
    return int(text) if kind == "BIGINT" else float(text) if kind == "DOUBLE" else text
