"""`rerun --time-factor/--mem-factor` grow only the resource that ran out, and
never past the partition's limit (campaign/rerun.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.errors import BadInputError
from campaign.ledger import JobAttempt, Ledger
from campaign.rerun import _scaled, rerun
from campaign.states import JobState
from tests.fixtures.ledger_rows import SPEC, add_attempt


def _attempt(state: JobState, walltime: int, mem: float | None) -> JobAttempt:
    return JobAttempt(state=state, walltime_min=walltime, mem_gb=mem)


def test_timeout_walltime_scaled_and_capped() -> None:
    assert _scaled(_attempt(JobState.TIMEOUT, 10, None), SPEC, 120, None, 2.0, 2.0, 1.0) == (20, None)
    assert _scaled(_attempt(JobState.TIMEOUT, 100, None), SPEC, 120, None, 2.0, 2.0, 1.0) == (120, None)


def test_walltime_grows_by_at_least_a_minute() -> None:
    walltime, _ = _scaled(_attempt(JobState.TIMEOUT, 1, None), SPEC, 120, None, 2.0, 1.1, 1.0)
    assert walltime >= 2


def test_out_of_memory_scales_memory_not_walltime() -> None:
    assert _scaled(_attempt(JobState.OUT_OF_MEMORY, 10, 4.0), SPEC, 120, None, 2.0, 2.0, 1.5) == (10, 6.0)
    # no memory requested before: the partition's share for the run's threads is the base
    assert _scaled(_attempt(JobState.OUT_OF_MEMORY, 10, None), SPEC, 120, None, 2.0, 1.0, 2.0) == (10, 8.0)


def test_other_failures_keep_their_resources() -> None:
    assert _scaled(_attempt(JobState.FAILED, 10, 4.0), SPEC, 120, None, 2.0, 3.0, 3.0) == (10, 4.0)


def test_factors_below_one_are_bad_input(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path / "runs", state=JobState.TIMEOUT)
    with pytest.raises(BadInputError, match="must be >= 1"):
        rerun(led, "unit", failed=True, time_factor=0.5)
