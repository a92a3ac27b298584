"""Speedup, efficiency, T*, max-thread and doubling penalties, crossovers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analysis import best_threads, crossovers, doubling_penalty, speedup

RowMaker = Callable[..., pd.DataFrame]

# Designed sweep at n = 4096 on a 128-core node with 8 NUMA domains of 16.
SWEEP = {1: 64.0, 2: 32.0, 4: 16.0, 8: 8.0, 16: 4.0, 32: 5.0, 64: 4.5, 128: 6.0, 256: 9.0}


def test_speedup_and_efficiency(rows: RowMaker) -> None:
    out = speedup(rows({(t, 4096): v for t, v in SWEEP.items()})).set_index("threads")
    assert out.loc[16, "speedup"] == 16.0 and out.loc[16, "efficiency"] == 1.0
    assert out.loc[32, "speedup"] == 12.8 and out.loc[32, "efficiency"] == 0.4
    assert out.loc[256, "speedup"] == pytest.approx(64 / 9)
    assert out.loc[1, "speedup"] == 1.0


def test_speedup_omits_groups_without_one_thread(rows: RowMaker) -> None:
    df = pd.concat([rows({(2, 64): 1.0, (4, 64): 0.5}, impl="fortran"), rows({(1, 64): 2.0, (2, 64): 1.0})])
    out = speedup(df)
    assert set(out["impl"]) == {"c"} and out["speedup"].tolist() == [1.0, 2.0]


def test_best_threads_and_max_thread_penalty(rows: RowMaker) -> None:
    df = rows({(t, 4096): [v, v * 1.001, v * 1.002] for t, v in SWEEP.items()} | {(1, 64): 1.0, (2, 64): 1.0})
    out = best_threads(df).set_index("n")
    assert out.loc[4096, "best_threads"] == 16 and out.loc[4096, "max_threads"] == 256
    assert out.loc[4096, "max_thread_penalty"] == pytest.approx(9.0 / 4.0)
    assert not out.loc[4096, "penalty_within_noise"]
    assert out.loc[64, "best_threads"] == 1  # a tie goes to fewer threads
    assert out.loc[64, "max_thread_penalty"] == 1.0 and out.loc[64, "penalty_within_noise"]


def test_doubling_penalty_flags(rows: RowMaker, partitions: pd.DataFrame) -> None:
    out = doubling_penalty(rows({(t, 4096): v for t, v in SWEEP.items()}), partitions)
    out = out.set_index("threads")
    assert out.index.tolist() == [2, 4, 8, 16, 32, 64, 128, 256]
    assert out.loc[32, "penalty"] == 1.25 and out.loc[64, "penalty"] == 0.9
    assert out.loc[128, "penalty"] == 6.0 / 4.5 and out.loc[256, "penalty"] == 1.5
    assert out["crosses_numa"].to_dict() == {
        2: False,
        4: False,
        8: False,
        16: False,
        32: True,
        64: True,
        128: True,
        256: False,
    }
    assert out["crosses_cores"].to_dict() == {t: t == 256 for t in out.index}
    assert not out["facts_missing"].any()
    assert (out["threads_half"] == out.index // 2).all()


def test_doubling_penalty_without_facts(rows: RowMaker) -> None:
    out = doubling_penalty(rows({(16, 64): 1.0, (32, 64): 2.0}, cluster="elsewhere"), None)
    assert out["penalty"].tolist() == [2.0] and out["facts_missing"].tolist() == [True]
    assert not out["crosses_numa"].any() and not out["crosses_cores"].any()


def _crossing_sweep() -> dict[tuple[int, int], float]:
    sizes = [256, 512, 1024, 2048, 4096]
    times: dict[tuple[int, int], float] = {}
    for n in sizes:
        times[(1, n)] = 1e-9 * n * n * 0.9  # T=16 is faster from the start
        times[(16, n)] = 1e-9 * n * n * 0.5
        times[(32, n)] = 1e-9 * n * n
        times[(64, n)] = 0.5e-9 * n * n + 1e-3  # faster than 32 from n = 2048
    return times


def test_crossover_brackets(rows: RowMaker) -> None:
    out = crossovers(rows(_crossing_sweep())).set_index(["threads_a", "threads_b"])
    assert (out.loc[(32, 64), "n_before"], out.loc[(32, 64), "n_at"]) == (1024, 2048)
    assert out.loc[(32, 64), "crossed"]
    assert np.isnan(out.loc[(1, 16), "n_before"]) and out.loc[(1, 16), "n_at"] == 256
    assert not out.loc[(16, 32), "crossed"] and np.isnan(out.loc[(16, 32), "n_at"])
    assert len(out) == 6  # every pair a < b of {1, 16, 32, 64}


def test_crossover_within_noise(rows: RowMaker) -> None:
    df = rows(
        {(1, 64): [1.0, 1.0, 1.0], (2, 64): [2.0, 2.0, 2.0], (1, 128): [1.0, 1.2, 1.4], (2, 128): [0.9, 1.1, 1.3]}
    )
    out = crossovers(df).iloc[0]
    assert (out["n_before"], out["n_at"], out["within_noise"]) == (64, 128, True)


def test_a_single_repeat_shows_no_difference(rows: RowMaker, partitions: pd.DataFrame) -> None:
    """One repeat has no interval ([t, t] overlaps nothing): a penalty or a
    crossover resting on it is within_noise, as a ratio on it is, so that
    `report --json` claims no more than the report's "single repeat, no claim"."""
    df = rows({(1, 64): 4.0, (2, 64): 2.0, (4, 64): 2.4, (1, 128): 8.0, (2, 128): 4.0, (4, 128): 3.0})
    assert best_threads(df).set_index("n").loc[64, "penalty_within_noise"]
    penalty = doubling_penalty(df, partitions).set_index(["n", "threads"])
    assert penalty.loc[(64, 4), "penalty"] == pytest.approx(1.2) and penalty.loc[(64, 4), "within_noise"]
    cross = crossovers(df).set_index(["threads_a", "threads_b"])
    assert cross.loc[(2, 4), "n_at"] == 128 and cross.loc[(2, 4), "within_noise"]
    # with repeats, the same medians apart beyond their intervals are a difference
    tight = rows(
        {
            k: [v, v * 1.001, v * 1.002]
            for k, v in {(1, 64): 4.0, (2, 64): 2.0, (4, 64): 2.4, (1, 128): 8.0, (2, 128): 4.0, (4, 128): 3.0}.items()
        }
    )
    assert not best_threads(tight).set_index("n").loc[64, "penalty_within_noise"]
    assert not doubling_penalty(tight, partitions).set_index(["n", "threads"]).loc[(64, 4), "within_noise"]
    assert not crossovers(tight).set_index(["threads_a", "threads_b"]).loc[(2, 4), "within_noise"]
