"""The one rule set of result values, applied to a whole
column at once with pyarrow.compute: what `campaign import` takes from a CSV,
what sync takes from a kernel's CSV and what the analysis takes as input
(analysis.schema) are all judged here, by the rules of resultschema.columns.

A column arrives as the text of its cells (a CSV's, or a DataFrame's cells
written as text) and leaves typed, with a mask of the cells that break a
rule. The callers only use the masks to find the FIRST bad row; the CSV
readers then let the per-cell reference (campaign.results.cells) name that
line and its reason, so a refusal reads as it always did.

Rules: text is stripped, holds no control character and at most TEXT_MAX
characters, blank is a missing value; an integer is plain ASCII digits
inside int64 and at least its column's minimum; a float is plain decimal or
exponent notation, finite, positive (time_s) or non-negative, a blank or
"nan" missing where the column allows it; a required column has no missing
value. An optional column empty in every row is absent (its callers drop it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from resultschema.columns import CONTROL, INT64, TEXT_MAX, Column, column_rule

_INT = r"^[+-]?[0-9]{1,19}$"
_FLOAT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_NAN = r"^[+-]?[nN][aA][nN]$"


@dataclass
class Checked:
    """One column judged: its typed values (null = missing) and where a rule is broken."""

    values: pa.Array
    bad: pa.Array  # bool, one per row

    @property
    def ok(self) -> bool:
        return not pc.any(self.bad).as_py()

    def first_bad(self) -> int | None:
        index = pc.index(self.bad, True).as_py()
        return None if index < 0 else int(index)


def check(name: str, cells: pa.Array, required: bool = False, judged: bool = False) -> Checked:
    """The cells (text) of column `name`, typed by its rule. `judged`: a float
    column whose range the caller judges (a job's rel_err: any number read).
    A column of few distinct cells (a sync's kernel, n, dtype, ... over
    thousands of files) is judged once per distinct cell."""
    if len(cells) >= _FEW_SAMPLE * 4 and not cells.null_count and \
            pc.count_distinct(cells.slice(0, _FEW_SAMPLE)).as_py() <= _FEW_SAMPLE // 16:
        encoded = cells.dictionary_encode()
        if len(encoded.dictionary) * 4 <= len(cells):
            few = _check(name, encoded.dictionary, required, judged)
            return Checked(few.values.take(encoded.indices), few.bad.take(encoded.indices))
    return _check(name, cells, required, judged)


_FEW_SAMPLE = 1024  # cells sampled to guess whether a column has few distinct cells


def _check(name: str, cells: pa.Array, required: bool, judged: bool) -> Checked:
    text = pc.utf8_trim_whitespace(cells)
    blank = pc.fill_null(pc.equal(text, ""), True)
    col = column_rule(name)
    kind = "text" if col is None else col.kind
    if kind == "int":
        assert col is not None
        return _ints(text, blank, col.minimum or 0, required)
    if kind == "float":
        assert col is not None
        return _floats(text, blank, col, required, judged)
    bad = pc.or_(pc.greater(pc.utf8_length(text), TEXT_MAX), pc.match_substring_regex(text, CONTROL))
    if required:
        bad = pc.or_(bad, blank)
    return Checked(pc.if_else(blank, pa.scalar(None, pa.string()), text), pc.fill_null(bad, False))


def _ints(text: pa.Array, blank: pa.Array, minimum: int, required: bool) -> Checked:
    shaped = pc.match_substring_regex(text, _INT)
    bad = pc.and_(pc.invert(shaped), pc.invert(blank))
    usable = pc.if_else(pc.or_(bad, blank), pa.scalar(None, pa.string()), text)
    try:
        values = pc.cast(pc.utf8_ltrim(usable, "+"), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # outside int64: those cells one by one
        values = pa.array([_int64(v) for v in usable.to_pylist()], pa.int64())
        bad = pc.or_(bad, pc.and_(pc.is_null(values), pc.invert(pc.is_null(usable))))
    bad = pc.or_(bad, pc.fill_null(pc.less(values, minimum), False))
    if required:
        bad = pc.or_(bad, blank)
    return Checked(values, pc.fill_null(bad, False))


def _int64(text: str | None) -> int | None:
    if text is None:
        return None
    value = int(text)
    return value if INT64[0] <= value <= INT64[1] else None


def _floats(text: pa.Array, blank: pa.Array, col: Column, required: bool, judged: bool) -> Checked:
    if not pc.any(blank).as_py():  # a measured column, every cell a number (most): one cast, no pattern
        quick = _finite_floats(text, col, judged)
        if quick is not None:
            return quick
    return _floats_by_shape(text, blank, col, required, judged)


def _finite_floats(text: pa.Array, col: Column, judged: bool) -> Checked | None:
    """The cells as numbers where Arrow's cast reads every one as a finite
    float, else None. The cast reads what _FLOAT describes and nothing more
    (no hex, `_`, `d` exponent or inner space; tests/analysis/test_rules_floats.py
    holds the two to each other), so a cell it reads is plain; only its
    range is left to judge. Against both patterns: a third of the cost."""
    try:
        values = pc.cast(text, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not pc.all(pc.is_finite(values)).as_py():  # inf or nan: the patterns tell which is allowed
        return None
    if judged:
        return Checked(values, pc.is_null(values))  # (none: any number is read)
    return Checked(values, pc.less_equal(values, 0.0) if col.positive else pc.less(values, 0.0))


def _floats_by_shape(text: pa.Array, blank: pa.Array, col: Column, required: bool, judged: bool) -> Checked:
    nan = pc.match_substring_regex(text, _NAN)
    plain = pc.match_substring_regex(text, _FLOAT)
    if judged:  # any number: infinities too
        nan = pc.or_(nan, pc.match_substring_regex(text, r"^[+-]?(?i:inf|infinity)$"))
    bad = pc.invert(pc.or_(pc.or_(plain, nan), blank))
    usable = pc.if_else(pc.or_(bad, blank), pa.scalar(None, pa.string()), text)
    values = pc.cast(usable, pa.float64())
    missing = pc.or_(blank, nan) if col.allow_nan else blank
    if not judged:
        finite = pc.is_finite(values)
        sign = pc.less_equal(values, 0.0) if col.positive else pc.less(values, 0.0)
        out_of_range = pc.or_(pc.invert(finite), sign)
        bad = pc.or_(bad, pc.and_(pc.fill_null(out_of_range, False), pc.invert(missing)))
        if not col.allow_nan:
            bad = pc.or_(bad, nan)
    if required:
        bad = pc.or_(bad, missing)
    return Checked(values, pc.fill_null(bad, False))


def as_text(values: Any, name: str) -> pa.Array:
    """A DataFrame column's cells as the text a CSV would hold (analysis
    input): numbers of an integer column that are whole as integers."""
    col = column_rule(name)
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            out.append("")
        elif isinstance(v, float) and col is not None and col.kind == "int" and v.is_integer():
            out.append(str(int(v)))
        elif isinstance(v, float):
            out.append(repr(v))
        else:
            out.append(str(v))
    return pa.array(out, pa.string())
