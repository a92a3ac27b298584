"""Medians over repeats with their interval; local and fitted exponents."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analysis import fitted_exponents, local_exponents, summarize

RowMaker = Callable[..., pd.DataFrame]

SIZES = [64, 128, 256, 512, 1024, 2048]


def test_median_interval_with_outlier(rows: RowMaker) -> None:
    df = rows({(1, 64): [1.0, 1.1, 0.9, 1.05, 100.0], (1, 128): 3.0,
               (1, 256): list(range(1, 11))})
    s = summarize(df).set_index("n")
    assert s.loc[64, "median_s"] == 1.05  # the 100 s outlier does not move it
    # m = 5: no order-statistic interval reaches 95%, so [min, max] at 93.75%
    assert (s.loc[64, "ci_lo_s"], s.loc[64, "ci_hi_s"]) == (0.9, 100.0)
    assert s.loc[64, "ci_coverage"] == 1 - 2 * 0.5**5
    # m = 10: r = 2 -> [x_(2), x_(9)], coverage 1 - 2 * 11/1024
    assert (s.loc[256, "median_s"], s.loc[256, "ci_lo_s"], s.loc[256, "ci_hi_s"]) == (5.5, 2, 9)
    assert s.loc[256, "ci_coverage"] == pytest.approx(1 - 22 / 1024, abs=1e-12)
    assert s["single_repeat"].tolist() == [False, True, False]
    assert s["repeats"].tolist() == [5, 1, 10]
    assert s.loc[64, "flops"] == 4 * 64 * 64 * 64


def test_quadratic_time_gives_exponent_two(rows: RowMaker) -> None:
    df = rows({(1, n): [3e-9 * n * n, 3.1e-9 * n * n, 2.9e-9 * n * n] for n in SIZES})
    local = local_exponents(df)
    assert local["n_lo"].tolist() == SIZES[:-1] and local["n_hi"].tolist() == SIZES[1:]
    np.testing.assert_allclose(local["exponent"], 2.0, rtol=0, atol=1e-12)
    fit = fitted_exponents(df).iloc[0]
    assert fit["slope"] == pytest.approx(2.0, abs=1e-12)
    assert fit["ci_hi"] - fit["ci_lo"] < 1e-9
    assert (fit["n_min"], fit["n_max"], fit["points"]) == (64, 2048, 6)


def test_fit_interval_is_student_t(rows: RowMaker) -> None:
    # log t = 2 log n + e with residuals +-0.1 alternating: known slope and SE.
    eps = np.array([0.1, -0.1, 0.1, -0.1])
    n = np.array([64, 128, 256, 512], dtype=float)
    t = np.exp(2 * np.log(n) + eps) * 1e-9
    fit = fitted_exponents(rows({(1, int(k)): v for k, v in zip(n, t, strict=True)})).iloc[0]
    x = np.log(n) - np.log(n).mean()
    y = np.log(t) - np.log(t).mean()
    slope = (x * y).sum() / (x * x).sum()
    se = np.sqrt(((y - slope * x) ** 2).sum() / 2 / (x * x).sum())
    half = 4.302652729911275 * se  # t_{0.975, 2}
    assert fit["slope"] == pytest.approx(slope, rel=1e-12)
    assert (fit["ci_lo"], fit["ci_hi"]) == pytest.approx((slope - half, slope + half), rel=1e-9)


def test_fit_range_and_degenerate_groups(rows: RowMaker) -> None:
    df = rows({(1, n): 1e-9 * n * n for n in SIZES} | {(2, 64): 1.0})
    fits = fitted_exponents(df, n_min=128, n_max=1024).set_index("threads")
    assert fits.loc[1, "points"] == 4 and fits.loc[1, "n_min"] == 128
    assert 2 not in fits.index  # T=2 has no point inside the range
    two = fitted_exponents(rows({(1, 64): 1.0, (1, 128): 4.0})).iloc[0]
    assert two["slope"] == pytest.approx(2.0) and np.isnan(two["ci_lo"])
    assert len(local_exponents(rows({(1, 64): 1.0}))) == 0
