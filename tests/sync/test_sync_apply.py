"""`sync` writes what the scheduler and the job's output say, in one
transaction, and nothing when nothing changed (campaign/commands/sync.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from campaign.backends.base import JobStatus
from campaign.commands.sync import _apply, _unchanged
from campaign.commands.sync_pending import collect
from campaign.ledger import JobAttempt, Ledger, ResultFile
from campaign.plumbing.states import JobState
from campaign.results.reader import Outcome
from tests.conftest import result_sql
from tests.fixtures.ledger_rows import add_attempt

ROW = {"kernel": "attention_forward", "impl": "c", "variant": "naive", "device": "cpu", "dtype": "fp32",
       "threads": 2, "n": 64, "d": 16, "repeat": 0, "time_s": 1e-3, "extra": {"first_call_s": "0.002"}}


def _state(led: Ledger, aid: int) -> JobAttempt:
    with led.session() as s:
        att = s.get(JobAttempt, aid)
        assert att is not None
        s.expunge(att)
        return att


def test_running_then_completed_with_rows(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs")
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    start = datetime(2026, 12, 1, 12, 1, tzinfo=UTC)
    with led.session.begin() as s:
        changed, rows = _apply(s, pending, {aid: JobStatus(JobState.RUNNING, node="n1", started_at=start)}, {}, camps)
    assert (changed, rows) == (1, 0)
    assert _state(led, aid).state is JobState.RUNNING and _state(led, aid).node == "n1"
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    done = JobStatus(JobState.COMPLETED, exit_code=0, node="n1", started_at=start)
    outcome = Outcome(JobState.COMPLETED, [ROW, {**ROW, "repeat": 1}])
    with led.session.begin() as s:
        changed, rows = _apply(s, pending, {aid: done}, {aid: outcome}, camps)
    assert (changed, rows) == (1, 2)
    att = _state(led, aid)
    assert att.state is JobState.COMPLETED and att.exit_code == 0
    stored = result_sql(led.path, "SELECT repeat, cluster, partition, job_id FROM result WHERE attempt_id = ?", aid)
    assert {r[0] for r in stored} == {0, 1}
    assert {r[1:] for r in stored} == {("local", "local", "101")}


def test_outcome_overrides_the_scheduler_state(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs")
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    lost = Outcome(JobState.LOST_OUTPUT, reason="no output file results.csv")
    with led.session.begin() as s:
        _apply(s, pending, {aid: JobStatus(JobState.COMPLETED, exit_code=0)}, {aid: lost}, camps)
    att = _state(led, aid)
    assert att.state is JobState.LOST_OUTPUT and att.reason == "no output file results.csv"


def test_unchanged_open_attempt_is_skipped_before_any_write(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs")
    with led.session() as s:
        _, pending, _ = collect(s, "unit")
    assert _unchanged(pending[0], JobStatus(JobState.PENDING))
    assert not _unchanged(pending[0], JobStatus(JobState.RUNNING))
    assert not _unchanged(pending[0], JobStatus(JobState.PENDING, reason="Priority"))
    assert not _unchanged(pending[0], JobStatus(JobState.COMPLETED, exit_code=0))
    assert pending[0].attempt_id == aid and pending[0].expected_n == ()  # spec read only once finished


def test_unchanged_state_writes_nothing(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs")
    led.close()
    before = (tmp_path / "ledger.sqlite").read_bytes()
    led = Ledger(tmp_path / "ledger.sqlite")
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    with led.session.begin() as s:
        changed, rows = _apply(s, pending, {aid: JobStatus(JobState.PENDING)}, {}, camps)
    led.close()
    assert (changed, rows) == (0, 0)
    assert (tmp_path / "ledger.sqlite").read_bytes() == before


def test_attempt_finished_meanwhile_is_left_alone(tmp_path: Path) -> None:
    """Another terminal cancelled the job between the query and the write."""
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs")
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    with led.session.begin() as s:
        att = s.get(JobAttempt, aid)
        assert att is not None
        att.state = JobState.CANCELLED
    with led.session.begin() as s:
        changed, rows = _apply(s, pending, {aid: JobStatus(JobState.COMPLETED, exit_code=0)},
                               {aid: Outcome(JobState.COMPLETED, [ROW])}, camps)
    assert (changed, rows) == (0, 0)
    assert _state(led, aid).state is JobState.CANCELLED
    with led.session() as s:
        assert s.scalar(select(func.count()).select_from(ResultFile)) == 0
