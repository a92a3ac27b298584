"""Result blocks (campaign.ledger.blocks): each attempt's numbers packed at
ingest and read instead of its rows' cells. A read through them is the
general read, value for value and dtype for dtype, on rows inserted by the
real bulk INSERT with hostile numbers (NaN, -0.0, NULL, ints in float
columns, ints past 2**53, huge n) and attempts whose rows differ in a shared
value; a block stops being used when its rows change by any path; the blocks
an upgrade computes from stored rows are the bytes sync wrote."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import insert, text

from campaign.ledger import Ledger, ResultRow
from campaign.ledger.blocks import backfill
from campaign.results import by_attempt
from campaign.results.bulk import LedgerColumns, insert_results
from campaign.results.export import results_frame
from campaign.states import JobState
from tests.fixtures.ledger_rows import add_attempt, spec_with

FLOPS = (None, 1e9, 3, 2.5e-300, float("inf"), 0.0, -0.0, 2 ** 60)  # 2**60: not packed (past 2**53)
REL_ERR = (None, 1e-7, float("nan"), -0.0)
SHARED_CHANGES: tuple[dict[str, Any], ...] = (
    {"device": "gpu"}, {"gpu_model": "H200"}, {"job_id": "x"}, {"cluster": "anvil"}, {"threads": 99},
    {"d": None}, {"source": "job2"}, {"params": "tag=9"}, {"params": 3},
)
CASES: list[dict[str, Any]] = [{}, {"usable_only": True}, {"campaign": "a"}, {"cluster": "anvil"},
                               {"cluster": "local", "usable_only": True}]


def _columns(rng: random.Random, aid: int, i: int) -> tuple[LedgerColumns, bool]:
    """One job's rows as the sync path hands them to the INSERT; and whether
    they should get a block."""
    count = rng.randint(1, 9)
    base: dict[str, Any] = dict(attempt_id=aid, source="job", cluster=("local", "anvil")[i % 2], partition="cpu",
                                kernel="attention_forward", impl="c", variant="naive", device="cpu",
                                dtype=None if i % 5 == 0 else "fp32", threads=1 + i, d=None if i % 7 == 0 else 16,
                                job_id=str(100 + i), gpu_model=None, campaign_id=None)
    rows = []
    for k in range(count):
        rows.append(dict(base, n=rng.choice([64, 2 ** 40, 1]) * (k + 1), repeat=k,
                         time_s=rng.choice([rng.uniform(1e-6, 1e-2), -0.0, 0.0, 1.0, 5]),
                         flops=rng.choice(FLOPS), bytes=None, rel_err=rng.choice(REL_ERR),
                         natural_key=f"{aid}.{k}", params=f"tag={i % 3}" if i % 4 else None))
    changed = count > 1 and rng.random() < 0.3
    if changed:
        rows[-1].update(rng.choice(SHARED_CHANGES))
    unpackable = rng.random() < 0.15
    if unpackable:  # stored as SQLite's affinity makes it (2.5 stays REAL in n; '3' becomes 3): not packed
        rows[0].update(rng.choice(({"n": 2.5}, {"repeat": "3"})))
    extras: list[dict[str, Any] | None] = []
    for r in rows:
        params = r.pop("params")
        extras.append({"params": params, "first_call_s": 0.1} if params is not None else None)
    values = {c: [r[c] for r in rows] for c in rows[0]}
    return LedgerColumns(count, values, extra_rows=extras), not changed and not unpackable


def _ledger(tmp_path: Path, seed: int) -> tuple[Ledger, int]:
    rng = random.Random(seed)
    led = Ledger(tmp_path / f"blocks{seed}.sqlite")
    expected = 0
    jobs = []
    for i in range(16):
        state = (JobState.COMPLETED, JobState.CHECK_FAILED, JobState.TIMEOUT)[i % 3]
        aid = add_attempt(led, tmp_path, state=state, campaign=("a", "b")[i % 2], spec=spec_with(threads=1 + i))
        block, blocked = _columns(rng, aid, i)
        jobs.append(block)
        expected += blocked
    with led.session.begin() as s:
        insert_results(s, jobs[:10])
    with led.session.begin() as s:  # a second sync
        insert_results(s, jobs[10:])
        s.add(ResultRow(attempt_id=None, source="import:/x.csv", cluster="anvil", partition="wholenode",
                        kernel="attention_forward", impl="c", variant="naive", device="cpu", dtype="fp32",
                        threads=8, n=64, d=16, repeat=0, time_s=1e-3, job_id=None))
    return led, expected


def _blocks(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT * FROM result_block ORDER BY attempt_id").fetchall()
    finally:
        con.close()


def _same_as_general(led: Ledger, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every case read both ways, compared exactly; returns how many rows came from blocks."""
    used = 0
    real = by_attempt._blocks

    def spy(*args: Any) -> Any:
        nonlocal used
        out = real(*args)
        used += len(out[0])
        return out

    for kwargs in CASES:
        with monkeypatch.context() as m:
            m.setattr(by_attempt, "_blocks", spy)
            new = results_frame(led, all_extras=False, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(by_attempt, "applies", lambda s: False)
            old = results_frame(led, all_extras=False, **kwargs)
        assert list(new.dtypes) == list(old.dtypes), kwargs
        pd.testing.assert_frame_equal(new, old, check_exact=True, obj=repr(kwargs))
    return used


@pytest.mark.parametrize("seed", range(4))
def test_read_through_blocks_is_the_general_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    led, expected = _ledger(tmp_path, seed)
    stored = _blocks(led.path)
    assert len(stored) == expected and expected > 0
    assert _same_as_general(led, monkeypatch) > 0
    led.close()


def test_upgrade_computes_the_blocks_sync_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks dropped and the ledger labelled v10: opening it runs v11, whose
    blocks from the stored rows are byte for byte the ingest's (plus those of
    attempts the ingest declined only for a value SQLite stored as a number,
    such as a repeat of '3'), and the read through them is the general read."""
    for seed in range(3):
        led, _ = _ledger(tmp_path, seed)
        path = led.path
        led.close()
        written = {row[0]: row for row in _blocks(path)}
        con = sqlite3.connect(path)
        con.execute("DROP TABLE result_block")
        con.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
        con.execute("UPDATE alembic_version SET version_num = 'v10'")
        con.commit()
        con.close()
        upgraded = Ledger(path)
        assert len(upgraded.notes) == 1, upgraded.notes  # the upgrade said so
        computed = {row[0]: row for row in _blocks(path)}
        assert written and set(written) <= set(computed)
        assert all(computed[a] == row for a, row in written.items())
        assert _same_as_general(upgraded, monkeypatch) > 0
        con = sqlite3.connect(path)
        assert backfill(con) == 0  # every attempt that can have one has one
        con.close()
        upgraded.close()


def test_a_block_whose_rows_changed_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led, _ = _ledger(tmp_path, 0)
    blocked = [row[0] for row in _blocks(led.path)]
    first, second, third = blocked[:3]
    with led.session.begin() as s:  # a row added later (another path): the block stays, its count no longer fits
        s.execute(insert(ResultRow), [dict(attempt_id=first, source="job", cluster="local", partition="cpu",
                                           kernel="attention_forward", impl="c", variant="naive", device="cpu",
                                           dtype="fp32", threads=1, n=7, d=16, repeat=9, time_s=2.0,
                                           job_id="100", natural_key="late")])
        s.execute(text("UPDATE result SET time_s = time_s * 2 WHERE id = (SELECT max(id) FROM result "
                       "WHERE attempt_id = :a)"), {"a": second})
        s.execute(text("DELETE FROM result WHERE id = (SELECT min(id) FROM result WHERE attempt_id = :a)"),
                  {"a": third})
    left = {row[0] for row in _blocks(led.path)}
    assert first in left and second not in left and third not in left
    assert _same_as_general(led, monkeypatch) > 0
    led.close()


def test_a_job_past_the_block_size_is_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job of more rows than a block holds gets none (at ingest and on upgrade) and reads as the rows."""
    from campaign.ledger import blocks

    monkeypatch.setattr(blocks, "MAX_ROWS", 3)
    led = Ledger(tmp_path / "big.sqlite")
    aid = add_attempt(led, tmp_path, state=JobState.COMPLETED)
    rows = [dict(attempt_id=aid, source="job", cluster="local", partition="cpu", kernel="attention_forward",
                 impl="c", variant="naive", device="cpu", dtype="fp32", threads=2, n=64 * (k + 1), d=16, repeat=0,
                 time_s=1e-3 * (k + 1), job_id="101", gpu_model=None, campaign_id=None, natural_key=f"k{k}")
            for k in range(5)]
    with led.session.begin() as s:
        insert_results(s, [LedgerColumns(5, {c: [r[c] for r in rows] for c in rows[0]})])
    assert _blocks(led.path) == []
    con = sqlite3.connect(led.path)
    assert backfill(con) == 0
    con.close()
    frame = results_frame(led, all_extras=False)
    assert frame["time_s"].tolist() == [r["time_s"] for r in rows]
    assert _same_as_general(led, monkeypatch) == 0
    led.close()


def test_sync_writes_a_block_per_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real path: `campaign status` syncing finished local jobs' CSVs
    stores one block per job, and the report's read through them is the
    general read."""
    from bench.finished_jobs import build
    from campaign import api

    facts = build(tmp_path / "synced.sqlite", tmp_path / "runs", jobs=40, rows_per_job=25)
    led = Ledger(tmp_path / "synced.sqlite")
    report = api.sync(led)
    assert report.ingested_rows == facts["rows"] == 40 * 25
    stored = _blocks(led.path)
    assert len(stored) == 40 and all(row[2] == 25 for row in stored)
    assert _same_as_general(led, monkeypatch) > 0
    led.close()
