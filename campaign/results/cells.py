"""The result CSV's rules one cell at a time: the slow path that names the
first bad line and its reason, for a file the whole-column rules
(analysis.rules, through campaign.results.columnar) did not accept. The
rules are resultschema.columns' (`Column.kind`, `minimum`, `positive`,
`allow_nan`), the same ones the vectorised path applies.

Integers are plain ASCII digits inside int64, floats plain decimal or
exponent notation (`1_000`, `0x10`, `١` are refused; `nan`/`inf` are read
and then judged by `check_row`), text has no control character and at most
TEXT_MAX characters; a blank cell is a missing value (None).
"""

from __future__ import annotations

import math
import re
from typing import Any

from campaign.plumbing.errors import ImportError_
from resultschema.columns import CONTROL as CONTROL_CLASS
from resultschema.columns import INT64, RESULT_SCHEMA, TEXT_MAX, column_rule

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NONFINITE = {"nan", "inf", "infinity"}
CONTROL = re.compile(CONTROL_CLASS)
_RULED = tuple(c for c in RESULT_SCHEMA if c.rule)


def kind(col: str) -> str:
    rule = column_rule(col)
    return "text" if rule is None else rule.kind


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
    """A `ranks`/`nodes` cell (kept in the row's extra object): an integer at
    least its minimum, kept as the number's text."""
    number = cell(value, col)
    rule = column_rule(col)
    if number is None or rule is None or number < (rule.minimum or 0):
        raise ValueError(f"{value.strip()[:40]!r} is not a positive integer")
    return str(number)


def check_row(row: dict[str, Any], where: str, judged: frozenset[str] = frozenset()) -> None:
    """The per-column value rules (minimum of an int, sign and finiteness of a
    float); a float column in `judged` may hold any number (its caller judges it)."""
    for rule in _RULED:
        value = row.get(rule.name)
        if value is None or rule.kind == "text":
            continue
        if rule.kind == "int" and rule.minimum is not None and value < rule.minimum:
            need = "positive" if rule.minimum == 1 else f">= {rule.minimum}"
            raise ImportError_(f"{where}: {rule.name} must be {need}, got {value}")
        if rule.kind != "float" or (rule.allow_nan and math.isnan(value)) or rule.name in judged:
            continue
        if not math.isfinite(value) or (value <= 0 if rule.positive else value < 0):
            sign = "positive" if rule.positive else "non-negative"
            raise ImportError_(f"{where}: {rule.name} must be a {sign} finite number, got {value}")
