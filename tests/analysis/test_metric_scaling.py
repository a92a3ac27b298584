"""analysis/metric_frame.py and analysis/metric_scaling.py against numbers
computed by hand: every metric in its own direction, no point pooled."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from analysis import metric_scaling
from analysis.metric_frame import metric_frame


def _rows(points: list[dict]) -> pd.DataFrame:
    base = {"cluster": "c", "partition": "p", "kernel": "k", "impl": "i", "variant": "strong", "device": "cpu",
            "dtype": "fp32", "params": "", "threads": 1, "n": 100, "repeat": 0, "time_s": 1.0}
    return pd.DataFrame([{**base, **p} for p in points])


def test_time_rows_become_the_time_metric_and_figures_keep_their_direction() -> None:
    rows = _rows([{"metric": "rate", "value": "10", "unit": "GB/s", "higher_is_better": "1", "params": "metric=rate"},
                  {"metric": None, "value": None, "unit": None, "higher_is_better": None, "kernel": "other"}])
    frame = metric_frame(rows)
    assert list(frame["metric"]) == ["rate", "time_s"] and list(frame["higher_is_better"]) == [True, False]
    assert list(frame["value"]) == [10.0, 1.0] and list(frame["params"]) == ["", ""]
    assert list(frame["nodes"]) == [1, 1] and list(frame["ranks"]) == [1, 1]


def test_fixed_duration_keeps_its_measured_times_and_drops_its_set_time() -> None:
    fig = {"fixed_duration": "1"}
    rows = _rows([{**fig, "metric": "rate", "value": "5", "unit": "ev/s", "higher_is_better": "1"},
                  {**fig, "metric": "p99", "value": "2.5", "unit": "ms", "higher_is_better": "0"},
                  {**fig, "metric": "ran", "value": "5", "unit": "s", "higher_is_better": "0", "set_time": "1"}])
    assert list(metric_frame(rows)["metric"]) == ["rate", "p99"]  # a latency is a measurement; the set time not


def test_speedup_and_efficiency_over_nodes_in_each_direction() -> None:
    rate = [{"nodes": m, "ranks": 2 * m, "metric": "rate", "value": v, "unit": "u/s", "higher_is_better": "1",
             "repeat": r} for m, v in ((1, 100.0), (2, 150.0), (4, 500.0)) for r in range(3)]
    time = [{"nodes": m, "ranks": 2 * m, "metric": "t", "value": v, "unit": "s", "higher_is_better": "0",
             "repeat": r} for m, v in ((1, 8.0), (2, 5.0), (4, 4.0)) for r in range(3)]
    scale = metric_scaling.scaling(metric_frame(_rows(rate + time)), "nodes")
    got = {(r["metric"], r["nodes"]): r for r in scale.to_dict("records")}
    assert got[("rate", 2)]["speedup"] == pytest.approx(1.5) and got[("rate", 2)]["efficiency"] == pytest.approx(0.75)
    assert got[("rate", 4)]["speedup"] == pytest.approx(5.0) and got[("rate", 4)]["superlinear"]
    assert got[("t", 2)]["speedup"] == pytest.approx(8 / 5) and got[("t", 4)]["efficiency"] == pytest.approx(0.5)
    assert all(r["base"] == 1 and r["ranks"] == 2 * r["nodes"] and r["repeats"] == 3 for r in got.values())
    assert metric_scaling.scaling(metric_frame(_rows(rate)), "ranks").empty  # ranks never vary at fixed nodes


def test_weak_time_has_a_constant_ideal_and_a_rate_never_pools_threads() -> None:
    weak = [{"variant": "weak", "ranks": p, "metric": "t", "value": v, "unit": "s", "higher_is_better": "0"}
            for p, v in ((1, 2.0), (4, 2.5))]
    row = metric_scaling.scaling(metric_frame(_rows(weak)), "ranks").iloc[1]
    assert row["scaling"] == "weak" and row["efficiency"] == pytest.approx(0.8)
    assert row["speedup"] == pytest.approx(0.8 * 4)
    two = [{"threads": t, "metric": "r", "value": v, "unit": "u", "higher_is_better": "1"}
           for t, v in ((1, 1.0), (2, 3.0))]
    med = metric_scaling.medians(metric_frame(_rows(two)))
    assert list(med["value"]) == [1.0, 3.0]  # one median per thread count


def test_exponent_over_n_in_the_metric_own_terms() -> None:
    rows = [{"n": n, "metric": "r", "value": 1e6 / n, "unit": "u/s", "higher_is_better": "1"} for n in (10, 100, 1000)]
    rows += [{"n": n, "metric": "t", "value": 1e-6 * n * n, "unit": "s", "higher_is_better": "0"} for n in (10, 100)]
    fits = {r["metric"]: r for r in metric_scaling.exponents(metric_frame(_rows(rows))).to_dict("records")}
    assert fits["r"]["exponent"] == pytest.approx(-1.0) and fits["r"]["sizes"] == 3
    assert fits["t"]["exponent"] == pytest.approx(2.0) and (fits["t"]["n_min"], fits["t"]["n_max"]) == (10, 100)


@pytest.mark.parametrize("typed", [False, True])
def test_a_program_without_a_size_scales_over_threads_and_has_no_exponent(typed: bool) -> None:
    """A row of no problem size (n NULL: typed columns of a result file, or a
    frame of objects) keeps its other axes: speedup over threads and ranks;
    no exponent over n, and no fake size in any series."""
    points = [{"n": None, "threads": t, "ranks": rk, "metric": "rate", "value": v * rk, "unit": "ev/s",
               "higher_is_better": True if typed else "1", "repeat": r}
              for t, v in ((1, 10.0), (2, 19.0), (4, 36.0)) for rk in (1, 2) for r in range(3)]
    rows = _rows(points)
    if typed:
        rows = rows.astype({"n": "Int64", "value": "float64", "higher_is_better": "boolean"})
    frame = metric_frame(rows)
    assert frame["n"].isna().all()
    over = metric_scaling.scaling(frame, "threads")
    assert sorted(over.loc[over["ranks"] == 1, "speedup"].round(6)) == [1.0, 1.9, 3.6]
    assert over["n"].isna().all()
    ranks = metric_scaling.scaling(frame, "ranks")
    assert set(ranks["speedup"].round(6)) == {1.0, 2.0}
    assert metric_scaling.exponents(frame).empty


def test_a_speedup_past_a_doubles_range_is_none_and_warns_nothing() -> None:
    """Figures of merit may be any finite number: 1e300 over 1e-300 overflows, and says nothing of scaling."""
    rows = [{"threads": t, "metric": "r", "value": v, "unit": "u", "higher_is_better": "1", "repeat": k}
            for t, v in ((1, 1e-300), (2, 1e300), (4, 2e-300)) for k in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning went to a user's stderr
        scale = metric_scaling.scaling(metric_frame(_rows(rows)), "threads")
    got = {r["threads"]: r for r in scale.to_dict("records")}
    assert math.isnan(got[2]["speedup"]) and math.isnan(got[2]["efficiency"])
    assert got[4]["speedup"] == pytest.approx(2.0) and got[4]["efficiency"] == pytest.approx(0.5)
