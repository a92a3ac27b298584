"""Bad imports never touch the ledger (tests/reliability/test_bad_input.py's contract: exit 2, one
line on stderr naming the problem, the ledger and its result files byte-identical, no ledger made):
a file of a header only, into a named campaign too, and the cells an import is stricter about
than a job's CSV (docs/results.md): NaN in a float column, a figure's value and direction."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import test_bad_input as bad
from tests.reliability.bad_input_parts import GOOD_LINES, HEADER, Case, bad_csv
from tests.reliability.test_bad_input import filled_ledger  # noqa: F401


def _with_columns(extra: dict[str, str], column: str = "", value: str = "", row: int = 3) -> list[str]:
    """known_results.csv with the `extra` columns (their cell in every row), the cell of `column` in
    file line `row` set to `value`."""
    names = [*HEADER, *extra]
    lines = [",".join(names)]
    for k, line in enumerate(GOOD_LINES[1:], start=2):
        cells = line.split(",") + list(extra.values())
        if k == row and column:
            cells[names.index(column)] = value
        lines.append(",".join(cells))
    return lines


_FIGURE = {"metric": "bw", "value": "10", "unit": "GB/s", "higher_is_better": "true"}
_HEAD = bad_csv("head.csv", GOOD_LINES[:1])

CASES: dict[str, Case] = {
    "header-only-into-a-campaign": Case(  # (was an internal error: no cluster to name the campaign's)
        ("import", "{tmp}/head.csv", "--campaign", "z"), "head.csv: no result rows", _HEAD),
    "header-only-no-ledger-made": Case(("import", "{tmp}/head.csv"), "head.csv: no result rows", _HEAD,
                                      ledger="missing"),
    "header-only-into-a-campaign-no-ledger-made": Case(
        ("import", "{tmp}/head.csv", "--campaign", "z"), "head.csv: no result rows", _HEAD, ledger="missing"),
    # import stays strict (docs/contracts.md): a NaN rel_err is refused as inf is, not stored as NULL
    "nan-rel-err": Case(
        ("import", "{tmp}/bad.csv", "--campaign", "z"), "line 3: column rel_err must be a non-negative finite number, "
        "got 'NaN'", bad_csv("bad.csv", _with_columns({"rel_err": "1e-7"}, "rel_err", "NaN"))),
    "inf-rel-err": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column rel_err must be a non-negative finite number, got 'inf'",
        bad_csv("bad.csv", _with_columns({"rel_err": "1e-7"}, "rel_err", "inf"))),
    "nan-flops": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column flops must be a non-negative finite number, got 'nan'",
        bad_csv("bad.csv", _with_columns({"flops": "1e9"}, "flops", "nan"))),
    # a figure's value and direction: checked on import (a job's are typed loosely by the write)
    "figure-value-not-a-number": Case(
        ("import", "{tmp}/bad.csv", "--campaign", "z"), "line 3: column value is not a number: 'abc'",
        bad_csv("bad.csv", _with_columns(_FIGURE, "value", "abc"))),
    "figure-value-nan": Case(
        ("import", "{tmp}/bad.csv"), "line 4: column value must be a finite number, got 'NaN'",
        bad_csv("bad.csv", _with_columns(_FIGURE, "value", "NaN", row=4))),
    "figure-value-inf": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column value must be a finite number, got 'inf'",
        bad_csv("bad.csv", _with_columns(_FIGURE, "value", "inf"))),
    "figure-value-empty": Case(
        ("import", "{tmp}/bad.csv", "--campaign", "z"), "line 3: column value is empty, and the row names a metric",
        bad_csv("bad.csv", _with_columns(_FIGURE, "value", ""))),
    "figure-without-a-value-column": Case(
        ("import", "{tmp}/bad.csv"), "missing column(s) value",
        bad_csv("bad.csv", _with_columns({"metric": "bw", "unit": "GB/s"}))),
    "figure-direction-not-a-word": Case(
        ("import", "{tmp}/bad.csv", "--campaign", "z"),
        "line 3: column higher_is_better must be true/false, yes/no or a finite number, got 'maybe'",
        bad_csv("bad.csv", _with_columns(_FIGURE, "higher_is_better", "maybe"))),
    "figure-direction-inf": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column higher_is_better must be true/false, yes/no or a finite number",
        bad_csv("bad.csv", _with_columns(_FIGURE, "higher_is_better", "inf"))),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_bad_import_is_one_line_exit_2_and_nothing_written(case: Case, filled_ledger: Path,  # noqa: F811
                                                             tmp_path: Path) -> None:
    bad.test_bad_input_is_one_line_exit_2_and_ledger_untouched(case, filled_ledger, tmp_path)
