"""What the tool-driven driver reads of awkward output (campaign.job.fom_read): a figure is a
decimal number as printed or no figure, quoted as printed; JSON values in JSON's words, nested
objects by a dotted path; a launched program's figure named by the rank whose output lacked it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaign.job import fom_read


@pytest.mark.parametrize(
    ("printed", "stored"),
    [("12.5", 12.5), ("12.5GB/s", 12.5), ("1.2e+03", 1200.0), ("+5", 5.0), (".5", 0.5), ("5.", 5.0), ("-0", -0.0)],
)
def test_a_number_is_stored_as_printed(printed: str, stored: float) -> None:
    fig = {"name": "bw", "regex": r"bw: (?P<value>[0-9.eE+-]+)", "source": "stdout"}
    assert fom_read.readfigure_values(fig, f"bw: {printed} GB/s\n") == [stored]


@pytest.mark.parametrize("printed", ["12,5", "1,234.5", "1_234.5", "inf", "nan", "Infinity", "\u0661\u0662", "1e400"])
def test_what_is_no_decimal_number_is_lost_never_read_otherwise(printed: str) -> None:
    """float() takes 1_234.5 (as 1234.5) and other scripts' digits: a figure takes a decimal number in
    ASCII only, so digit grouping, like a decimal comma, is LOST_OUTPUT quoting what was printed."""
    fig = {"name": "bw", "regex": r"bw: (?P<value>\S+) GB/s", "source": "stdout"}
    with pytest.raises(fom_read.Lost, match=re.escape(f"matched {printed!r}, not a finite number")):
        fom_read.readfigure_values(fig, f"bw: {printed} GB/s\n")


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"bw": true}', "'true'"),
        ('{"bw": null}', "'null'"),
        ('{"bw": 1e400}', "'1e400'"),
        ('{"bw": NaN}', "'NaN'"),
        ('{"bw": [1, 2]}', "'["),  # a list: its numbers as printed, in JSON's quotes
        ('{"bw": %s}' % ("9" * 5000), "'999999"),
    ],
)
def test_a_json_value_that_is_no_number_is_quoted_as_printed(line: str, said: str) -> None:
    """JSON's own words (true, null, 1e400), not Python's (True, None, inf); an integer too long for
    Python's int() is the key's value, not a line skipped as 'matched nothing'."""
    fig = {"name": "bw", "json": "bw", "source": "stdout"}
    with pytest.raises(fom_read.Lost, match=re.escape(f"matched {said}")):
        fom_read.readfigure_values(fig, f"start\n{line}\n")


def test_json_numbers_strings_huge_integers_and_a_twice_given_key() -> None:
    fig = {"name": "bw", "json": "bw", "source": "stdout"}
    huge = json.dumps({"bw": 2**70, "x": {"bw": 3}})  # 1180591620717411303424: a double holds it exactly
    text = f'[info] {{"bw": 1}} ignored\n{{"bw": "12.5"}}\n{huge}\n{{"bw": 1.0, "bw": 2.0}}\n'
    assert fom_read.readfigure_values(fig, text, 3) == [12.5, float(2**70), 2.0]


def test_json_nested_deeper_than_the_parser_goes_is_a_line_skipped() -> None:
    """A line of objects nested 10,000 deep stopped the driver with a RecursionError (exit 1, the
    job FAILED) even where the figure was on another line: such a line is skipped, as one that is no JSON."""
    fig = {"name": "bw", "json": "bw", "source": "stdout"}
    deep = '{"bw": ' + '{"a": ' * 10000 + "1" + "}" * 10001
    assert fom_read.readfigure_values(fig, f'{deep}\n{{"bw": 12.5}}\n') == [12.5]
    with pytest.raises(fom_read.Lost):
        fom_read.readfigure_values(fig, f"{deep}\n")


def test_a_figure_one_rank_did_not_print_names_the_rank_looked_at(tmp_path: Path) -> None:
    """A figure only rank 1 of 2 printed: read from rank 0 (the default) or reduced over both, the
    reason says whose output lacked it; `result_rank: 1` reads it."""
    fig = {"name": "bw", "regex": r"bw: (?P<value>\S+) GB/s", "source": "stdout"}
    output = fom_read.Output("", "", (("", ""), ("bw: 11 GB/s\n", "")))
    for declared in (fig, {**fig, "reduce": "max"}):
        with pytest.raises(fom_read.Lost, match="matched nothing in rank 0's stdout; last lines: "):
            fom_read.figure_values(declared, output, {}, tmp_path, 1, 0)
    assert fom_read.figure_values(fig, output, {}, tmp_path, 1, 1) == [11.0]


def test_a_json_figure_inside_a_nested_object_is_read_by_its_dotted_path() -> None:
    """fio, iperf3 and their kind print their numbers inside objects: `result.bw` reads
    {"result": {"bw": ...}}; a key of its own that holds a dot is read first."""
    text = '{"result": {"bw": 12.5, "lat": {"p99": 3}}}\n{"job.bw": 7, "job": {"bw": 8}}\n'
    assert fom_read.readfigure_values({"name": "b", "json": "result.bw", "source": "stdout"}, text) == [12.5]
    assert fom_read.readfigure_values({"name": "p", "json": "result.lat.p99", "source": "stdout"}, text) == [3.0]
    assert fom_read.readfigure_values({"name": "j", "json": "job.bw", "source": "stdout"}, text) == [7.0]
    with pytest.raises(fom_read.Lost, match="JSON key 'result.iops' matched nothing"):
        fom_read.readfigure_values({"name": "i", "json": "result.iops", "source": "stdout"}, text)


def test_a_byte_order_mark_before_the_first_line_is_no_part_of_it(tmp_path: Path) -> None:
    """`^rate:` and a JSON line matched nothing on a first line after a BOM, which the reason's
    quote of that line does not show."""
    path = tmp_path / "out.txt"
    for fig, line in (
        ({"name": "r", "regex": r"^rate: (\S+)$"}, "rate: 12.5"),
        ({"name": "r", "json": "rate"}, '{"rate": 12.5}'),
    ):
        path.write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\r\n")
        text, _ = fom_read.read_capped(path)
        assert fom_read.readfigure_values({**fig, "source": "stdout"}, text) == [12.5]
