"""What `jobs` and `show` print comes from the ledger as it is
(campaign/cli/views.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.cli.views import JOB_COLUMNS, job_rows, show_job
from campaign.ledger import Ledger
from campaign.plumbing.errors import BadInputError
from campaign.plumbing.states import JobState
from tests.fixtures.ledger_rows import add_attempt, spec_with


def _ledger(tmp_path: Path) -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path / "runs", state=JobState.COMPLETED, job_id="11")
    add_attempt(led, tmp_path / "runs", state=JobState.FAILED, job_id="12", spec=spec_with(threads=4))
    add_attempt(led, tmp_path / "runs", state=JobState.PENDING, job_id=None, spec=spec_with(threads=8),
                campaign="other")
    return led


def test_job_rows_filter_by_campaign_and_state(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    col = {c: i for i, c in enumerate(JOB_COLUMNS)}
    every = job_rows(led, None, None, all_attempts=False)
    assert [r[col["job_id"]] for r in every] == ["11", "12", None]  # None: not submitted ("-" in a table)
    unit = job_rows(led, "unit", None, all_attempts=False)
    assert {r[col["campaign"]] for r in unit} == {"unit"} and len(unit) == 2
    failed = job_rows(led, None, "failed", all_attempts=False)
    assert [(r[col["job_id"]], r[col["threads"]], r[col["state"]]) for r in failed] == [("12", 4, "FAILED")]


def test_unknown_state_and_campaign_are_bad_input(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    with pytest.raises(BadInputError, match="unknown state 'DONE'"):
        job_rows(led, None, "DONE", all_attempts=False)
    with pytest.raises(BadInputError, match="unknown campaign 'nope'"):
        job_rows(led, "nope", None, all_attempts=False)


def test_show_names_the_job_its_run_and_its_files(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    text = show_job(led, "12")
    assert "job 12" in text and "campaign unit" in text and "FAILED" in text
    assert "threads 4" in text and "n: 64, 128" in text
    assert str(tmp_path / "runs") in text and "kernel.err" in text
    with pytest.raises(BadInputError, match="unknown job ID"):
        show_job(led, "404")
