"""analysis/metric_fits.py against numbers worked by hand: a figure's Amdahl
serial fraction from its cost in its direction, and its crossovers over n
between two axis values, a higher value better for a rate and a lower one for
a time; the series that have neither give nothing."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.merit import figure_frame
from analysis.metric_fits import crossover_tables, figure_crossovers, fraction_tables, serial_fractions

AMDAHL = {p: 0.2 + 0.8 / p for p in (1, 2, 4, 8)}  # t(P) = A + B/P with A = 0.2, B = 0.8: serial fraction 0.2


def _row(value: float, metric: str, higher: bool, repeat: int = 0, **at: object) -> dict[str, object]:
    point = {"threads": 1, "ranks": 1, "nodes": 1, "n": 10, **at}
    return {"cluster": "c", "partition": "p", "kernel": "k", "impl": "i", "variant": "v", "device": "cpu",
            "dtype": "fp32", "params": f"metric={metric}", "repeat": repeat, "time_s": 1.0, "metric": metric,
            "value": value, "unit": "ops/s" if higher else "s", "higher_is_better": higher, **point}


def _fractions(rows: list[dict[str, object]]) -> pd.DataFrame:
    return serial_fractions(figure_frame(pd.DataFrame(rows)))


@pytest.mark.parametrize("axis", ["threads", "ranks", "nodes"])
def test_a_rate_and_a_time_of_one_amdahl_cost_give_its_serial_fraction(axis: str) -> None:
    over = (lambda p: {"nodes": p, "ranks": 2 * p}) if axis == "nodes" else (lambda p: {axis: p})
    rows = [_row(1.0 / t, "rate", True, r, **over(p)) for p, t in AMDAHL.items() for r in range(3)]
    rows += [_row(t, "lat", False, r, **over(p)) for p, t in AMDAHL.items() for r in range(3)]
    got = _fractions(rows).set_index("metric")
    assert list(got["serial_fraction"]) == pytest.approx([0.2, 0.2])
    assert set(got["axis"]) == {axis} and set(got["law"]) == {"amdahl"} and not got["single_repeat"].any()
    assert (got.loc["rate", "points"], got.loc["rate", "min_axis"], got.loc["rate", "max_axis"]) == (4, 1, 8)
    assert got.loc["rate", "higher_is_better"] and not got.loc["lat", "higher_is_better"]
    if axis == "nodes":  # named by the base point: 2 ranks on 1 node, so 2 ranks per node
        assert (got.loc["rate", "nodes"], got.loc["rate", "ranks"]) == (1, 2)


def test_the_rate_read_as_a_time_would_be_wrong() -> None:
    """The direction matters: fitting the rate itself as a cost says all of it is serial."""
    rows = [_row(1.0 / t, "rate", True, threads=p) for p, t in AMDAHL.items()]
    as_time = [_row(1.0 / t, "rate", False, threads=p) for p, t in AMDAHL.items()]
    assert _fractions(rows)["serial_fraction"].item() == pytest.approx(0.2)
    assert _fractions(as_time)["serial_fraction"].item() == 1.0
    [table] = fraction_tables(_fractions(rows))
    assert table.caption == "Serial fraction of rate (Amdahl, higher is better)"
    assert table.frame[["axis", "range", "points", "serial fraction"]].values.tolist() == [
        ["threads", "1 … 8", "4", "0.200‡"]]  # one repeat per point: marked


def test_one_axis_value_a_non_positive_value_or_a_weak_series_gives_no_fraction() -> None:
    assert _fractions([_row(5.0, "rate", True, r) for r in range(3)]).empty
    zero = [_row(v, "rate", True, threads=p) for p, v in ((1, 0.0), (2, 3.0), (4, 5.0))]
    negative = [_row(v, "diff", False, threads=p) for p, v in ((1, -1.0), (2, 3.0))]
    infinite = [_row(v, "lat", False, threads=p) for p, v in ((1, math.inf), (2, 3.0))]
    assert _fractions(zero + negative + infinite).empty
    weak = [{**_row(t, "lat", False, ranks=p), "variant": "weak"} for p, t in AMDAHL.items()]
    assert _fractions(weak).empty
    assert len(_fractions([{**r, "variant": "weak"} for r in
                           (_row(t, "lat", False, threads=p) for p, t in AMDAHL.items())])) == 1  # threads: strong


def _crossing(higher: bool, spread: float = 0.001) -> list[dict[str, object]]:
    """4 threads worse than 1 below n = 1000, better from it (a rate: higher; a time: the inverse)."""
    rows = []
    for n in (10, 100, 1000, 10000):
        for threads in (1, 4):
            rate = 100.0 if threads == 1 else (50.0 if n < 1000 else 300.0)
            for r in range(5):
                value = (rate if higher else 1.0 / rate) * (1 + spread * r)
                rows.append(_row(value, "rate" if higher else "lat", higher, r, threads=threads, n=n))
    return rows


@pytest.mark.parametrize("higher", [True, False])
def test_more_threads_become_better_from_n_1000_in_either_direction(higher: bool) -> None:
    [got] = figure_crossovers(pd.DataFrame(_crossing(higher))).to_dict("records")
    assert (got["axis"], got["a"], got["b"], got["threads"]) == ("threads", 1, 4, 1)
    assert (got["crossed"], got["n_before"], got["n_at"], got["within_noise"]) == (True, 100, 1000, False)
    assert got["metric"] == ("rate" if higher else "lat") and got["higher_is_better"] is higher
    assert got["params"] == "" and "n" not in got


def test_read_in_the_wrong_direction_the_crossover_is_at_the_first_n() -> None:
    """A rate taken as lower-is-better: 4 threads' 50 beats 100 at once, so no bracket below."""
    rows = [{**r, "higher_is_better": False} for r in _crossing(True)]
    [got] = figure_crossovers(pd.DataFrame(rows)).to_dict("records")
    assert (got["crossed"], got["n_at"]) == (True, 10) and math.isnan(got["n_before"])


def test_overlapping_intervals_never_crossing_and_no_size() -> None:
    [noisy] = figure_crossovers(pd.DataFrame(_crossing(True, spread=3.0))).to_dict("records")
    assert noisy["crossed"] and noisy["within_noise"]  # 300 · (1 … 13) overlaps 100 · (1 … 13)
    never = [r for r in _crossing(True) if not (r["threads"] == 4 and r["n"] >= 1000)]
    never += [{**r, "value": 20.0} for r in _crossing(True) if r["threads"] == 4 and r["n"] >= 1000]
    [lost] = figure_crossovers(pd.DataFrame(never)).to_dict("records")
    assert not lost["crossed"] and math.isnan(lost["n_at"]) and math.isnan(lost["n_before"])
    assert crossover_tables(figure_crossovers(pd.DataFrame(never))) == []  # only pairs that cross are listed
    unsized = pd.DataFrame([{**r, "n": None} for r in _crossing(True)])
    assert figure_crossovers(unsized).empty
    assert figure_crossovers(pd.DataFrame(_crossing(True)), "other").empty


def test_the_crossover_table_says_the_bracket() -> None:
    [table] = crossover_tables(figure_crossovers(pd.DataFrame(_crossing(False))))
    assert table.caption == "Crossovers of lat over n (lower is better)"
    assert table.frame[["a → b", "b better from", "at that n"]].values.tolist() == [
        ["1 → 4 threads", "100 < n ≤ 1000", "outside noise"]]
