"""The SQLite read that takes each attempt's texts once (campaign.results.by_attempt)
gives the general read's frame, value for value and dtype for dtype, on ledgers
built to break it: attempts whose rows differ in one shared value (device, gpu
model, job ID, cluster, params, a campaign id on a job row, threads, d), rows of attempts
interleaved by id, rows of another rank count, imported rows with and without a campaign, NULLs, JSON null
extras, every filter (campaign, cluster, usable states, dates, commit)."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import text

from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow
from campaign.results import by_attempt
from campaign.results.export import RowFilter, results_frame
from campaign.states import JobState
from tests.fixtures.ledger_rows import add_attempt, spec_with

STATES = (JobState.COMPLETED, JobState.COMPLETED, JobState.TIMEOUT, JobState.CHECK_FAILED, JobState.PROFILE_FAILED)
# One change to one row of an attempt: the kinds of row that must leave the by-attempt path.
MUTATIONS: tuple[dict[str, Any], ...] = (
    {"device": "gpu"}, {"gpu_model": "H200"}, {"job_id": "102"}, {"cluster": "anvil"}, {"dtype": None},
    {"extra": {"params": "tag=9"}}, {"extra": {"other": 1}}, {"extra": None}, {"source": "job2"},
    {"kernel": "gemm"}, {"impl": "torch"}, {"variant": "memopt"}, {"partition": "gpu"}, {"threads": 99},
    {"d": None}, {"d": 32}, {"extra": {"ranks": "4"}}, {"extra": {"nodes": "2", "ranks": "2"}},
)


def _ledger(tmp_path: Path, seed: int) -> Ledger:
    rng = random.Random(seed)
    led = Ledger(tmp_path / f"ledger{seed}.sqlite")
    attempts = []
    for i in range(14):
        state = STATES[i % len(STATES)]
        aid = add_attempt(led, tmp_path, state=state, campaign=("a", "b", "c")[i % 3],
                          spec=spec_with(threads=1 + i, n=(64, 128)))
        attempts.append(aid)
    with led.session.begin() as s:
        for i, aid in enumerate(attempts):
            att = s.get(JobAttempt, aid)
            assert att is not None
            att.started_at = datetime(2026, 11, 1 + i, 12, 0)
            att.alloc_cpus = 4 if i % 4 == 0 else None
            att.overlap = "101" if i % 5 == 1 else None
        imported = Campaign(name="imp", cluster="anvil", experiment="import", backend="import",
                            cluster_yaml="name: anvil\n", python="python3", created_at=datetime(2026, 12, 1),
                            workdir=str(tmp_path))
        s.add(imported)
        s.flush()
        rows: list[ResultRow] = []
        for i, aid in enumerate(attempts):
            base: dict[str, Any] = dict(attempt_id=aid, source="job", cluster="local", partition="local",
                                        kernel="attention_forward", impl="c", variant="naive", device="cpu",
                                        dtype="fp32" if i % 6 else None, threads=1 + i, d=16 if i % 7 else None,
                                        job_id=str(100 + i), gpu_model=None,
                                        extra={"params": f"tag={i % 3}", "first_call_s": 0.1,
                                               **({"ranks": "2"} if i % 5 == 2 else {})} if i % 4 else None)
            mutated = rng.random() < 0.5
            count = rng.randint(1, 12)
            for k in range(count):
                fields = dict(base, n=64 * 2 ** (k // 3), repeat=k % 3, time_s=rng.uniform(1e-6, 1e-2),
                              flops=rng.choice([None, 1e9]), bytes=None, rel_err=rng.choice([None, 1e-7]))
                if mutated and k == count - 1:
                    fields.update(rng.choice(MUTATIONS))
                rows.append(ResultRow(**fields))
        for k in range(rng.randint(0, 6)):
            rows.append(ResultRow(attempt_id=None, source="import:/x.csv", cluster="anvil", partition="wholenode",
                                  kernel="attention_forward", impl="c", variant="naive", device="cpu", dtype="fp32",
                                  threads=8, n=64, d=16, repeat=k, time_s=rng.uniform(1e-6, 1e-2), job_id=None,
                                  campaign_id=imported.id if k % 2 else None, extra={"params": "p=3"} if k % 3 else None))
        rng.shuffle(rows)  # an attempt's rows interleaved with others' by id
        s.add_all(rows)
        s.flush()
        # JSON null (not SQL NULL) in `extra`, as older importers wrote it
        s.execute(text("UPDATE result SET extra = 'null' WHERE id % 11 = 0"))
    return led


CASES: list[dict[str, Any]] = [
    {}, {"usable_only": True}, {"campaign": "a"}, {"campaign": ["b", "imp"], "usable_only": True},
    {"cluster": "anvil"}, {"cluster": "local", "usable_only": True}, {"campaign": "imp"}, {"campaign": "nothing"},
    {"where": RowFilter(since=datetime(2026, 11, 4), until=datetime(2026, 11, 10))}, {"where": RowFilter(commit="0")},
]


def _both(led: Ledger, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    new = results_frame(led, all_extras=False, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(by_attempt, "applies", lambda s: False)
        old = results_frame(led, all_extras=False, **kwargs)
    return new, old


@pytest.mark.parametrize("seed", range(6))
def test_frame_is_the_general_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    led = _ledger(tmp_path, seed)
    for kwargs in CASES:
        new, old = _both(led, monkeypatch, kwargs)
        assert list(new.columns) == list(old.columns), kwargs
        assert list(new.dtypes) == list(old.dtypes), kwargs
        pd.testing.assert_frame_equal(new, old, check_exact=True, obj=repr(kwargs))
    led.close()


def test_both_paths_of_the_read_are_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the seeds above, some attempts are read by attempt and some
    (mixed texts, imports) the general way: else the comparison proves little."""
    seen: dict[str, int] = {"mixed": 0, "uniform": 0}
    scan = by_attempt._scan

    def spy(*args: Any) -> Any:
        out = scan(*args)
        (_, aids, _), mixed = out
        seen["mixed"] += len(mixed)
        seen["uniform"] += len(set(aids.tolist()) - set(mixed.tolist()))
        return out

    monkeypatch.setattr(by_attempt, "_scan", spy)
    for seed in range(6):
        led = _ledger(tmp_path, seed)
        results_frame(led, all_extras=False)
        led.close()
    assert seen["mixed"] > 0 and seen["uniform"] > 0, seen


