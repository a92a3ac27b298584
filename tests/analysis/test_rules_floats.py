"""analysis.rules reads a column of numbers with one cast where Arrow reads
every cell as a finite float (`_finite_floats`), else by the two patterns
(`_floats_by_shape`). The quick way must judge every column exactly as the
patterns do: what the cast reads is what _FLOAT describes, nothing more."""

from __future__ import annotations

import random
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from analysis import rules
from resultschema.columns import column_rule

# cells around the edges of both readers: signs, dots, exponents, and what
# other float syntaxes allow (hex, `_`, Fortran `d`, inner spaces, unicode digits)
EDGES = ["1", "+1.5", "-2.5", "1.", ".5", "1e5", "1E+5", "12e0001", "00012", "1.5e-400", "-0", "0", "3e-7",
         "0x1p3", "0X10", "1_0", "1d5", "1e", "e5", ".", "+.e1", "+-1", "--1", "1.5.5", "1,5", "1e5.5", "5e-",
         "1f", "\u0661", "1 5", "inf", "-inf", "Infinity", "nan", "+nan", "NaN", "1e400", "-1e400"]


def _by_shape(name: str, cells: list[str], judged: bool) -> rules.Checked:
    text = pc.utf8_trim_whitespace(pa.array(cells, pa.string()))
    blank = pc.fill_null(pc.equal(text, ""), True)
    col = column_rule(name)
    assert col is not None
    return rules._floats_by_shape(text, blank, col, True, judged)


def _random_cells(rng: random.Random) -> list[str]:
    alphabet = "0123456789+-.eE_xXdnaif "
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(400)]


@pytest.mark.parametrize("name,judged", [("time_s", False), ("bytes", False), ("rel_err", True),
                                         ("flops", False)])
def test_quick_cast_judges_every_cell_as_the_patterns(name: str, judged: bool) -> None:
    rng = random.Random(26)
    columns = [[cell] for cell in EDGES] + [EDGES] + [_random_cells(rng) for _ in range(20)]
    quick_taken = 0
    for cells in columns:
        want = _by_shape(name, cells, judged)
        got = rules.check(name, pa.array(cells, pa.string()), True, judged)
        assert got.bad.to_pylist() == want.bad.to_pylist(), cells
        good = [not b for b in want.bad.to_pylist()]
        assert [v for v, g in zip(got.values.to_pylist(), good) if g] == \
            [v for v, g in zip(want.values.to_pylist(), good) if g], cells
        text = pc.utf8_trim_whitespace(pa.array(cells, pa.string()))
        col = column_rule(name)
        assert col is not None
        quick_taken += rules._finite_floats(text, col, judged) is not None
    assert quick_taken >= 10  # the single plain numbers of EDGES: the quick way was taken, and agreed


def test_what_the_cast_reads_as_finite_the_pattern_calls_plain() -> None:
    rng = random.Random(11)
    pattern = re.compile(rules._FLOAT)
    cells = EDGES + [c.strip() for c in _random_cells(rng) * 5 for _ in [0]]
    for cell in cells:
        try:
            value = pc.cast(pa.array([cell], pa.string()), pa.float64())[0].as_py()
        except pa.ArrowInvalid:
            continue
        if value == value and abs(value) != float("inf"):
            assert pattern.match(cell), cell
