"""Scaling over ranks and nodes (analysis/rank_scaling.py): the fits recover
the serial fraction of known synthetic curves, their bootstrap intervals cover
it, and the strong/weak/comm tables are what their definitions say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import rank_scaling as rs
from analysis.metrics import METRIC_KEYS, metrics_json

RANKS = (1, 2, 4, 8, 16)


def _rows(times: dict[int, list[float]], variant: str, **extra: object) -> pd.DataFrame:
    rows = [{"cluster": "c", "partition": "p", "kernel": "k", "impl": "c", "variant": variant, "device": "cpu",
             "threads": 1, "n": 1000, "repeat": r, "time_s": t, "ranks": p, "nodes": max(1, p // 4),
             "job_id": f"j{p}", **extra}
            for p, ts in times.items() for r, t in enumerate(ts)]
    return pd.DataFrame(rows)


def amdahl_times(s: float, t1: float, noise: float, repeats: int, rng: np.random.Generator) -> dict[int, list[float]]:
    return {p: list(t1 * (s + (1 - s) / p) * (1 + noise * rng.standard_normal(repeats))) for p in RANKS}


def gustafson_times(s: float, t1: float, noise: float, repeats: int,
                    rng: np.random.Generator) -> dict[int, list[float]]:
    # scaled speedup S(P) = s + (1 - s) P = P t(1) / t(P)  =>  t(P) = P t1 / S(P)
    return {p: list(p * t1 / (s + (1 - s) * p) * (1 + noise * rng.standard_normal(repeats))) for p in RANKS}


@pytest.mark.parametrize("s", [0.0, 0.05, 0.3, 0.9])
def test_amdahl_fit_recovers_a_noise_free_serial_fraction(s: float) -> None:
    t = np.array([2.0 * (s + (1 - s) / p) for p in RANKS])
    assert rs.amdahl_fraction(np.array(RANKS), t)[0] == pytest.approx(s, abs=1e-12)


@pytest.mark.parametrize("s", [0.0, 0.05, 0.3, 0.9])
def test_gustafson_fit_recovers_a_noise_free_serial_fraction(s: float) -> None:
    t = np.array([p * 1.5 / (s + (1 - s) * p) for p in RANKS])
    assert rs.gustafson_fraction(np.array(RANKS), t)[0] == pytest.approx(s, abs=1e-12)


def test_gustafson_fit_is_relative_to_the_baseline_rank_count() -> None:
    """A weak series starting at 2 ranks: P' = P / 2, so the curve of s is the same."""
    s, ranks = 0.2, np.array([2, 4, 8])
    p = ranks / 2
    t = p * 1.0 / (s + (1 - s) * p)
    assert rs.gustafson_fraction(ranks, t)[0] == pytest.approx(s, abs=1e-12)


@pytest.mark.parametrize(("law", "make"), [("amdahl", amdahl_times), ("gustafson", gustafson_times)])
def test_bootstrap_interval_covers_the_true_fraction_of_noisy_repeats(law: str, make: object) -> None:
    s, rng = 0.12, np.random.default_rng(7)
    variant = "strong" if law == "amdahl" else "weak"
    fits = rs.serial_fractions(_rows(make(s, 3.0, 0.02, 9, rng), variant))  # type: ignore[operator]
    assert list(fits["law"]) == [law]
    fit = fits.iloc[0]
    assert fit["ci_lo"] <= s <= fit["ci_hi"]
    assert fit["ci_lo"] <= fit["serial_fraction"] <= fit["ci_hi"]
    assert fit["ci_hi"] - fit["ci_lo"] < 0.1  # 2% noise over 9 repeats pins it down
    assert fit["points"] == len(RANKS) and fit["min_ranks"] == 1 and fit["max_ranks"] == RANKS[-1]


def test_bootstrap_is_reproducible() -> None:
    rows = _rows(amdahl_times(0.1, 1.0, 0.05, 5, np.random.default_rng(3)), "strong")
    pd.testing.assert_frame_equal(rs.serial_fractions(rows), rs.serial_fractions(rows))


def test_a_fit_outside_zero_one_is_clipped() -> None:
    """Slower with more ranks (oversubscribed): least squares says s > 1, no serial fraction is."""
    t = np.array([1.0 * p for p in RANKS])
    assert rs.amdahl_fraction(np.array(RANKS), t)[0] == 1.0


