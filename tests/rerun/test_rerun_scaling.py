"""`rerun --time-factor/--mem-factor` apply whatever the failure,
never past the partition's limits, and the output says what changed
(campaign/commands/rerun.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from campaign.commands.rerun import _scaled, rerun
from campaign.config.schema import PartitionSpec
from campaign.ledger import JobAttempt, Ledger
from campaign.plumbing.errors import BadInputError
from campaign.plumbing.states import JobState
from tests.fixtures.ledger_rows import SPEC, add_attempt


def _attempt(state: JobState, walltime: int, mem: float | None) -> JobAttempt:
    return JobAttempt(state=state, walltime_min=walltime, mem_gb=mem)


PART = PartitionSpec(name="p", sockets=1, cores_per_socket=8, memory_gb=64, max_walltime_min=120)


def _scale(state: JobState, walltime: int, mem: float | None, tf: float, mf: float,
           part: PartitionSpec = PART) -> tuple[int, float | None]:
    got_walltime, got_mem, _ = _scaled(_attempt(state, walltime, mem), SPEC, part, tf, mf)
    return got_walltime, got_mem


def test_timeout_walltime_scaled_and_capped() -> None:
    assert _scale(JobState.TIMEOUT, 10, None, 2.0, 1.0) == (20, None)
    assert _scale(JobState.TIMEOUT, 100, None, 2.0, 1.0) == (PART.max_walltime_min, None)


def test_a_factor_past_any_partition_is_capped_not_an_overflow() -> None:
    """`rerun --time-factor 1e308` was 'internal error: OverflowError' (10 min x 1e308 is inf)."""
    walltime, _, said = _scaled(_attempt(JobState.TIMEOUT, 10, None), SPEC, PART, 1e308, 1e308)
    assert walltime == PART.max_walltime_min and "partition p's maximum" in said, said


def test_walltime_grows_by_at_least_a_minute() -> None:
    walltime, _ = _scale(JobState.TIMEOUT, 1, None, 1.1, 1.0)
    assert walltime >= 2


@pytest.mark.parametrize("state", [JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.FAILED, JobState.CANCELLED,
                                   JobState.LOST_OUTPUT, JobState.PREFLIGHT_FAILED])
def test_factors_apply_whatever_the_failure(state: JobState) -> None:
    """`rerun --time-factor 3` on an OUT_OF_MEMORY job once kept its 1-minute walltime.
    The factors the user asked for apply to every attempt rerun."""
    assert _scale(state, 1, 0.5, 3.0, 1.0) == (3, 0.5)
    assert _scale(state, 10, 4.0, 1.0, 1.5) == (10, 6.0)
    assert _scale(state, 10, 4.0, 1.0, 1.0) == (10, 4.0)


def test_memory_without_a_request_starts_from_the_site_share_and_stays_within_the_node() -> None:
    # no memory requested before: the node's memory per core for the run's cores is the base
    per_core_mib = math.floor(PART.memory_gb / PART.cores * SPEC.alloc_cpus * 1e9 / 2**20)
    _, mem = _scale(JobState.OUT_OF_MEMORY, 10, None, 1.0, 2.0)
    assert mem is not None and abs(mem * 1024 - 2 * per_core_mib) <= 2  # GiB rounded to 3 places
    # never above what a node lets a job ask (95% of nominal here), however large the factor
    _, mem = _scale(JobState.OUT_OF_MEMORY, 10, 40.0, 1.0, 10.0)
    assert mem is not None and mem * 1024 == math.floor(PART.memory_gb * 0.95 * 1e9 / 2**20)


def test_what_changed_is_said() -> None:
    _, _, said = _scaled(_attempt(JobState.OUT_OF_MEMORY, 1, 0.1), SPEC, PART, 3.0, 4.0)
    assert said == f"walltime 1 -> 3 min; memory {0.1 * 1024:.0f} MiB -> {0.4 * 1024:.0f} MiB"
    _, _, said = _scaled(_attempt(JobState.TIMEOUT, 100, None), SPEC, PART, 2.0, 1.0)
    assert said == f"walltime 100 -> {PART.max_walltime_min} min (partition p's maximum)"
    # nothing asked: the line still says what the new attempt gets
    assert _scaled(_attempt(JobState.FAILED, 10, None), SPEC, PART, 1.0, 1.0)[2] == \
        "unchanged: walltime 10 min, memory the site's share"
    assert _scaled(_attempt(JobState.FAILED, 10, 0.5), SPEC, PART, 1.0, 1.0)[2] == \
        f"unchanged: walltime 10 min, memory {0.5 * 1024:.0f} MiB"


def test_rerun_prints_what_changed(tmp_path: Path) -> None:
    """The CLI, on a real ledger: an OUT_OF_MEMORY attempt of 1 minute rerun with --time-factor 3
    gets 3 minutes (in the ledger and in the output line)."""
    from tests.conftest import run_cli

    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path / "runs", state=JobState.OUT_OF_MEMORY, walltime_min=1, mem_gb=0.25)
    led.close()
    proc = run_cli("--ledger", str(tmp_path / "ledger.sqlite"), "rerun", "unit", "--failed",
                   "--time-factor", "3", "--mem-factor", "2", "--no-preflight")
    assert "rerun: 101 -> " in proc.stdout, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("rerun: 101 -> "))
    assert line.endswith(f"(walltime 1 -> 3 min; memory {0.25 * 1024:.0f} MiB -> {0.5 * 1024:.0f} MiB)"), line
    with Ledger(tmp_path / "ledger.sqlite").session() as s:
        new = s.query(JobAttempt).filter_by(attempt=2).one()
        assert (new.walltime_min, new.mem_gb) == (3, 0.5)


def test_factors_below_one_are_bad_input(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path / "runs", state=JobState.TIMEOUT)
    with pytest.raises(BadInputError, match="must be >= 1"):
        rerun(led, "unit", failed=True, time_factor=0.5)


@pytest.mark.parametrize(("walltime", "factor"), [(1, 2.5), (3, 1.5), (7, 1.1)])
def test_time_factor_rounds_up_to_whole_minutes(walltime: int, factor: float) -> None:
    """2.5 x 1 min must not be 2 min (round half to even); a factor never gives less than asked."""
    scaled, _ = _scale(JobState.TIMEOUT, walltime, None, factor, 1.0)
    assert scaled >= walltime * factor and scaled - walltime * factor < 1