def test_the_whole_ledger_is_scanned_in_id_order(tmp_path: Path) -> None:
    """EXPLAIN QUERY PLAN: over every attempt the rows are scanned by id, the
    first-row table looked up by key, and nothing is sorted (ten million rows
    sorted back into id order would cost more than the read saves); blocks
    are looked up by the selected attempts."""
    led = _ledger(tmp_path, 0)
    with led.session() as s:
        firsts = by_attempt._first_rows(s, None, False, None)
        try:
            plans = []
            for stmt in (by_attempt.scan_statement(firsts, None, few=False),
                         by_attempt.scan_statement(firsts, None, few=True), by_attempt.blocks_statement(firsts, None)):
                compiled = stmt.compile(dialect=s.get_bind().dialect)
                raw = s.connection().connection.driver_connection
                plans.append(" | ".join(r[3] for r in raw.execute(f"EXPLAIN QUERY PLAN {compiled}",
                                                                   [compiled.params[k] for k in compiled.positiontup or ()])))
        finally:
            firsts.drop(s.connection())
    whole, few, blocks = plans
    assert whole.startswith("SCAN result") and "B-TREE" not in whole, whole
    assert "ix_result_attempt" in few and "ORDER BY" in few, few
    # the selected attempts drive the lookup of their blocks (never a scan of every block in the ledger)
    assert blocks.startswith("SCAN campaign_first_rows") and "SEARCH result_block USING INTEGER PRIMARY KEY" in blocks, \
        blocks
    led.close()
