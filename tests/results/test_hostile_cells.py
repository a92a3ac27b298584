"""Each hostile cell of a kernel CSV, column by column: the value the one
reader makes of it, or the refusal naming the file's line, the column, the
quoted cell and the rule it broke (the random corpus of test_hostile_csv
covers their mixtures)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.results.test_hostile_csv import HEADER, _parsed

ONE = ",".join(HEADER) + "\n" + "fake,py,ok,cpu,fp32,64,64,1,0,0.5,0.1,1e-7\n"
# (column, cell, the value read or the refusal after "f.csv line 3: column NAME ")
CELLS: list[tuple[str, str, Any]] = [
    ("n", "128", 128), ("n", " +128 ", 128), ("n", "0" * 25 + "5", 5), ("n", str(2**63 - 1), 2**63 - 1),
    ("repeat", "-0", 0), ("threads", str(2**63), f"is outside the 64-bit integer range: '{2**63}'"),
    ("n", "1" * 5000, "is outside the 64-bit integer range: '" + "1" * 40 + "'... (5000 characters)"),
    ("repeat", str(-(2**63) - 1), f"is outside the 64-bit integer range: '{-(2**63) - 1}'"),
    ("n", "1_000", "is not an integer: '1_000'"), ("n", "0x10", "is not an integer: '0x10'"),
    ("n", "\u0661", "is not an integer: '\u0661'"), ("n", "1e3", "is not an integer: '1e3'"),
    ("n", "2.5", "is not an integer: '2.5'"), ("n", "nan", "is not an integer: 'nan'"),
    ("d", "0", "must be positive, got '0'"), ("repeat", "-1", "must be >= 0, got '-1'"), ("n", "", "is empty"),
    ("d", "", None), ("time_s", "1e-3", 1e-3), ("time_s", "5.", 5.0), ("time_s", ".5", 0.5),
    ("time_s", "0", "must be a positive finite number, got '0'"),
    ("time_s", "inf", "must be a positive finite number, got 'inf'"),
    ("time_s", "NaN", "must be a positive finite number, got 'NaN'"),
    ("time_s", "1e999", "must be a positive finite number, got '1e999'"),
    ("time_s", "9e-13", "must be from 1e-12 to 1e9 s, got '9e-13'"), ("time_s", "1e9", 1e9),
    ("time_s", "1_0", "is not a number: '1_0'"), ("time_s", "1d5", "is not a number: '1d5'"),
    ("time_s", "\u00a00.5\u2003", 0.5), ("time_s", "", "is empty"),
    ("rel_err", "-1e-400", -0.0), ("rel_err", "-5", "must be a non-negative finite number, got '-5'"),
    ("rel_err", "nan", "nan"), ("rel_err", "", None), ("rel_err", "-inf", "must be a non-negative finite number, got '-inf'"),
    ("kernel", "  fake  ", "fake"), ("kernel", "", "is empty"), ("kernel", "f\u00e9ke", "f\u00e9ke"),
    ("kernel", "x" * 201, "is longer than 200 characters: '" + "x" * 40 + "'... (201 characters)"),
    ("kernel", "a\x7fb", "contains a control character: 'a\\x7fb'"),
    ("variant", '"o\nk"', "contains a control character: 'o\\nk'"),
    ("device", '"a,b"', "a,b"), ("dtype", '"a\x00b"', None),
]


@pytest.mark.parametrize(("column", "cell", "want"), CELLS)
def test_a_hostile_cell_is_read_or_refused_by_its_rule(column: str, cell: str, want: Any) -> None:
    line = ONE.splitlines()[1].split(",")
    line[HEADER.index("n")], line[HEADER.index("repeat")] = "128", "1"  # (not the first row's key)
    line[HEADER.index(column)] = cell
    text = ONE + ",".join(line) + "\n"
    got = _parsed(text)
    if column == "dtype":  # a NUL byte: the whole file is refused before its cells are read
        assert got == f"f.csv: contains a NUL byte (offset {text.index(chr(0))})"
    elif isinstance(want, str) and want.startswith(("is ", "must ", "contains ")):
        assert got == f"f.csv line 3: column {column} {want}"
    else:
        assert isinstance(got, list), got
        value = got[1][column]
        assert repr(value) == repr(float(want) if want == "nan" else want), (value, want)
