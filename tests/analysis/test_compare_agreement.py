"""compare's per-kernel verdict and its points' verdicts come from one model
and never contradict each other: two identical replicated campaigns whose
jobs drift together (a busy machine slows every point of a replicate round
alike), over many seeds. The per-kernel t-interval over the points' log ratios
once called such a rerun "faster" (geomean 0.393 [0.191, 0.807]) while all 16
points were within noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.compare import compare
from analysis.verdicts import FASTER, FEW_REPLICATES, INSUFFICIENT, NOISE, SHARED, SLOWER
from tests.analysis.conftest import KEY

SIZES = (64, 128, 256, 512)
VARIANTS = ("naive", "memopt")
THREADS = (1, 2)
SEEDS = {3: range(120), 5: range(40)}  # replicates: seeds


def campaign(
    rng: np.random.Generator,
    *,
    replicates: int = 3,
    repeats: int = 3,
    round_sd: float = 0.4,
    point_sd: float = 0.05,
    within_sd: float = 0.02,
    factor: float = 1.0,
) -> pd.DataFrame:
    """16 points (2 variants x 2 thread counts x 4 n). Each replicate round is one set of jobs run
    together: a drift of that round (N(0, round_sd), shared by every point) plus each job's own
    (N(0, point_sd)), then repeat noise (N(0, within_sd))."""
    grid = pd.MultiIndex.from_product(
        [range(replicates), VARIANTS, THREADS, SIZES, range(repeats)],
        names=["replicate", "variant", "threads", "n", "repeat"],
    ).to_frame(index=False)
    jobs = replicates * len(VARIANTS) * len(THREADS) * len(SIZES)
    drift = np.repeat(rng.normal(0, round_sd, replicates), jobs // replicates) + rng.normal(0, point_sd, jobs)
    noise = np.repeat(drift, repeats) + rng.normal(0, within_sd, len(grid))
    n, threads = grid["n"].to_numpy(float), grid["threads"].to_numpy(float)
    return grid.assign(
        **{k: v for k, v in KEY.items() if k != "variant"}, time_s=factor * n * n * 1e-9 / threads * np.exp(noise)
    )


def _agree(points: pd.DataFrame, verdict: str) -> bool:
    """A kernel's verdict says nothing its points do not: faster/slower only where some judged
    point is, and, when every judged point agrees, that verdict."""
    judged = points[~points["verdict"].isin([INSUFFICIENT, FEW_REPLICATES])]
    if verdict in (FASTER, SLOWER) and not (judged["verdict"] == verdict).any():
        return False
    said = set(judged["verdict"])
    return not (len(said) == 1 and verdict != next(iter(said)))


@pytest.mark.parametrize("replicates", [3, 5])
def test_identical_replicated_campaigns_agree_at_every_seed(replicates: int) -> None:
    """Each seed's pair of campaigns is one implementation (`impl` c<seed>) of a single compare: its
    summary is one row per kernel and implementation and no statistic pools across them, so each
    seed's verdicts are those of a compare of that seed alone, from one compare instead of one per seed."""
    base, new = [], []
    for seed in SEEDS[replicates]:
        rng = np.random.default_rng(seed)
        base.append(campaign(rng, replicates=replicates).assign(impl=f"c{seed}"))
        new.append(campaign(rng, replicates=replicates).assign(impl=f"c{seed}"))
    c = compare(pd.concat(base, ignore_index=True), pd.concat(new, ignore_index=True))
    rows = {row["impl"]: row for row in c.summary.to_dict("records")}
    assert sorted(rows) == sorted(f"c{seed}" for seed in SEEDS[replicates])
    disagreed = []
    kernel_calls = []
    for seed in SEEDS[replicates]:
        row = rows[f"c{seed}"]
        points = c.points[c.points["impl"] == f"c{seed}"]
        assert row["points"] == len(points) == len(SIZES) * len(VARIANTS) * len(THREADS)
        if not _agree(points, row["verdict"]):
            disagreed.append((seed, row["verdict"], row["geomean"], sorted(set(points["verdict"]))))
        kernel_calls.append(row["verdict"])
    assert not disagreed, disagreed[:5]
    # identical campaigns: the kernel is called faster or slower about as rarely as one point is
    assert sum(v in (FASTER, SLOWER) for v in kernel_calls) <= 0.1 * len(SEEDS[replicates])


def test_a_real_change_is_still_seen_at_kernel_level() -> None:
    """The model is not blind: a 2x slowdown of every point makes every point and the kernel slower."""
    rng = np.random.default_rng(7)
    c = compare(campaign(rng, round_sd=0.05), campaign(rng, round_sd=0.05, factor=2.0))
    [row] = c.summary.to_dict("records")
    assert set(c.points["verdict"]) == {SLOWER} and row["verdict"] == SLOWER
    assert row["geomean_lo"] < row["geomean"] < row["geomean_hi"] and row["geomean_lo"] > 1


def test_points_timed_on_a_busy_machine_leave_the_kernel_verdict() -> None:
    """Every point slower but timed beside other load on one side: the kernel cannot judge."""
    rng = np.random.default_rng(3)
    base = campaign(rng, round_sd=0.05)
    new = campaign(rng, round_sd=0.05, factor=2.0).assign(
        overlap="busy machine: other processes kept 1.9 of its 2 CPUs busy"
    )
    c = compare(base, new)
    [row] = c.summary.to_dict("records")
    assert set(c.points["verdict"]) == {SLOWER} and c.points["overlap_new"].all()
    assert row["verdict"] == SHARED and row["shared"] == row["points"]
    assert (row[SLOWER], row[NOISE]) == (row["points"], 0)
