"""analysis.rules reads a float cell one way, Arrow's cast to float64: what
it reads is a number (nan and inf told by the value), what it cannot read is
refused as not a number, and a column's cells it cannot read are found by the
same cast over slices. Held here: the cells the docs take and refuse
(docs/ledger.md: plain decimals or exponents; `1_000`, `0x10` refused; inf and
nan by the column's rule), each cell of a column judged as that cell alone,
wherever it stands, and one cast for a column the cast reads whole."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from analysis import rules

# (cell, the number read) for rel_err, a judged column (any number is read)
READ = [("1", 1.0), ("+1.5", 1.5), ("-2.5", -2.5), ("1.", 1.0), (".5", 0.5), ("1e5", 1e5), ("1E+5", 1e5),
        ("12e0001", 120.0), ("00012", 12.0), ("1.5e-400", 0.0), ("-0", -0.0), ("3e-7", 3e-7), (" 4.5\t", 4.5),
        ("\u00a00.5\u2003", 0.5), ("1e400", math.inf), ("-1e400", -math.inf), ("inf", math.inf), ("-inf", -math.inf),
        ("Infinity", math.inf), ("+INF", math.inf), ("nan", math.nan), ("+nan", math.nan), ("-NaN", math.nan),
        ("1" * 300, float("1" * 300)), ("." + "9" * 400, 1.0), ("1.7976931348623157e308", 1.7976931348623157e308)]
# hex, `_`, Fortran `d`, inner spaces, unicode digits, C's nan payload, and what is no number at all
REFUSED = ["0x1p3", "0X10", "1_0", "1_000", "1d5", "1e", "e5", ".", "+.e1", "+-1", "--1", "+-nan", "1.5.5", "1,5",
           "1e5.5", "5e-", "1f", "1L", "\u0661", "\uff11", "1 5", "+ 1", "nan(1)", "NaN()", "infinit", "infinityy",
           "nanx", "x", "\ufeff1", "1\x01", "12.5ms", "n/a", "-"]


def _check(name: str, cells: list[str], required: bool = True, judged: bool = False) -> rules.Checked:
    return rules.check(name, pa.array(cells, pa.string()), required, judged)


def test_a_float_cell_is_read_as_the_docs_say() -> None:
    got = _check("rel_err", [cell for cell, _ in READ], required=False, judged=True)
    assert got.ok
    for (cell, want), value in zip(READ, got.values.to_pylist()):
        assert value == want or (math.isnan(want) and math.isnan(value)), (cell, value)
        assert math.isnan(want) or math.copysign(1, value) == math.copysign(1, want), cell
    for cell in REFUSED:
        one = _check("rel_err", [cell], judged=True)
        assert one.explain(0, cell) == f"is not a number: {rules.shown(cell)}", cell


@pytest.mark.parametrize(("name", "cell", "required", "rule"), [
    ("time_s", "0", True, "must be a positive finite number, got '0'"),
    ("time_s", "-1e-3", True, "must be a positive finite number, got '-1e-3'"),
    ("time_s", "inf", True, "must be a positive finite number, got 'inf'"),
    ("time_s", "1e400", True, "must be a positive finite number, got '1e400'"),
    ("time_s", "nan", True, "must be a positive finite number, got 'nan'"),
    ("time_s", "", True, "is empty"),
    ("time_s", "nan(1)", True, "is not a number: 'nan(1)'"),
    # a time no run takes: beside 1e300, 1e-320 made every ratio, speedup and exponent inf or 0
    ("time_s", "1e-320", True, "must be from 1e-12 to 1e9 s, got '1e-320'"),
    ("time_s", "1.5e9", True, "must be from 1e-12 to 1e9 s, got '1.5e9'"),
    ("time_s", "1e-12", True, None), ("time_s", "1e9", True, None),
    ("flops", "-inf", False, "must be a non-negative finite number, got '-inf'"),
    ("flops", "nan", False, None), ("flops", "NaN", True, "has no value: 'NaN'"), ("flops", "", False, None),
    ("flops", "0", True, None), ("bytes", "nan(2)", False, "is not a number: 'nan(2)'"),
])
def test_a_read_number_is_judged_by_its_columns_rule(name: str, cell: str, required: bool, rule: str | None) -> None:
    assert _check(name, [cell], required).explain(0, cell) == rule


def _column(rng: random.Random, size: int, bad_share: float) -> list[str]:
    good = ["1.5", "2e-3", " 7 ", "", "nan", "inf", "0", "-1"]
    return [rng.choice(REFUSED) if rng.random() < bad_share else rng.choice([repr(rng.uniform(1e-6, 9)), *good])
            for _ in range(size)]


@pytest.mark.parametrize(("name", "judged"), [("time_s", False), ("flops", False), ("rel_err", True)])
def test_each_cell_of_a_column_is_judged_as_that_cell_alone(name: str, judged: bool) -> None:
    """The cells the cast cannot read are found wherever they stand (first, last, every one, one in
    thousands, a column of few distinct cells): the column's masks, rules and values are its cells' own."""
    rng = random.Random(7)
    columns = [_column(rng, rng.choice([1, 2, 9, 64, 300]), rng.choice([0, 0.01, 0.2, 1])) for _ in range(60)]
    columns += [["x"] + ["1.5"] * 999, ["1.5"] * 999 + ["1_0"], ["0x10"] * 5000, _column(rng, 5000, 0.001)]
    columns += [[rng.choice(["1.5", "2.5", "n/a", "", "3"]) for _ in range(5000)]]  # (judged per distinct cell)
    alone = {cell: _check(name, [cell], True, judged) for cells in columns for cell in set(cells)}
    for cells in columns:
        got = _check(name, cells, True, judged)
        assert got.bad.to_pylist() == [alone[c].bad[0].as_py() for c in cells], cells[:20]
        assert [got.rule_at(i) for i in range(len(cells))] == [alone[c].rule_at(0) for c in cells]
        for c, value in zip(cells, got.values.to_pylist()):
            want = alone[c].values[0].as_py()
            assert value == want or (value is not None and want is not None and math.isnan(value) and math.isnan(want))


class _Casts:
    """The rules' cast, counted (it still casts)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        cast = rules._cast

        def counted(text: pa.Array) -> pa.Array:
            self.calls += 1
            return cast(text)
        monkeypatch.setattr(rules, "_cast", counted)


