"""The result CSV's cell rules, one cell at a time (analysis/columns.py says
which rule a column has): the reference that the strict reader applies to a
file whose columns fail the whole-column checks of campaign.results.columnar,
so that every refusal names the same line and column as before.

Integers are plain ASCII digits inside int64, floats plain decimal or
exponent notation (`1_000`, `0x10`, `١` are refused; `nan`/`inf` are read
and then judged by `check_row`), text has no control character and at most
TEXT_MAX characters; a blank cell is a missing value (None).
"""

from __future__ import annotations

import math
import re
from typing import Any

from analysis.columns import FLOAT_RULES, INT_RULES
from campaign.errors import ImportError_

INT64 = (-(2**63), 2**63 - 1)
TEXT_MAX = 200
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NONFINITE = {"nan", "inf", "infinity"}
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def kind(col: str) -> str:
    return "int" if col in INT_RULES else "float" if col in FLOAT_RULES else "text"


def cell(value: str, col: str) -> Any:
    """One typed cell; ValueError names what is wrong with it."""
    value = value.strip()
    what = kind(col)
    if value == "":
        return None
    if what == "int":
        if not _INT.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not an integer")
        number = int(value)
        if not INT64[0] <= number <= INT64[1]:
            raise ValueError(f"{value[:40]} is outside the 64-bit integer range")
        return number
    if what == "float":
        if value.lstrip("+-").lower() in _NONFINITE:
            return float(value)  # NaN is a missing value where allowed; check_row refuses the rest
        if not _FLOAT.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not a number")
        return float(value)
    if len(value) > TEXT_MAX:
        raise ValueError(f"is {len(value)} characters long (at most {TEXT_MAX})")
    bad = CONTROL.search(value)
    if bad:
        raise ValueError(f"contains the control character {bad.group()!r}")
    return value


def scale_cell(value: str, col: str) -> str:
    """A `ranks`/`nodes` cell (analysis/columns.py SCALE_COLUMNS): an integer
    at least its minimum, kept in the row's extra object as the number's text."""
    number = cell(value, col)
    if number is None or number < INT_RULES[col].minimum:
        raise ValueError(f"{value.strip()[:40]!r} is not a positive integer")
    return str(number)


def check_row(row: dict[str, Any], where: str, judged: frozenset[str] = frozenset()) -> None:
    """The per-column value rules (minimum of an int, sign and finiteness of a
    float); a float column in `judged` may hold any number (its caller judges it)."""
    for col, rule in INT_RULES.items():
        value = row.get(col)
        if value is not None and value < rule.minimum:
            need = "positive" if rule.minimum == 1 else f">= {rule.minimum}"
            raise ImportError_(f"{where}: {col} must be {need}, got {value}")
    for col, frule in FLOAT_RULES.items():
        value = row.get(col)
        if value is None or (frule.allow_nan and math.isnan(value)) or col in judged:
            continue
        if not math.isfinite(value) or (value <= 0 if frule.positive else value < 0):
            sign = "positive" if frule.positive else "non-negative"
            raise ImportError_(f"{where}: {col} must be a {sign} finite number, got {value}")
