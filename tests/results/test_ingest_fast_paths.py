"""The ingest's fast paths against what they replaced (issue 18, round 19):
natural keys built column by column (a column of one object written once,
the rows' texts joined at once) against natural_key of each row dict, and
float columns checked by float() itself against the column regex, over
seeded hostile values."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest

from analysis.columns import KERNEL_COLUMNS
from campaign.errors import ImportError_
from campaign.results import columnar
from campaign.results.keys import KEY_COLUMNS, MEASURED_EXTRAS
from campaign.results.reader import parse_columns
from tests.results.test_columnar_differential import CORPUS

SEED = 19
VALUES: list[Any] = ["fake", "", "a\nb", "\u00e9t\u00e9", "%s", "100%", '"q"', "\x00", "\ud800", "a,b", "[1]", " ",
                     0, 1, -1, 2**70, True, False, 0.0, -0.0, 1.0, 1.5, 1e-7, math.nan, math.inf, None]
EXTRA_NAMES = ["a", "backend", "%d", "\u00e9", "first_call_s", "params", "l2_flush", "z\n"]
SCOPES = ["attempt:5", "attempt:123456", "import", "import:camp%s", ""]


def _column(rng: random.Random, n: int) -> tuple[list[Any], bool]:
    """A column and whether it holds one object in every row."""
    kind = rng.randrange(4)
    if kind == 0:
        return [rng.choice(VALUES)] * n, True
    if kind == 1:  # equal values of other types or signs (1, 1.0, True; 0.0, -0.0)
        return [rng.choice([1, 1.0, True]) if rng.random() < 0.5 else rng.choice([0.0, -0.0]) for _ in range(n)], False
    if kind == 2:
        return [rng.randrange(3) for _ in range(n)], False
    return [rng.choice(VALUES) for _ in range(n)], False


def _case(rng: random.Random) -> tuple[dict[str, list[Any]], dict[str, list[Any]], set[str], int]:
    n = rng.choice([1, 2, 3, 7])
    columns, extras, same = {}, {}, set()
    for col in rng.sample(KEY_COLUMNS, rng.randrange(len(KEY_COLUMNS) + 1)):
        columns[col], one = _column(rng, n)
        if one and rng.random() < 0.8:
            same.add(col)
    for name in rng.sample(EXTRA_NAMES, rng.randrange(4)):
        texts = [rng.choice(["x", "", "1.5", "%", "\u00e9", "a\"b"]) for _ in range(n)]
        if rng.random() < 0.4:
            extras[name] = [texts[0]] * n
            if rng.random() < 0.8:
                same.add(name)
        else:
            extras[name] = [None if rng.random() < 0.3 else t for t in texts]
    return columns, extras, same, n


def _rows(columns: dict[str, list[Any]], extras: dict[str, list[Any]], n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        row = {col: values[i] for col, values in columns.items()}
        row["extra"] = {k: v[i] for k, v in extras.items() if v[i] is not None} or None
        rows.append(row)
    return rows


def test_the_keys_skip_only_the_measured_extras() -> None:
    """Not a test of one kind: the cases hold extras that join the key and ones that do not."""
    rng = random.Random(SEED)
    names = set()
    for _ in range(500):
        names |= set(_case(rng)[1])
    assert names & MEASURED_EXTRAS and names - MEASURED_EXTRAS


def test_plain_number_characters_float_reads_what_the_cell_regex_matches() -> None:
    """Every text of up to 5 of the characters a plain float column may hold
    (digits stand for each other): float() reads it exactly when the
    reference's cell pattern matches it."""
    cell = columnar._column_pattern(columnar._FLOAT_CELL)
    for size in range(1, 6):
        for chars in itertools.product("09.eE+-", repeat=size):
            text = "".join(chars)
            try:
                float(text)
                reads = True
            except ValueError:
                reads = False
            assert reads == bool(cell.fullmatch(text)), text


PLAIN = ["0", "1", "-0", "+1.", ".5", "5.", ".", "1e5", "1E+05", "1e", "e5", "+", "-", "1.e3", "1e-400", "1e999",
         "-1e-3", "00.10", "1.5e+", "+-1", "1..2", "1e5e5", "0.000256", "2e-308", ""]
HOSTILE = ["nan", "NaN", "+nan", "inf", "-inf", "Infinity", "1_000", "0x10", "\u0661", " 5", "5 ", "a", "1\n2"]


@pytest.mark.parametrize(("allow_nan", "positive"), [(False, True), (True, False), (False, False)])
def test_float_columns_decide_as_the_column_regex(allow_nan: bool, positive: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(SEED)
    columns = []
    for _ in range(4000):
        n = rng.choice([1, 2, 5])
        pool = PLAIN if rng.random() < 0.7 else PLAIN + HOSTILE
        columns.append([rng.choice(pool) for _ in range(n)])
    new = [repr(columnar._floats(c, len(c), allow_nan, positive)) for c in columns]
    monkeypatch.setattr(columnar, "_FLOAT_CHARS", b"")  # no column is plain: every one goes through the regex
    old = [repr(columnar._floats(c, len(c), allow_nan, positive)) for c in columns]
    assert new == old
    assert 0 < sum(v != "None" for v in new) < len(new)


def _tables() -> list[columnar.ResultColumns]:
    out = []
    for text in CORPUS:
        if isinstance(text, str):
            try:
                table = parse_columns(text, KERNEL_COLUMNS, "f.csv")
            except ImportError_:
                continue
            if len(table):
                out.append(table)
    return out
