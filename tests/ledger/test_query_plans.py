"""The queries behind `jobs`, `show` and `status` use indices: at 200,000
attempts and 10 million result rows (bench/bench_scale.py) a full scan of
job_attempt, run or result would cost seconds. Each statement those views
run is captured as executed and checked with EXPLAIN QUERY PLAN."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import event

from campaign.cli.views import job_rows, show_job
from campaign.commands.sync import _counts
from campaign.commands.sync_pending import collect
from campaign.ledger import Ledger
from campaign.ledger import queries as q
from tests.fixtures.ledger_rows import add_attempt, spec_with

BIG_TABLES = ("job_attempt", "run", "result")


def _ledger(tmp_path: Path) -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    for threads in range(1, 6):
        add_attempt(led, tmp_path / "runs", spec=spec_with(threads=threads), job_id=str(100 + threads))
    add_attempt(led, tmp_path / "runs", spec=spec_with(threads=9), campaign="other", job_id="200")
    return led


def _captured(led: Ledger, action: object) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []

    def record(conn: object, cursor: object, statement: str, params: object, context: object, many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, params))

    for engine in {id(led.reader): led.reader, id(led.engine): led.engine}.values():
        event.listen(engine, "before_cursor_execute", record)
    try:
        action()  # type: ignore[operator]
    finally:
        for engine in {id(led.reader): led.reader, id(led.engine): led.engine}.values():
            event.remove(engine, "before_cursor_execute", record)
    return seen


def _full_scans(path: Path, statements: list[tuple[str, object]]) -> list[str]:
    con = sqlite3.connect(path)
    try:
        bad = []
        for statement, params in statements:
            for row in con.execute("EXPLAIN QUERY PLAN " + statement, params):  # type: ignore[arg-type]
                detail = str(row[-1])
                if any(detail.startswith(f"SCAN {t}") for t in BIG_TABLES):
                    bad.append(f"{detail}  <-  {' '.join(statement.split())[:120]}")
        return bad
    finally:
        con.close()


def _status_reads(led: Ledger) -> None:
    with led.session() as s:
        camp = q.require_campaign(s, "unit")
        collect(s, "unit")
        _counts(s, camp.id)


@pytest.mark.parametrize("view", ["jobs", "show", "status"])
def test_view_queries_never_scan_a_big_table(tmp_path: Path, view: str) -> None:
    led = _ledger(tmp_path)
    actions = {"jobs": lambda: job_rows(led, "unit", None, all_attempts=False),
               "show": lambda: show_job(led, "103"),
               "status": lambda: _status_reads(led)}
    statements = _captured(led, actions[view])
    assert statements, "no SELECT captured: the check would pass vacuously"
    assert _full_scans(tmp_path / "ledger.sqlite", statements) == []


def test_jobs_query_count_does_not_grow_with_the_jobs(tmp_path: Path) -> None:
    """No query per printed row (N+1): 10,000 jobs must not mean 10,000 queries."""
    led = _ledger(tmp_path)
    few = len(_captured(led, lambda: job_rows(led, "unit", None, all_attempts=False)))
    for threads in range(10, 40):
        add_attempt(led, tmp_path / "runs", spec=spec_with(threads=threads), job_id=str(1000 + threads))
    rows: list[object] = []
    many = len(_captured(led, lambda: rows.extend(job_rows(led, "unit", None, all_attempts=False))))
    assert len(rows) == 35 and many == few


def test_the_check_sees_a_full_scan(tmp_path: Path) -> None:
    """The scan detector itself: a query on an unindexed column is caught."""
    led = _ledger(tmp_path)
    assert _full_scans(tmp_path / "ledger.sqlite", [("SELECT * FROM job_attempt WHERE node = ?", ("n1",))])
    led.close()


def _plans(path: Path, statements: list[tuple[str, object]]) -> list[list[str]]:
    con = sqlite3.connect(path)
    try:
        return [[str(row[-1]) for row in con.execute("EXPLAIN QUERY PLAN " + statement, params)]  # type: ignore[arg-type]
                for statement, params in statements]
    finally:
        con.close()


@pytest.mark.parametrize("made", ["new", "upgraded"])
def test_superseded_runs_are_grouped_in_the_index_order(tmp_path: Path, made: str) -> None:
    """The read that leaves out older builds (campaign.results.latest.find) groups every run by its
    configuration and identity: through ix_run_configuration (its spec entries read from the index, no
    sort), in a new ledger and in one that v15 upgraded; a missing index or a statement whose expression
    differs from the index's would parse 200,000 specs and sort them."""
    from campaign.results.latest import find
    from tests.ledger.make_version_fixtures import FIXTURES, copy_ledger

    if made == "new":
        led = _ledger(tmp_path)
    else:
        led = Ledger(copy_ledger(FIXTURES / "v14.sqlite", tmp_path / "ledger.sqlite"))
    with led.session() as s:
        statements = _captured(led, lambda: find(s, None, True, None))
    grouped = [plan for plan in _plans(tmp_path / "ledger.sqlite", statements)
               if any("ix_run_configuration" in step for step in plan)]
    assert grouped, statements
    assert not any("TEMP B-TREE FOR GROUP BY" in step for plan in grouped for step in plan), grouped