def test_a_column_the_cast_reads_whole_is_cast_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The speed of a column of numbers: one cast, no pattern, blanks, nan and inf included."""
    casts = _Casts(monkeypatch)
    rng = random.Random(3)
    for cells in ([repr(rng.uniform(1e-6, 1)) for _ in range(20_000)], ["1.5", "", "nan", "inf", " 2e-3 "] * 1000):
        before = casts.calls
        for name in ("time_s", "flops"):
            _check(name, cells, name == "time_s")
        assert casts.calls - before == 2


def test_a_refused_column_is_narrowed_in_few_casts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding the cells the cast cannot read costs casts of slices per such distinct cell, not per cell:
    one bad cell among 100,000 distinct ones costs at most 2 + 8 per level of the slices, a text repeated
    in 1,000 cells the same."""
    casts = _Casts(monkeypatch)
    cells = [repr(i / 7 + 1) for i in range(100_000)]
    levels = math.ceil(math.log(len(cells), rules._SPLIT))
    for bad in (["n/a"], ["n/a"] * 1000):
        column, at = list(cells), [(k * 7919 + 50_000) % len(cells) for k in range(len(bad))]
        for k, cell in zip(at, bad):
            column[k] = cell
        before = casts.calls
        got = _check("time_s", column)
        assert casts.calls - before <= 3 + rules._SPLIT * levels
        assert got.bad.to_pylist().count(True) == len(set(at)) and got.first_bad() == min(at)
