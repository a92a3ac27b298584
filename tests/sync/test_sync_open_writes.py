"""How sync writes open attempts at scale (campaign/commands/sync.py, ledger/queries.py):
stored values compared without SQLAlchemy's result processors, only changed
columns written, attempts given the same values written by shared statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import event

from campaign.backends.base import JobStatus
from campaign.commands.sync import _apply, _unchanged
from campaign.commands.sync_pending import collect
from campaign.ledger import ATTEMPT_TABLE, RUN_TABLE, JobAttempt, Ledger
from campaign.ledger import queries as q
from campaign.ledger.queries import _processors
from campaign.plumbing.states import JobState
from tests.fixtures.ledger_rows import add_attempt, spec_with


def _attempts(led: Ledger, runs: Path, count: int) -> list[int]:
    return [add_attempt(led, runs, spec=spec_with(d=16 + i)) for i in range(count)]


def _updates(led: Ledger) -> list[str]:
    seen: list[str] = []
    event.listen(led.engine, "before_cursor_execute",
                 lambda *a: seen.append(a[2]) if a[2].lstrip().upper().startswith("UPDATE") else None)
    return seen


def test_same_reason_is_one_statement_and_only_the_changed_column(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    ids = _attempts(led, tmp_path / "runs", 5)
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    statuses = {aid: JobStatus(JobState.PENDING, reason="BeginTime") for aid in ids}
    assert not any(_unchanged(p, statuses[p.attempt_id]) for p in pending)
    sql = _updates(led)
    with led.session.begin() as s:
        changed, rows = _apply(s, pending, statuses, {}, camps)
    assert (changed, rows) == (0, 0)  # no state changed
    assert len(sql) == 1 and "reason" in sql[0] and "state" not in sql[0].split("WHERE")[0]
    with led.session() as s:
        assert {a.reason for a in s.query(JobAttempt)} == {"BeginTime"}


def test_started_time_compares_as_an_instant(tmp_path: Path) -> None:
    """A stored start (text on SQLite) equal to the scheduler's (aware, other zone) is no change."""
    led = Ledger(tmp_path / "ledger.sqlite")
    (aid,) = _attempts(led, tmp_path / "runs", 1)
    start = datetime(2026, 12, 1, 12, 1, 2, 345, tzinfo=UTC)
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    with led.session.begin() as s:
        assert _apply(s, pending, {aid: JobStatus(JobState.RUNNING, node="n1", started_at=start)}, {}, camps) == (1, 0)
    with led.session() as s:
        _, pending, _ = collect(s, "unit")
    assert isinstance(pending[0].seen[4], str)  # the driver's own value, no result processor
    elsewhere = start.astimezone(timezone(timedelta(hours=5)))
    assert _unchanged(pending[0], JobStatus(JobState.RUNNING, node="n1", started_at=elsewhere))
    assert not _unchanged(pending[0], JobStatus(JobState.RUNNING, node="n1", started_at=start + timedelta(seconds=1)))


def test_stored_rows_and_update_same(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    ids = _attempts(led, tmp_path / "runs", 3)
    with led.session.begin() as s:
        q.update_same(s, ATTEMPT_TABLE, {"state": JobState.RUNNING, "node": "n7"}, ids[:2], chunk=1)
    with led.session() as s:
        got = q.stored_rows(s, ATTEMPT_TABLE, ("state", "node"), ids, chunk=2)
    assert got == {ids[0]: ("RUNNING", "n7"), ids[1]: ("RUNNING", "n7"), ids[2]: ("PENDING", None)}
    assert q.stored_equal("RUNNING", JobState.RUNNING) and not q.stored_equal("PENDING", JobState.RUNNING)


def test_json_columns_write_the_column_processors_text(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    dialect = led.engine.dialect
    for table, column in ((RUN_TABLE, "spec"), (ATTEMPT_TABLE, "n"), (ATTEMPT_TABLE, "missing_n")):
        ((_, fast, _),) = _processors(table, [column], dialect)
        own = table.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        for value in ({"a": [1, True, 1.0, None, "ü\n"], "b": {"z": 1, "a": 2}}, [3, 4], [], None):
            assert fast(value) == own(value), (column, value)
