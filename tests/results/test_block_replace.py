"""A result block whose rows were replaced in place is not served (issue 24, item 9).

SQLite's REPLACE deletes the conflicting row without firing the delete trigger (recursive_triggers
is off by default, as in the sqlite3 shell), and the new row takes the old id: the block's ids
still span the attempt's rows. The read compares each block with its rows' count, sums, minima
and maxima (computed by SQLite) and scans the rows of a block that no longer fits. (Sums are compared within 1e-12 of the sum of
magnitudes, so a value changed in its 13th significant digit and neither the minimum nor the
maximum may go unseen; campaign's own connections turn recursive_triggers on, so a REPLACE through
them drops the block exactly.)"""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path
from typing import Any

import pytest

from campaign.ledger import Ledger
from campaign.results.bulk import LedgerColumns, insert_results
from campaign.results.export import results_frame
from campaign.states import JobState
from tests.conftest import run_cli
from tests.fixtures.ledger_rows import add_attempt, spec_with
from tests.results.test_blocks import _blocks, _ledger, _same_as_general

TIMES = (8.25e-5, 9.8e-5, 1.40e-4)


def _job(led: Ledger, tmp_path: Path, threads: int, times: tuple[float, ...]) -> int:
    aid = add_attempt(led, tmp_path, state=JobState.COMPLETED, spec=spec_with(threads=threads))
    rows: dict[str, list[Any]] = {
        "attempt_id": [aid] * len(times), "source": ["job"] * len(times), "cluster": ["local"] * len(times),
        "partition": ["cpu"] * len(times), "kernel": ["attention_forward"] * len(times), "impl": ["c"] * len(times),
        "variant": ["naive"] * len(times), "device": ["cpu"] * len(times), "dtype": ["fp32"] * len(times),
        "threads": [threads] * len(times), "n": [256] * len(times), "d": [64] * len(times),
        "repeat": list(range(len(times))), "time_s": list(times), "job_id": ["101"] * len(times),
        "gpu_model": [None] * len(times), "campaign_id": [None] * len(times),
        "natural_key": [f"{aid}.{k}" for k in range(len(times))]}
    with led.session.begin() as s:
        insert_results(s, [LedgerColumns(len(times), rows)])
    return aid


def _replace(path: Path, row_id: int, **changes: Any) -> None:
    """REPLACE from a plain sqlite3 connection (recursive_triggers off, as any other tool has it)."""
    con = sqlite3.connect(path)
    cur = con.execute("SELECT * FROM result WHERE id = ?", (row_id,))
    names = [d[0] for d in cur.description]
    row = dict(zip(names, cur.fetchone(), strict=True))
    row.update(changes)
    assert con.execute("PRAGMA recursive_triggers").fetchone() == (0,)
    con.execute(f"REPLACE INTO result ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [row[n] for n in names])
    con.commit()
    con.close()


def test_report_after_replace_shows_the_rows_median(tmp_path: Path) -> None:
    """The issue's case: rows [8.25e-5, 9.8e-5, 1.40e-4], the middle one replaced by 1000."""
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    aid = _job(led, tmp_path, 1, TIMES)
    led.close()
    ids = [r[0] for r in sqlite3.connect(path).execute("SELECT id FROM result WHERE attempt_id = ? ORDER BY id",
                                                       (aid,))]
    assert [b[0] for b in _blocks(path)] == [aid]
    _replace(path, ids[1], time_s=1000.0)
    assert [b[0] for b in _blocks(path)] == [aid]  # the trigger did not fire: the block is still there
    proc = run_cli("--ledger", str(path), "report", "--json", "--campaign", "unit")
    assert proc.returncode == 0, proc.stderr
    [point] = json.loads(proc.stdout)["roofline"]
    assert point["median_s"] == statistics.median([TIMES[0], 1000.0, TIMES[2]])


@pytest.mark.parametrize("change", [
    {"time_s": 1000.0}, {"time_s": 9.8e-5 * (1 + 1e-9)}, {"n": 512}, {"repeat": 7}, {"flops": 1e9},
    {"rel_err": 0.5}, {"time_s": 8.25e-5},  # the last: the middle value becomes a copy of the minimum
])
def test_replaced_row_is_read_as_stored(tmp_path: Path, change: dict[str, Any]) -> None:
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    aid = _job(led, tmp_path, 1, TIMES)
    middle = sqlite3.connect(path).execute("SELECT id FROM result WHERE attempt_id = ? ORDER BY id LIMIT 1 OFFSET 1",
                                           (aid,)).fetchone()[0]
    _replace(path, middle, **change)
    frame = results_frame(led, all_extras=False)
    [(column, value)] = change.items()
    assert frame[column].tolist()[1] == value
    led.close()


def test_row_moved_to_another_attempt_under_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A middle row REPLACEd into another attempt: the first attempt's ids still start and end where
    its block says, one fewer row between them."""
    led, _ = _ledger(tmp_path, 1)
    con = sqlite3.connect(led.path)
    blocked = [a for (a,) in con.execute("SELECT attempt_id FROM result_block WHERE rows >= 3 ORDER BY attempt_id")]
    other = [a for (a,) in con.execute("SELECT id FROM job_attempt WHERE id != ? ORDER BY id", (blocked[0],))][0]
    middle = con.execute("SELECT id FROM result WHERE attempt_id = ? ORDER BY id LIMIT 1 OFFSET 1",
                         (blocked[0],)).fetchone()[0]
    con.close()
    _replace(led.path, middle, attempt_id=other)
    assert blocked[0] in {b[0] for b in _blocks(led.path)}
    assert _same_as_general(led, monkeypatch) > 0  # every case equals the general read; other blocks still used
    led.close()


@pytest.mark.parametrize("seed", range(2))
def test_many_replaced_rows_read_as_the_general_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     seed: int) -> None:
    led, _ = _ledger(tmp_path, seed)
    con = sqlite3.connect(led.path)
    ids = [i for (i,) in con.execute("SELECT id FROM result WHERE attempt_id IS NOT NULL ORDER BY id")]
    con.close()
    for k, row_id in enumerate(ids[::5]):
        _replace(led.path, row_id, time_s=float(k + 1), repeat=100 + k)
    assert _same_as_general(led, monkeypatch) >= 0
    led.close()


def test_replace_through_campaign_connections_drops_the_block(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    aid = _job(led, tmp_path, 1, TIMES)
    with led.engine.begin() as conn:
        raw: Any = conn.connection.dbapi_connection
        assert raw.execute("PRAGMA recursive_triggers").fetchone() == (1,)
        conn.exec_driver_sql("REPLACE INTO result SELECT * FROM result WHERE attempt_id = ? LIMIT 1", (aid,))
    assert _blocks(path) == []
    led.close()
