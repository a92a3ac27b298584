"""The columnar reader's shortcuts (campaign.results.columnar): a column of
one cell text checked as that cell, and integer column texts answered from
the memo, decide as the per-cell reference does, whatever was read before."""

from __future__ import annotations

import pytest

from analysis.columns import KERNEL_COLUMNS
from campaign.errors import ImportError_
from campaign.results import columnar
from campaign.results.reader import parse_columns, parse_rows

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"


def _file(n: str, repeat: str, threads: str = "2") -> str:
    rows = [f"fake,py,ok,cpu,fp32,{a},16,{threads},{b},0.001,0.002,1e-7\n" for a, b in zip(n.split(), repeat.split())]
    return HEADER + "".join(rows)


def _same_as_reference(text: str) -> None:
    try:
        want = repr(parse_rows(text, KERNEL_COLUMNS, "f.csv"))
    except ImportError_ as exc:
        with pytest.raises(ImportError_) as got:
            parse_columns(text, KERNEL_COLUMNS, "f.csv")
        assert str(got.value) == str(exc)
        return
    assert repr(parse_columns(text, KERNEL_COLUMNS, "f.csv").rows()) == want


@pytest.mark.parametrize("text", [
    _file("0 0", "0 1"),            # one n text in every row, refused (n must be positive)
    _file("64 64", "0 0"),          # every key column the same: a duplicate key
    _file("64 128", "0 0", "0"),    # one threads text, refused
    _file("64 64 128", "0 1 0", " 2"),
    _file("64", "0"),               # one row: nothing repeats
])
def test_one_text_columns_decide_as_the_reference(text: str) -> None:
    _same_as_reference(text)


def test_a_remembered_column_text_is_judged_by_its_own_column_rule() -> None:
    columnar._SEEN_INTS.clear()
    for text in (_file("0 1", "0 1"), _file("1 2", "0 1"), _file("0 1", "0 1"), _file("64 128", "1 0")):
        _same_as_reference(text)  # "0\n1": a repeat column (>= 0) passes, the same text as n (>= 1) fails
        _same_as_reference(text)
    assert columnar._SEEN_INTS
