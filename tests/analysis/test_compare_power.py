"""bench/compare_power.py: the pieces the replicated compare's power measurement rests on (the fake
kernel's slowdown axis, the split of one interleaved campaign into sides, the
round-paired and round-adjusted comparisons, the power of the tool's rule)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import compare_power as cp

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fixtures" / "fake_kernel.py"


def _spin(tmp_path: Path, *extra: str) -> float:
    """Least CPU time of the fake kernel's spin at n = 256 (9 repeats): the work alone, as the
    least is what another process on a shared core inflates least."""
    out = tmp_path / f"spin{len(list(tmp_path.iterdir()))}.csv"
    env = dict(os.environ, FAKE_CLOCK="cpu")
    env.pop("FAKE_SLOWDOWN", None)
    subprocess.run(
        [
            sys.executable,
            str(FAKE),
            "--n",
            "256",
            "--variant",
            "spin",
            "--repeats",
            "9",
            "--warmup",
            "1",
            "--out",
            str(out),
            *extra,
        ],
        check=True,
        env=env,
        timeout=120,
    )
    return float(pd.read_csv(out)["time_s"].min())


def test_fake_kernel_slowdown_axis_scales_the_work(tmp_path: Path) -> None:
    """--slowdown (a grid axis of the interleaved campaign) multiplies the spin's work,
    as FAKE_SLOWDOWN does: 3x the loop steps take well over twice the CPU time. The sides
    alternate three times, each taken at its least: a loaded machine (a busy sibling
    core, a cold cache) slows some runs by half as much again, never speeds one up."""
    plain, slowed = math.inf, math.inf
    for _ in range(3):
        plain = min(plain, _spin(tmp_path, "--side", "x"))
        slowed = min(slowed, _spin(tmp_path, "--side", "y", "--slowdown", "3"))
    assert slowed > 2 * plain, (slowed, plain)


def _campaign(rounds: list[float], slow: float, rng: np.random.Generator, job_sd: float = 0.01) -> pd.DataFrame:
    """Rows of an interleaved campaign: sides x/y, slowdown 1/`slow`, two tags, two n, 5 repeats;
    every job of round r scaled by rounds[r], each job by its own factor (sd job_sd)."""
    rows = []
    job = 0
    for r, factor in enumerate(rounds):
        for side in ("x", "y"):
            for w in ("1", str(slow)):
                for tag in ("a", "b"):
                    job += 1
                    own = math.exp(rng.normal(0, job_sd))
                    for n in (64, 128):
                        for rep in range(5):
                            t = 1e-6 * n * float(w) * factor * own * math.exp(rng.normal(0, 0.002))
                            rows.append(
                                {
                                    "cluster": "local",
                                    "partition": "local",
                                    "d": 64,
                                    "kernel": "fake",
                                    "impl": "py",
                                    "variant": "spin",
                                    "device": "cpu",
                                    "dtype": "fp32",
                                    "threads": 1,
                                    "n": n,
                                    "repeat": rep,
                                    "time_s": t,
                                    "job_id": str(job),
                                    "campaign": "spin-ab",
                                    "replicate": r,
                                    "params": f"side={side},slowdown={w},tag={tag}",
                                }
                            )
    return pd.DataFrame(rows)


def test_split_gives_each_side_its_rows_matched_by_tag() -> None:
    frame = _campaign([1.0, 1.0, 1.0], 1.5, np.random.default_rng(1))
    sides = cp.split(frame)
    assert {k: len(v) for k, v in sides.items()} == {k: len(frame) // 4 for k in cp.SIDES}
    assert set(sides["slow"]["params"]) == {"tag=a", "tag=b"}
    ratio = sides["slow"]["time_s"].median() / sides["base"]["time_s"].median()
    assert ratio == pytest.approx(1.5, rel=0.05)


def test_round_factor_shared_by_a_round_is_taken_out_by_pairing_and_adjusting() -> None:
    """A machine that moves every job of a round alike by +-15% (a block effect) hides a
    10% slowdown from the unpaired interval at R = 3; pairing by round and the
    round-adjusted times both see it, and identical sides stay within noise."""
    frame = _campaign([1.0, 1.15, 0.87], 1.1, np.random.default_rng(2))
    sides, adjusted = cp.split(frame), cp.split(cp.round_adjusted(frame))
    unpaired = cp.welch(sides["base"], sides["slow"], 0.05)
    assert not (unpaired["verdict"] == "slower").any()
    for got in (cp.paired(sides["base"], sides["slow"], 0.05), cp.welch(adjusted["base"], adjusted["slow"], 0.05)):
        assert (got["verdict"] == "slower").all()
    for got in (cp.paired(sides["base"], sides["same"], 0.05), cp.welch(adjusted["base"], adjusted["same"], 0.05)):
        assert (got["verdict"] == "within-noise").all()


def test_power_of_the_rule_is_its_nominal_level_at_no_effect_and_grows_with_replicates() -> None:
    """At no change the rule calls 'slower' at most at its one-sided 2.5% (plus the
    simulation's error); the planned R is the first that reaches the target."""
    assert cp.power(0.04, 3, effect=0.0) <= 0.025 + 4 * math.sqrt(0.025 * 0.975 / 20_000)
    r = cp.replicates_for_power(0.04)
    assert cp.power(0.04, r) >= 0.90 > cp.power(0.04, r - 1)
    assert cp.replicates_for_power(0.08) > r
