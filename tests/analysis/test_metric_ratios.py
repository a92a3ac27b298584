"""analysis/metric_ratios.py against numbers worked by hand: a figure's ratio
between two values of a dimension, in the figure's direction, beyond the
noise only where the medians' intervals part."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from analysis.metric_ratios import figure_ratios, ratio_tables


def _rows(sides: dict[tuple[str, str], float], metric: str = "rate", unit: str = "GB/s", higher: bool = True,
          spread: float = 0.1, repeats: int = 5) -> list[dict[str, object]]:
    return [{"cluster": cluster, "partition": "p", "kernel": "k", "impl": impl, "variant": "v", "device": "cpu",
             "dtype": "fp32", "params": f"metric={metric},size=big", "threads": 1, "n": 10, "repeat": r,
             "time_s": 1.0, "metric": metric, "value": value + spread * r, "unit": unit, "higher_is_better": higher,
             "ranks": 1, "nodes": 1}
            for (cluster, impl), value in sides.items() for r in range(repeats)]


def test_a_rate_and_a_time_each_in_their_direction() -> None:
    rows = _rows({("c", "a"): 100.0, ("c", "b"): 150.0}) + _rows(
        {("c", "a"): 2.0, ("c", "b"): 3.0}, metric="lat", unit="us", higher=False)
    got = {r["metric"]: r for r in figure_ratios(pd.DataFrame(rows)).to_dict("records")}
    rate, lat = got["rate"], got["lat"]
    assert (rate["dimension"], rate["a"], rate["b"], rate["params"]) == ("impl", "a", "b", "size=big")
    assert (rate["value_a"], rate["value_b"]) == (100.2, 150.2) and rate["ratio"] == pytest.approx(100.2 / 150.2)
    assert rate["better"] == "b" and rate["higher_is_better"] and rate["unit"] == "GB/s"
    assert lat["better"] == "a" and not lat["higher_is_better"] and lat["ratio"] == pytest.approx(2.2 / 3.2)


def test_overlapping_intervals_or_a_single_repeat_say_no_better_side() -> None:
    noise = figure_ratios(pd.DataFrame(_rows({("c", "a"): 100.0, ("c", "b"): 100.3}))).iloc[0]
    assert noise["within_noise"] and noise["better"] is None
    single = figure_ratios(pd.DataFrame(_rows({("c", "a"): 100.0, ("c", "b"): 200.0}, repeats=1))).iloc[0]
    assert single["single_repeat"] and single["better"] is None


def test_a_zero_or_negative_figure_has_no_ratio_but_its_better_side() -> None:
    zero = figure_ratios(pd.DataFrame(_rows({("c", "a"): 0.0, ("c", "b"): 200.0}, spread=0.0))).iloc[0]
    assert math.isnan(zero["ratio"]) and zero["better"] == "b"  # a rate of 0 against 200, apart beyond noise
    flip = figure_ratios(pd.DataFrame(_rows({("c", "a"): -3.0, ("c", "b"): -6.0}, metric="lat", unit="us",
                                            higher=False))).iloc[0]
    assert math.isnan(flip["ratio"]) and flip["better"] == "b"  # -6 is lower, where lower is better
    near = figure_ratios(pd.DataFrame(_rows({("c", "a"): -0.1, ("c", "b"): 0.1}, spread=1.0))).iloc[0]
    assert near["within_noise"] and near["better"] is None


def test_a_cluster_ratio_concerns_both_clusters_and_makes_a_table() -> None:
    rows = pd.DataFrame(_rows({("anvil", "a"): 100.0, ("delta", "a"): 300.0}))
    [both] = figure_ratios(rows, "delta").to_dict("records")
    assert (both["dimension"], both["a"], both["b"], both["better"]) == ("cluster", "anvil", "delta", "b")
    assert len(figure_ratios(rows, "anvil")) == 1 and figure_ratios(rows, "other").empty
    [table] = ratio_tables(figure_ratios(rows))
    assert table.caption.startswith("Ratios of rate [GB/s]") and "(higher is better)" in table.caption
    assert table.frame[["a", "b", "a / b", "better"]].values.tolist() == [["anvil", "delta", "0.334×", "b"]]


def test_rows_without_figures_give_no_ratio() -> None:
    rows = pd.DataFrame(_rows({("c", "a"): 1.0, ("c", "b"): 2.0})).drop(columns=["metric", "value", "unit"])
    assert figure_ratios(rows).empty


def test_a_ratio_past_a_doubles_range_is_none_and_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning went to a user's stderr
        far = figure_ratios(pd.DataFrame(_rows({("c", "a"): 1e300, ("c", "b"): 1e-300}, spread=0.0))).iloc[0]
    assert math.isnan(far["ratio"]) and far["better"] == "a"  # no ratio, but a is higher, beyond noise
