"""Two-level estimates (analysis/replicates.py) against known distributions:
replicate effects (a job's drift) and repeat noise drawn from known laws,
so that coverage, false-positive rate, power and the planning formulas can be
checked against what they claim."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.compare import compare
from analysis.replicates import (
    MAX_REPEATS,
    between,
    optimal_repeats,
    replicates_for,
    replicates_needed,
    variance_components,
)
from analysis.summary import summarize
from analysis.verdicts import BETWEEN, FEW_REPLICATES, NOISE, SLOWER, WITHIN
from tests.analysis.conftest import KEY

POINTS = 400  # distinct n per simulated campaign


def campaign(seed: int, *, replicates: int, repeats: int, between_sd: float, within_sd: float,
             factor: float = 1.0, points: int = POINTS) -> pd.DataFrame:
    """Rows of `points` points: time = factor * base(n) * exp(b_job + e_repeat), b ~ N(0, between_sd)
    per replicate (one per job), e ~ N(0, within_sd) per repeat."""
    rng = np.random.default_rng(seed)
    n = np.repeat(np.arange(1, points + 1) * 64, replicates * repeats)
    rep = np.tile(np.repeat(np.arange(replicates), repeats), points)
    drift = np.repeat(rng.normal(0, between_sd, points * replicates), repeats)
    noise = rng.normal(0, within_sd, len(n))
    times = factor * n * 1e-6 * np.exp(drift + noise)
    return pd.DataFrame({**KEY, "threads": 1, "n": n, "repeat": np.tile(np.arange(repeats), points * replicates),
                         "replicate": rep, "time_s": times})


def test_between_replicate_interval_covers_the_true_center_at_its_level() -> None:
    frame = campaign(1, replicates=3, repeats=5, between_sd=0.05, within_sd=0.01, points=2000)
    found = between(frame)
    truth = found["n"].to_numpy() * 1e-6  # exp(0): the center of the replicate law
    covered = (found["lo_s"] <= truth) & (truth <= found["hi_s"])
    # the median of 5 repeats adds a little spread of its own: coverage near, not below, 95%
    assert 0.93 <= covered.mean() <= 0.98, covered.mean()
    assert (found["replicates"] == 3).all()


def test_summary_takes_the_replicate_interval_and_keeps_the_within_run_one_for_one_replicate() -> None:
    frame = campaign(2, replicates=3, repeats=5, between_sd=0.05, within_sd=0.01, points=20)
    s = summarize(frame)
    assert (s["replicates"] == 3).all() and np.allclose(s["ci_coverage"], 0.95)
    b = between(frame)
    assert np.allclose(s["median_s"], b["center_s"]) and np.allclose(s["ci_lo_s"], b["lo_s"])
    alone = summarize(frame[frame["replicate"] == 0])
    assert (alone["replicates"] == 1).all() and alone["replicate_log_sd"].isna().all()
    assert np.allclose(alone["median_s"], frame[frame["replicate"] == 0].groupby("n")["time_s"].median())


def test_identical_campaigns_with_drift_between_jobs_rarely_differ() -> None:
    """The failure replicates exist for: jobs drift (5%) while repeats agree (0.5%). Judged within runs,
    identical campaigns differ at most points; judged between replicates, at <= 5%."""
    kw = dict(replicates=3, repeats=5, between_sd=0.05, within_sd=0.005)
    base, new = campaign(3, **kw), campaign(4, **kw)
    c = compare(base, new)
    assert (c.points["interval"] == BETWEEN).all()
    assert c.points["verdict"].isin([NOISE]).mean() >= 0.95
    one = compare(base[base["replicate"] == 0], new[new["replicate"] == 0])  # one job a side: today's campaigns
    assert (one.points["interval"] == WITHIN).all() and (one.points["verdict"] != NOISE).mean() > 0.3


def test_a_ten_percent_slowdown_is_called_slower_at_most_points() -> None:
    kw = dict(replicates=3, repeats=5, between_sd=0.015, within_sd=0.005)
    c = compare(campaign(5, **kw), campaign(6, factor=1.10, **kw))
    assert (c.points["verdict"] == SLOWER).mean() >= 0.9
    assert np.allclose(np.exp(np.log(c.points["ratio"]).mean()), 1.10, rtol=0.01)
    assert (c.points["ratio_lo"] < c.points["ratio"]).all() and (c.points["ratio"] < c.points["ratio_hi"]).all()


def test_welch_interval_covers_the_true_ratio() -> None:
    kw = dict(replicates=3, repeats=4, between_sd=0.04, within_sd=0.01, points=1500)
    c = compare(campaign(7, **kw), campaign(8, factor=1.2, **kw))
    covered = (c.points["ratio_lo"] <= 1.2) & (1.2 <= c.points["ratio_hi"])
    assert 0.93 <= covered.mean() <= 0.985, covered.mean()


def test_one_replicate_on_a_side_is_within_run_only_or_refused_with_the_count_needed() -> None:
    kw = dict(repeats=5, between_sd=0.05, within_sd=0.005, points=10)
    base, new = campaign(9, replicates=3, **kw), campaign(10, replicates=1, **kw)
    c = compare(base, new)
    assert (c.points["interval"] == "base between-replicates, new within-run").all()
    assert (c.points["replicates_new"] == 1).all()
    sd = between(base)["replicate_log_sd"].to_numpy()
    assert (c.points["replicates_needed"].to_numpy() == replicates_needed(sd, 0.05)).all()
    assert (c.points["replicates_needed"] >= 2).all()
    refused = compare(base, new, min_replicates=2)
    assert (refused.points["verdict"] == FEW_REPLICATES).all()
    assert refused.summary.iloc[0]["verdict"] == FEW_REPLICATES and refused.summary.iloc[0][FEW_REPLICATES] == 10
    with pytest.raises(ValueError, match="min_replicates"):
        compare(base, new, min_replicates=0)
    # neither side replicated: unknown (0), never a made-up count
    old = compare(new, campaign(11, replicates=1, **kw))
    assert (old.points["replicates_needed"] == 0).all() and (old.points["interval"] == WITHIN).all()


def test_one_replicate_beside_three_says_which_interval_each_side_brought() -> None:
    """3 replicates against 1: the 3-replicate side's estimate is its geometric mean with the
    between-replicate t-interval, the other's its median with the order-statistic interval; the
    label says so per side, either way round, and the method names both."""
    kw = dict(repeats=5, between_sd=0.05, within_sd=0.005, points=10)
    three, one = campaign(13, replicates=3, **kw), campaign(14, replicates=1, **kw)
    found = between(three)
    for base, new, label in ((three, one, "base between-replicates, new within-run"),
                             (one, three, "base within-run, new between-replicates")):
        c = compare(base, new)
        assert set(c.points["interval"]) == {label}, set(c.points["interval"])
        side = "t_base" if base is three else "t_new"
        assert np.allclose(c.points[side].to_numpy(), found["center_s"].to_numpy())  # the geometric mean
        assert "geometric mean" in c.method and "order-statistic" in c.method
    assert set(compare(one, campaign(15, replicates=1, **kw)).points["interval"]) == {WITHIN}


def test_replicates_needed_is_the_first_count_whose_interval_fits() -> None:
    for sd in (0.0, 0.01, 0.03, 0.08):
        got = int(replicates_needed(sd, 0.05)[0])
        fits = [r for r in range(2, 200) if stats.t.ppf(0.975, 2 * r - 2) * sd * math.sqrt(2 / r) <= math.log(1.05)]
        assert got == fits[0]
    assert list(replicates_needed(np.array([np.nan, 10.0]), 0.05)) == [0, 1000]


def test_variance_components_recover_the_known_levels() -> None:
    frame = campaign(12, replicates=4, repeats=6, between_sd=0.04, within_sd=0.02, points=1500)
    comps = variance_components(frame)
    assert comps["t1_sq"].mean() == pytest.approx(0.02 ** 2, rel=0.05)
    assert comps["t2_sq"].mean() == pytest.approx(0.04 ** 2, rel=0.1)


def test_optimal_repeats_minimise_machine_time_for_a_given_variance() -> None:
    for c1, c2, t1, t2 in ((0.01, 2.0, 0.02 ** 2, 0.01 ** 2), (0.5, 0.5, 0.05 ** 2, 0.05 ** 2),
                           (0.01, 3.0, 0.1 ** 2, 0.02 ** 2)):
        # at a fixed variance of the mean, R = (T2^2 + T1^2/m) / V: time R (c2 + m c1)
        cost = [(t2 + t1 / m) * (c2 + m * c1) for m in range(1, 5000)]
        best = 1 + int(np.argmin(cost))
        assert optimal_repeats(c1, c2, t1, t2) in (best, best + 1)
    assert optimal_repeats(0.01, 1.0, 0.0, 0.01) == 1  # repeats never vary: one is enough
    assert optimal_repeats(0.001, 30.0, 0.1 ** 2, 0.02 ** 2) == MAX_REPEATS  # capped (the optimum is 866)
    assert optimal_repeats(0.01, 1.0, 0.01, 0.0) == MAX_REPEATS  # jobs never differ: only repeats help


def test_planned_replicates_reach_the_width_and_one_fewer_does_not() -> None:
    t1, t2, m = 0.03 ** 2, 0.02 ** 2, 5
    r = replicates_for(0.05, t1, t2, m)
    half = lambda k: stats.t.ppf(0.975, 2 * k - 2) * math.sqrt(2 * (t2 + t1 / m) / k)  # noqa: E731
    assert half(r) <= math.log(1.05) < half(r - 1)


def test_replicates_of_two_pooled_campaigns_are_distinct_jobs() -> None:
    """A report pooling campaigns A and B (replicate 0 each) has two jobs per point, not one."""
    a = campaign(13, replicates=1, repeats=5, between_sd=0.05, within_sd=0.005, points=5).assign(campaign="A")
    b = campaign(14, replicates=1, repeats=5, between_sd=0.05, within_sd=0.005, points=5).assign(campaign="B")
    s = summarize(pd.concat([a, b], ignore_index=True))
    assert (s["replicates"] == 2).all() and np.allclose(s["ci_coverage"], 0.95)
    assert (summarize(a)["replicates"] == 1).all()
