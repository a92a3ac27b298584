"""A writer queued behind another writer's lock on an SQLite ledger stops as
soon as a signal handler raises (Ctrl-C's KeyboardInterrupt, the CLI's
SIGTERM handler), not when SQLite's busy wait ends a minute later; and at
the deadline it fails as it always did, "database is locked"."""

from __future__ import annotations

import signal
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from campaign.ledger import Ledger, transactions
from campaign.ledger.layout import BUSY_TIMEOUT_MS


class Interrupted(Exception):
    """What the test's SIGALRM handler raises, as Python's SIGINT handler raises KeyboardInterrupt."""


class Holder:
    """Another connection holding the ledger's write lock until `release()` (or, so that a wait
    that never returns still ends the test, until `hold_s` has passed)."""

    def __init__(self, path: Path, hold_s: float) -> None:
        self.con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.con.execute("BEGIN IMMEDIATE")
        self.released = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(hold_s,), daemon=True)
        self._thread.start()

    def _hold(self, hold_s: float) -> None:
        self._stop.wait(hold_s)
        self.con.execute("COMMIT")
        self.released.set()

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        self.con.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(tmp_path / "ledger.sqlite")
    try:
        yield led
    finally:
        led.engine.dispose()


def test_a_signal_stops_a_writer_waiting_for_the_lock(ledger: Ledger) -> None:
    def interrupt(_signum: int, _frame: object) -> None:
        raise Interrupted

    holder = Holder(ledger.path, hold_s=30)
    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)  # the writer below is waiting by then
        with pytest.raises(Interrupted), ledger.session.begin() as s:
            s.execute(text("SELECT 1"))
        # raised while the other writer still held the lock: the wait itself was stopped
        assert not holder.released.is_set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        holder.release()
    with ledger.session.begin() as s:  # the next writer gets the lock, with the whole busy timeout
        assert s.connection().exec_driver_sql("PRAGMA busy_timeout").scalar() == BUSY_TIMEOUT_MS


def test_a_lock_held_past_the_timeout_is_database_is_locked(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactions, "BUSY_TIMEOUT_MS", 400)
    holder = Holder(ledger.path, hold_s=30)
    try:
        with pytest.raises(OperationalError, match="database is locked"), ledger.session.begin() as s:
            s.execute(text("SELECT 1"))  # (a session takes its connection, and so the lock, at its first statement)
        assert not holder.released.is_set()
    finally:
        holder.release()
    with ledger.session.begin() as s:
        assert s.connection().exec_driver_sql("PRAGMA busy_timeout").scalar() == 400
