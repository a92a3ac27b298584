"""compare() of a figure that can be zero or negative (a difference, a
balance): no NEW/BASE ratio reads it, so its points are judged on the
difference by the same interval rule, in the figure's direction."""

from __future__ import annotations

import math

import pandas as pd

from analysis.compare import compare
from campaign.cli.compare_view import as_text
from campaign.commands.compare import CompareReport, Selection


def _rows(values: dict[int, float], higher: bool, spread: float = 0.01) -> pd.DataFrame:
    rows = []
    for n, centre in values.items():
        for repeat in range(5):
            rows.append({"cluster": "c", "partition": "cpu", "kernel": "drift", "impl": "user", "variant": "plain",
                         "device": "cpu", "dtype": "fp64", "params": "metric=gain", "threads": 1, "n": n,
                         "repeat": repeat, "time_s": 1.0, "metric": "gain", "value": centre + spread * (repeat - 2),
                         "unit": "J", "higher_is_better": higher})
    return pd.DataFrame(rows)


def _verdicts(c) -> dict[int, str]:  # type: ignore[no-untyped-def]
    return dict(zip(c.points["n"], c.points["verdict"], strict=True))


def test_a_sign_flip_of_a_higher_is_better_figure_is_worse_not_noise() -> None:
    c = compare(_rows({1: 5.0, 2: -3.0}, True), _rows({1: -3.0, 2: 5.0}, True))
    assert _verdicts(c) == {1: "worse", 2: "better"}
    assert c.points["ratio"].isna().all()  # no ratio of values of both signs


def test_a_negative_figure_falling_further_is_better_where_lower_is_better() -> None:
    # -3 -> -6: NEW/BASE is 2, which the ratio rule would read as a doubling (worse); the value fell
    c = compare(_rows({1: -3.0}, False), _rows({1: -6.0}, False))
    assert _verdicts(c) == {1: "better"}
    assert c.summary["verdict"].tolist() == ["better"] and math.isnan(c.summary["geomean"].iloc[0])


def test_overlapping_intervals_around_zero_are_within_noise() -> None:
    c = compare(_rows({1: 0.0}, True, spread=1.0), _rows({1: 0.5}, True, spread=1.0))
    assert _verdicts(c) == {1: "within-noise"}


def test_a_change_from_zero_beyond_the_intervals_is_judged() -> None:
    c = compare(_rows({1: 0.0}, True), _rows({1: 0.2}, True))
    assert _verdicts(c) == {1: "better"}


def test_positive_figures_keep_their_ratio() -> None:
    c = compare(_rows({1: 10.0}, True), _rows({1: 5.0}, True))
    assert _verdicts(c) == {1: "worse"} and c.points["ratio"].iloc[0] == 2.0  # BASE/NEW for a rate


def test_the_text_says_the_point_has_no_ratio() -> None:
    c = compare(_rows({1: 5.0}, True), _rows({1: -3.0}, True))
    text = as_text(CompareReport(Selection("a"), Selection("b"), c, []))
    row = next(line for line in text.splitlines() if "judged on the difference" in line and "worse" in line)
    assert "nan" not in row
