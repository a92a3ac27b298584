"""A sync reads and writes each ingest batch with the cyclic collector paused
(campaign/commands/sync.py: its full collections walked every batch's rows), and
turns it back on after each batch, also when a write fails."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from bench.finished_jobs import build
from campaign import api
from campaign.commands import sync as sync_module
from campaign.ledger import Ledger


def _finished(tmp_path: Path, jobs: int) -> Ledger:
    build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=jobs, rows_per_job=10)
    return Ledger(tmp_path / "ledger.sqlite")


def test_batches_are_written_with_the_collector_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led = _finished(tmp_path, 30)
    monkeypatch.setattr(sync_module, "INGEST_BATCH_ROWS", 100)
    write = sync_module._write
    seen: list[bool] = []

    def watched(*args: Any) -> None:
        seen.append(gc.isenabled())
        write(*args)

    monkeypatch.setattr(sync_module, "_write", watched)
    assert gc.isenabled()
    report = api.sync(led)
    assert report.ingested_rows == 300 and report.counts == {"COMPLETED": 30}
    assert seen == [False] * 3 and gc.isenabled()


def test_a_failed_batch_turns_the_collector_back_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led = _finished(tmp_path, 2)

    def failing(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(sync_module, "_write", failing)
    with pytest.raises(OSError, match="disk full"):
        api.sync(led)
    assert gc.isenabled()


def test_the_collector_stays_paused_until_the_last_thread_leaves_its_pause() -> None:
    """A sync pauses it on two threads at once (campaign.plumbing.pipeline): the first to
    leave must not turn it back on under the other's batch."""
    import threading

    from campaign.plumbing.gc_pause import gc_paused

    entered, leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with gc_paused():
            entered.set()
            leave.wait(timeout=60)
            seen.append(gc.isenabled())

    assert gc.isenabled()
    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        assert entered.wait(timeout=60)
    assert not gc.isenabled()  # this thread left; the other still holds its pause
    leave.set()
    thread.join(timeout=60)
    assert seen == [False] and gc.isenabled()
    gc.disable()  # turned off by the caller: left off after a pause
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
