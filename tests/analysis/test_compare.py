"""compare(): synthetic campaigns with known injected changes get the exact verdicts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analysis.compare import compare
from analysis.verdicts import FASTER, INSUFFICIENT, NOISE, SLOWER

RowMaker = Callable[..., pd.DataFrame]
SIZES = (1024, 2048, 4096, 8192)
NOISE_SD = 0.005  # 0.5% multiplicative noise per repeat: far below the 10% injected


def campaign(rows: RowMaker, factors: dict[str, float], repeats: int, seed: int, **key: object) -> pd.DataFrame:
    """One campaign: for each variant, t = factor * n^2 * 1e-9 per n, `repeats`
    noisy repeats each (seeded)."""
    rng = np.random.default_rng(seed)
    parts = []
    for variant, factor in factors.items():
        times = {(1, n): factor * n * n * 1e-9 * np.exp(rng.normal(0, NOISE_SD, repeats)) for n in SIZES}
        parts.append(rows(times, variant=variant, **key))
    return pd.concat(parts, ignore_index=True)


def verdict_of(points: pd.DataFrame, variant: str) -> set[str]:
    return set(points.loc[points["variant"] == variant, "verdict"])


def test_injected_changes_get_exact_verdicts(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0, "memopt": 1.0, "fused": 1.0}, repeats=10, seed=1)
    new = campaign(rows, {"naive": 1.10, "memopt": 1.0, "fused": 0.90}, repeats=10, seed=2)
    c = compare(base, new)
    assert verdict_of(c.points, "naive") == {SLOWER}
    assert verdict_of(c.points, "memopt") == {NOISE}
    assert verdict_of(c.points, "fused") == {FASTER}
    slow = c.points[c.points["variant"] == "naive"]
    assert (slow["ratio_lo"] > 1).all() and np.allclose(slow["ratio"], 1.10, rtol=0.02)
    assert (c.points["ratio_lo"] <= c.points["ratio"]).all() and (c.points["ratio"] <= c.points["ratio_hi"]).all()
    assert len(c.slower) == len(SIZES)
    # 10 repeats: rank-2 interval (coverage 1 - 2*11/1024) on each side; the box covers >= the product.
    assert np.allclose(c.points["ci_coverage"], (1 - 22 / 1024) ** 2)
    row = c.summary.set_index("kernel").loc["attention_forward"]
    assert row["points"] == 3 * len(SIZES)
    assert (row[SLOWER], row[FASTER], row[NOISE], row[INSUFFICIENT]) == (4, 4, 4, 0)
    assert c.base_only.empty and c.new_only.empty


def test_summary_geomean_of_a_uniform_change(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0}, repeats=10, seed=3)
    new = campaign(rows, {"naive": 1.10}, repeats=10, seed=4)
    s = compare(base, new).summary.iloc[0]
    assert s["geomean_lo"] < s["geomean"] < s["geomean_hi"]
    assert s["geomean_lo"] < 1.10 < s["geomean_hi"] and s[SLOWER] == len(SIZES)


def test_one_repeat_never_claims_a_verdict(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0, "memopt": 1.0}, repeats=1, seed=5)
    new = campaign(rows, {"naive": 1.10, "memopt": 1.0}, repeats=10, seed=6)
    c = compare(base, new)
    assert set(c.points["verdict"]) == {INSUFFICIENT}
    assert c.slower.empty
    # and the other way round, one repeat on the new side
    assert set(compare(new, base).points["verdict"]) == {INSUFFICIENT}


def test_few_repeats_below_the_minimum(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0}, repeats=3, seed=7)
    new = campaign(rows, {"naive": 1.5}, repeats=10, seed=8)
    assert set(compare(base, new).points["verdict"]) == {INSUFFICIENT}
    assert set(compare(base, new, min_repeats=3).points["verdict"]) == {SLOWER}
    four = campaign(rows, {"naive": 1.0}, repeats=4, seed=7)
    assert set(compare(four, new).points["verdict"]) == {SLOWER}


def test_identical_distributions_rarely_get_a_verdict() -> None:
    """The rule's own false-positive rate at 4 + 4 repeats, noise far above the
    threshold: bounded by 2/C(8,4) (module doc), measured on 4000 points."""
    from math import comb

    rng = np.random.default_rng(13)
    points, repeats, sd = 4000, 4, 0.2
    rows = [
        {
            "cluster": "c",
            "partition": "p",
            "kernel": "k",
            "impl": "i",
            "variant": "v",
            "device": "cpu",
            "threads": 1,
            "n": n,
            "repeat": r,
            "time_s": float(t),
        }
        for n in range(1, points + 1)
        for r, t in enumerate(np.exp(rng.normal(0, sd, repeats)))
    ]
    base = pd.DataFrame(rows)
    new = base.copy()
    new["time_s"] = np.exp(rng.normal(0, sd, len(new)))
    rate = (compare(base, new).points["verdict"] != NOISE).mean()
    assert rate <= 2 / comb(2 * repeats, repeats) + 3 * np.sqrt(0.03 * 0.97 / points)


def test_overlapping_intervals_are_within_noise(rows: RowMaker) -> None:
    # A 20% median shift inside a wide spread: the [min, max] intervals overlap.
    base = rows({(1, 64): [1.0, 1.4, 1.6, 2.0]})
    new = rows({(1, 64): [1.2, 1.7, 1.9, 2.4]})
    p = compare(base, new).points.iloc[0]
    assert p["ratio"] == pytest.approx(1.8 / 1.5) and p["verdict"] == NOISE
    assert p["ratio_lo"] == pytest.approx(1.2 / 2.0) and p["ratio_hi"] == pytest.approx(2.4 / 1.0)


def test_a_real_change_below_the_threshold_is_within_noise(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0}, repeats=10, seed=9)
    new = campaign(rows, {"naive": 1.03}, repeats=10, seed=10)
    c = compare(base, new)
    assert (c.points["ratio_lo"] > 1).all()  # the change is real ...
    assert set(c.points["verdict"]) == {NOISE}  # ... but below 5%
    assert set(compare(base, new, threshold=0.02).points["verdict"]) == {SLOWER}


def test_points_on_one_side_only_are_listed(rows: RowMaker) -> None:
    base = pd.concat([rows({(1, 64): [1.0] * 3, (2, 64): [0.6] * 3}), rows({(1, 64): [2.0] * 3}, impl="fortran")])
    new = pd.concat([rows({(1, 64): [1.0] * 3, (4, 64): [0.4] * 3})])  # 3 repeats: listed, not judged
    c = compare(base, new)
    assert len(c.points) == 1
    assert sorted(zip(c.base_only["impl"], c.base_only["threads"], strict=True)) == [("c", 2), ("fortran", 1)]
    assert c.new_only[["impl", "threads", "n"]].values.tolist() == [["c", 4, 64]]
    assert c.base_only["repeats"].tolist() == [3, 3]


def test_by_cluster_matches_across_clusters(rows: RowMaker) -> None:
    base = campaign(rows, {"naive": 1.0}, repeats=10, seed=11)
    new = campaign(rows, {"naive": 1.10}, repeats=10, seed=12, cluster="delta", partition="cpu")
    assert compare(base, new).points.empty  # different clusters: nothing matches by default
    c = compare(base, new, by="cluster")
    assert set(c.points["verdict"]) == {SLOWER}
    assert set(c.points["cluster_base"]) == {"anvil"} and set(c.points["cluster_new"]) == {"delta"}
    assert c.summary[["cluster_base", "cluster_new"]].values.tolist() == [["anvil", "delta"]]


def test_imported_table_without_params_matches(rows: RowMaker) -> None:
    base = rows({(1, 64): [1.0, 1.0, 1.0]})
    base["params"] = ""
    new = rows({(1, 64): [1.0, 1.0, 1.0]})
    assert len(compare(base, new).points) == 1


def test_bad_arguments_are_value_errors(rows: RowMaker) -> None:
    df = rows({(1, 64): 1.0})
    with pytest.raises(ValueError, match="unknown compare dimension"):
        compare(df, df, by="node")
    with pytest.raises(ValueError, match="threshold"):
        compare(df, df, threshold=5)


def test_a_side_of_single_rank_runs_matches_the_other_sides_one_rank_points(rows: RowMaker) -> None:
    """The result frames drop ranks/nodes where every row has 1 (single-process
    runs); such a side's points are 1 rank on 1 node, so they match the other
    side's 1-rank points and never its 2-rank ones (seen: a base whose 2-node run
    had failed matched nothing of a new campaign over nodes 1 and 2)."""
    base = campaign(rows, {"naive": 1.0}, repeats=10, seed=21)
    one = campaign(rows, {"naive": 1.10}, repeats=10, seed=22).assign(ranks=1, nodes=1)
    two = campaign(rows, {"naive": 1.0}, repeats=10, seed=23).assign(ranks=2, nodes=2)
    c = compare(base, pd.concat([one, two], ignore_index=True))
    assert len(c.points) == len(SIZES) and set(c.points["verdict"]) == {SLOWER}
    assert c.base_only.empty and len(c.new_only) == len(SIZES) and set(c.new_only["ranks"]) == {2}
    only_two = compare(base, two)  # a side of 2-rank runs alone: no point in common, never pooled
    assert only_two.points.empty and len(only_two.base_only) == len(only_two.new_only) == len(SIZES)
    assert len(compare(two, base).points) == 0
