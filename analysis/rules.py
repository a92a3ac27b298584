"""The one rule set of result values, applied to a whole
column at once with pyarrow.compute: what `campaign import` takes from a CSV,
what sync takes from a kernel's CSV and what the analysis takes as input
(analysis.schema) are all judged here, by the rules of resultschema.columns.

A column arrives as the text of its cells (a CSV's, or a DataFrame's cells
written as text) and leaves typed, with one mask per rule of the cells that
break it. The masks decide (a cell is bad where any is set) and they explain:
a reader refusing a file takes the first bad row from them and names the rule
that row's cell broke (`Checked.explain`), so the reason is never worked out
by a second reading of the cell.

Rules: text is stripped, holds no control character and at most TEXT_MAX
characters (NOTE_MAX in an imported CSV's carried text: an exported overlap
note joins a job's notes), blank is a missing value; an integer is plain ASCII digits
inside int64 and at least its column's minimum; a float is plain decimal or
exponent notation, as Arrow's cast to float64 reads it (the one reading of a
float cell, `_floats`), finite, positive (time_s) or non-negative, a blank or
"nan" missing where the column allows it; a required column has no missing
value. An optional column empty in every row is absent (its callers drop it).

An imported CSV (`imported`: `campaign import`, all rows or none) is read
stricter than a job's: a float is never NaN (rel_err, flops, bytes too), and
a figure's `value` and `higher_is_better` and a run's `gpus`
(IMPORT_LIFTED_COLUMNS; in a job's CSV text that the write types loosely, a
bad cell NULL) are checked: a value is a finite number, a direction
`true`/`false`, `yes`/`no` (any case) or a finite number, a GPU count an
integer >= 0. Their cells stay text, typed by the write as a job's. So do
the ledger columns `campaign results` exports (CARRIED: `attempt` and
`replicate` are checked as integers; `import` stores them typed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from resultschema.columns import (
    BY_NAME,
    CARRIED,
    CONTROL,
    FALSE_WORDS,
    IMPORT_LIFTED_COLUMNS,
    INT64,
    NOTE_MAX,
    TEXT_MAX,
    TRUE_WORDS,
    Column,
    column_rule,
)

_INT = r"^[+-]?[0-9]+$"
_LONG_DIGITS = 19  # an integer of this many significant digits or more may be outside int64: read in Python
SHOWN = 40  # characters of a bad cell quoted in a refusal

# The rules a cell can break, as a refusal says them ({value}: the cell as written, quoted).
NOT_INTEGER = "is not an integer: {value}"
OUT_OF_INT64 = "is outside the 64-bit integer range: {value}"
NOT_NUMBER = "is not a number: {value}"
EMPTY = "is empty"
NAN_MISSING = "has no value: {value}"
TOO_LONG = f"is longer than {TEXT_MAX} characters: {{value}}"
CONTROL_CHAR = "contains a control character: {value}"
NOT_DIRECTION = "must be true/false, yes/no or a finite number, got {value}"


@dataclass
class Checked:
    """One column judged: its typed values (null = missing) and, per rule
    broken, the mask of its cells that break it (in the order the rules are
    judged). `indices`: the masks are over the column's distinct cells
    (a dictionary), these map each row to its cell."""

    values: pa.Array
    broken: list[tuple[str, pa.Array]] = field(default_factory=list)
    indices: pa.Array | None = None

    @cached_property
    def bad(self) -> pa.Array:
        """bool, one per row: the cell breaks a rule."""
        if not self.broken:
            return pa.repeat(False, len(self.values))
        bad = self.broken[0][1]
        for _, mask in self.broken[1:]:
            bad = pc.or_(bad, mask)
        return bad if self.indices is None else bad.take(self.indices)

    @property
    def ok(self) -> bool:
        return not self.broken or not pc.any(self.bad).as_py()

    def first_bad(self) -> int | None:
        if not self.broken:
            return None
        index = pc.index(self.bad, True).as_py()
        return None if index < 0 else int(index)

    def rule_at(self, row: int) -> str | None:
        """The first rule the cell of `row` breaks (a template of {value}), or None."""
        at = row if self.indices is None else self.indices[row].as_py()
        return next((rule for rule, mask in self.broken if mask[at].as_py()), None)

    def explain(self, row: int, cell: str | None) -> str | None:
        """What is wrong with the cell of `row` (its text as written: `cell`), or None."""
        rule = self.rule_at(row)
        return None if rule is None else rule.format(value=shown(cell or ""))


def required_where(checked: Checked, rows: pa.Array, rule: str) -> Checked:
    """`checked` with one rule more: a missing value in a row where `rows` is set breaks `rule`."""
    broken = [(r, mask if checked.indices is None else mask.take(checked.indices)) for r, mask in checked.broken]
    return Checked(checked.values, broken + _rules((rule, pc.and_(pc.is_null(checked.values), rows))))


def shown(cell: str) -> str:
    """A cell as a refusal quotes it: stripped, cut to SHOWN characters, with its length where cut."""
    text = cell.strip()
    return repr(text) if len(text) <= SHOWN else f"{text[:SHOWN]!r}... ({len(text)} characters)"


def _rules(*pairs: tuple[str, Any]) -> list[tuple[str, pa.Array]]:
    """The (rule, mask) pairs of a column, nulls as False, the pairs of no cell left out."""
    return [(rule, pc.fill_null(mask, False)) for rule, mask in pairs if mask is not None]


def check(name: str, cells: pa.Array, required: bool = False, judged: bool = False,
          imported: bool = False) -> Checked:
    """The cells (text) of column `name`, typed by its rule. `judged`: a float
    column whose range the caller judges (a job's rel_err: any number read).
    `imported`: a cell of an imported CSV (the stricter rules above).
    A column of few distinct cells (a sync's kernel, n, dtype, ... over
    thousands of files) is judged once per distinct cell."""
    if len(cells) >= _FEW_SAMPLE * 4 and not cells.null_count and \
            pc.count_distinct(cells.slice(0, _FEW_SAMPLE)).as_py() <= _FEW_SAMPLE // 16:
        encoded = cells.dictionary_encode()
        if len(encoded.dictionary) * 4 <= len(cells):
            few = _check(name, encoded.dictionary, required, judged, imported)
            return Checked(few.values.take(encoded.indices), few.broken, encoded.indices)
    return _check(name, cells, required, judged, imported)


_FEW_SAMPLE = 1024  # cells sampled to guess whether a column has few distinct cells


def _check(name: str, cells: pa.Array, required: bool, judged: bool, imported: bool) -> Checked:
    text = pc.utf8_trim_whitespace(cells)
    blank = pc.fill_null(pc.equal(text, ""), True)
    col = column_rule(name)
    kind = "text" if col is None else col.kind
    if kind == "int":
        assert col is not None
        return _ints(text, blank, col.minimum or 0, required)
    if kind == "float":
        assert col is not None
        return _floats(text, blank, col, required, judged, imported)
    carried = CARRIED.get(name) if imported else None
    limit = NOTE_MAX if carried is not None and carried.kind == "text" else TEXT_MAX
    too_long = pc.greater(pc.utf8_length(text), limit)
    control = pc.match_substring_regex(text, CONTROL)
    longer = TOO_LONG if limit == TEXT_MAX else TOO_LONG.replace(str(TEXT_MAX), str(limit))
    out = Checked(pc.if_else(blank, pa.scalar(None, pa.string()), text),
                  _rules((longer, too_long), (CONTROL_CHAR, control), (EMPTY, blank if required else None)))
    if imported and name in IMPORT_LIFTED_COLUMNS:  # checked as its kind, kept as its text (typed at the write)
        lifted = BY_NAME[name]
        typed = (_floats(text, blank, lifted, False, False, True) if lifted.kind == "float" else
                 _ints(text, blank, lifted.minimum or 0, False) if lifted.kind == "int" else _direction(text, blank))
        out.broken += typed.broken
    if carried is not None and carried.kind == "int":  # an exported attempt/replicate: kept as its text too
        out.broken += _ints(text, blank, carried.minimum or 0, False).broken
    return out


def _direction(text: pa.Array, blank: pa.Array) -> Checked:
    """A figure's direction as an import takes it: a word of TRUE_WORDS or FALSE_WORDS (any case),
    else a finite number (true where not 0), as the write reads it (campaign.ledger.result_schema)."""
    word = pc.is_in(pc.utf8_lower(text), value_set=pa.array(TRUE_WORDS + FALSE_WORDS))
    values, _ = _read(pc.if_else(pc.or_(blank, word), pa.scalar(None, pa.string()), text))
    bad = pc.and_(pc.invert(pc.or_(blank, word)), pc.invert(pc.fill_null(pc.is_finite(values), False)))
    return Checked(values, _rules((NOT_DIRECTION, bad)))


def _ints(text: pa.Array, blank: pa.Array, minimum: int, required: bool) -> Checked:
    not_int = pc.and_(pc.invert(pc.match_substring_regex(text, _INT)), pc.invert(blank))
    usable = pc.invert(pc.or_(not_int, blank))
    long = pc.and_(usable, pc.greater_equal(pc.utf8_length(pc.utf8_ltrim(text, "+-0")), _LONG_DIGITS))
    short = pc.if_else(pc.and_(usable, pc.invert(long)), pc.utf8_ltrim(text, "+"), pa.scalar(None, pa.string()))
    values = pc.cast(short, pa.int64())  # at most 18 significant digits: inside int64
    out_of_range = None
    if pc.any(long).as_py():  # near or past int64's limits: those few cells read exactly
        read = [_int64(v) for v in pc.filter(text, long).to_pylist()]
        values = pc.replace_with_mask(values, long, pa.array(read, pa.int64()))
        out_of_range = pc.and_(long, pc.is_null(values))
    need = "positive" if minimum == 1 else f">= {minimum}"
    return Checked(values, _rules((NOT_INTEGER, not_int), (OUT_OF_INT64, out_of_range),
                                  (f"must be {need}, got {{value}}", pc.less(values, minimum)),
                                  (EMPTY, blank if required else None)))


def _int64(text: str) -> int | None:
    if len(text.lstrip("+-").lstrip("0")) > _LONG_DIGITS:  # (and int() of thousands of digits is refused)
        return None
    value = int(text)
    return value if INT64[0] <= value <= INT64[1] else None


def _floats(text: pa.Array, blank: pa.Array, col: Column, required: bool, judged: bool,
            imported: bool = False) -> Checked:
    """A float cell is what Arrow's cast of text to float64 reads: decimal or
    exponent notation with an optional sign, or inf, infinity, nan (any case,
    signed); not hex, `_`, a `d` exponent, an inner space or a non-ASCII digit.
    That one cast (`_read`) is the only reader of a float cell: the values
    come from it, nan and inf are told by the value it gives, and the cells
    it cannot read are found by the same cast over slices. Matching every
    cell against patterns beside the cast, to tell the same, cost three times
    the cast over a column of numbers."""
    if pc.any(blank).as_py():
        text = pc.if_else(blank, pa.scalar(None, pa.string()), text)
    values, unread = _read(text)
    nan = pc.is_nan(values)
    if pc.any(nan).as_py():  # the cast also reads C's NaN with a payload, nan(...): not a number here
        payload = pc.fill_null(pc.and_(nan, pc.invert(pc.ends_with(text, "nan", ignore_case=True))), False)
        if pc.any(payload).as_py():
            unread = payload if unread is None else pc.or_(unread, payload)
            values = pc.if_else(payload, pa.scalar(None, pa.float64()), values)
            nan = pc.is_nan(values)
    out_of_range = None
    if not judged:
        out_of_range = pc.invert(pc.is_finite(values))
        if col.rule:  # (a figure's value, checked on import only, may be any finite number)
            sign = pc.less_equal(values, 0.0) if col.positive else pc.less(values, 0.0)
            out_of_range = pc.or_(out_of_range, sign)
        if col.allow_nan and not imported:  # a nan is a missing value here, not a number out of range
            out_of_range = pc.and_(out_of_range, pc.invert(nan))
    missing = nan if required and col.allow_nan else None
    outside = None  # (where the rule above passes: a finite number of the right sign)
    if col.span is not None and not judged:
        outside = pc.or_(pc.less(values, col.span[0]), pc.greater(values, col.span[1]))
    return Checked(values, _rules((NOT_NUMBER, unread), (_range_rule(col), out_of_range),
                                  (_span_rule(col), outside), (EMPTY, blank if required else None),
                                  (NAN_MISSING, missing)))


def _span_rule(col: Column) -> str:
    if col.span is None:
        return ""
    low, high = (f"{bound:g}".replace("e+0", "e").replace("e+", "e") for bound in col.span)
    return f"must be from {low} to {high}{' ' + col.unit if col.unit else ''}, got {{value}}"


def _range_rule(col: Column) -> str:
    if not col.rule:
        return "must be a finite number, got {value}"
    return f"must be a {'positive' if col.positive else 'non-negative'} finite number, got {{value}}"


def _read(text: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """The cells as float64 (null: a null cell or one the cast cannot read)
    and the mask of the cells it cannot read (None: it reads them all). The
    cast names no cell when it fails, so the column's distinct cells are then
    cast again in slices down to the failing ones (`_unread`): only a refused
    column pays that, about one cast of a slice per distinct cell it holds
    where most of its cells fail, fewer where few do."""
    try:
        return _cast(text), None
    except pa.ArrowInvalid:
        pass
    distinct = pc.unique(text)  # (a column's bad cells are often one text repeated: n/a, -, ERROR)
    at: list[int] = []
    _unread(distinct, 0, at)
    unread = pc.fill_null(pc.is_in(text, value_set=distinct.take(pa.array(at, pa.int64()))), False)
    return _cast(pc.if_else(unread, pa.scalar(None, pa.string()), text)), unread


def _cast(text: pa.Array) -> pa.Array:
    """The one reading of float cells; raises ArrowInvalid where a cell is not one."""
    return pc.cast(text, pa.float64())


_SPLIT = 8  # slices a failing slice is cast in


def _unread(text: pa.Array, offset: int, at: list[int]) -> None:
    """Appends to `at` the positions (`offset` + i) of the cells of this slice that `_cast` cannot read."""
    try:
        _cast(text)
    except pa.ArrowInvalid:
        if len(text) == 1:
            at.append(offset)
            return
        step = -(-len(text) // _SPLIT)
        for start in range(0, len(text), step):
            _unread(text.slice(start, step), offset + start, at)


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