def test_strong_scaling_speedup_and_efficiencies_follow_their_definitions() -> None:
    times = {1: [4.0, 4.2, 3.9], 2: [2.2, 2.1, 2.3], 4: [1.3, 1.2, 1.25], 8: [0.9, 0.8, 0.85]}
    table = rs.strong_scaling(_rows(times, "strong"))
    med = {p: float(np.median(ts)) for p, ts in times.items()}
    for _, row in table.iterrows():
        p = row["ranks"]
        assert row["median_s"] == pytest.approx(med[p])
        assert row["speedup"] == pytest.approx(med[1] / med[p])
        assert row["efficiency"] == pytest.approx(med[1] / med[p] / p)
        assert row["node_efficiency"] == pytest.approx(med[1] / med[p] / max(1, p // 4))
        assert row["job_ids"] == f"j{p}" and row["base_ranks"] == 1
    assert rs.weak_scaling(_rows(times, "strong")).empty


def test_weak_scaling_from_the_variant_or_the_params() -> None:
    times = {1: [1.0, 1.1], 2: [1.2, 1.3], 4: [1.5, 1.4]}
    for rows in (_rows(times, "weak"), _rows(times, "ring", params="scaling=weak")):
        table = rs.weak_scaling(rows)
        med = {p: float(np.median(ts)) for p, ts in times.items()}
        assert sorted(table["ranks"]) == [1, 2, 4]
        for _, row in table.iterrows():
            assert row["efficiency"] == pytest.approx(med[1] / row["median_s"])
            assert row["scaled_speedup"] == pytest.approx(row["ranks"] * med[1] / row["median_s"])
        assert rs.strong_scaling(rows).empty


def test_series_are_split_by_configuration_threads_and_n() -> None:
    a = _rows({1: [2.0], 2: [1.0]}, "strong")
    b = _rows({1: [3.0], 2: [1.0]}, "strong").assign(n=2000)
    c = _rows({1: [5.0], 2: [1.0]}, "strong").assign(threads=2)
    table = rs.strong_scaling(pd.concat([a, b, c], ignore_index=True))
    top = table[table["ranks"] == 2].set_index(["n", "threads"])["speedup"]
    assert top.to_dict() == {(1000, 1): 2.0, (2000, 1): 3.0, (1000, 2): 5.0}


def test_comm_compute_medians_and_share() -> None:
    rows = _rows({1: [1.0, 1.0, 1.0], 4: [0.5, 0.5, 0.5]}, "strong")
    rows["compute_s"] = np.where(rows["ranks"] == 1, 0.9, 0.3).astype(str)  # extras come as text
    rows["comm_s"] = np.where(rows["ranks"] == 1, 0.1, 0.2)
    table = rs.comm_compute(rows).set_index("ranks")
    assert table.loc[4, "comm_fraction"] == pytest.approx(0.2 / 0.5)
    assert table.loc[1, "compute_s"] == pytest.approx(0.9)
    only_comm = rs.comm_compute(rows.drop(columns="compute_s"))
    assert only_comm["comm_fraction"].isna().all() and len(only_comm) == 2


def test_single_rank_results_give_empty_tables_and_json_keys() -> None:
    rows = _rows({1: [1.0, 1.1]}, "naive").drop(columns=["ranks", "nodes"])
    out = metrics_json(rows, None)
    for key in ("strong_scaling", "weak_scaling", "serial_fraction", "comm_compute"):
        assert key in METRIC_KEYS and out[key] == []


def test_report_json_records_carry_integers_and_the_group_columns() -> None:
    rows = _rows(amdahl_times(0.2, 1.0, 0.01, 5, np.random.default_rng(1)), "strong")
    out = metrics_json(rows, None)
    rec = out["strong_scaling"][-1]
    assert isinstance(rec["ranks"], int) and isinstance(rec["nodes"], int) and rec["kernel"] == "k"
    assert out["serial_fraction"][0]["law"] == "amdahl"
    # speedups over threads stay per rank count: no median pools two rank counts
    assert {r["ranks"] for r in out["fits"]} == set(RANKS)
