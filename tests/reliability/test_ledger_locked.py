"""A ledger whose SQLite file another process holds locked (an open `sqlite3`
shell in a transaction, a hung command on another node): after the busy
timeout, one line naming the ledger and why, exit 2, the ledger as it was.
`jobs --no-sync` waited twice as long first: its light read path
(campaign/ledger/sqlite_read.py) waited the whole timeout, stepped aside, and
the ORM path waited the whole timeout again. Real CLI over a real SQLite
file, the busy timeout cut to a few seconds for the test."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from campaign.ledger.layout import BUSY_TIMEOUT_MS
from tests.conftest import REPO, run_cli, sql_rows
from tests.fixtures import KNOWN_CSV

TIMEOUT_S = 5
# the CLI with the busy timeout cut to TIMEOUT_S (set before any module copies it)
CLI = (
    f"import sys; import campaign.ledger.layout as layout; layout.BUSY_TIMEOUT_MS = {TIMEOUT_S * 1000}; "
    "from campaign.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.serial  # it bounds the wait's wall time: alone, where no other worker's load stretches it
@pytest.mark.parametrize("command", [["jobs", "--no-sync"], ["status"]])
def test_a_ledger_locked_past_the_busy_timeout_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    assert BUSY_TIMEOUT_MS > TIMEOUT_S * 1000  # the cut is the test's, not the product's
    ledger = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV)).returncode == 0
    before = sql_rows(ledger, "SELECT count(*) FROM result")
    holder = sqlite3.connect(ledger, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-c", CLI, "--ledger", str(ledger), *command],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 2, proc.stderr
    assert took < 2 * TIMEOUT_S, f"{took:.1f} s: the busy timeout was waited out more than once"
    assert proc.stderr.splitlines() == [
        f"campaign: error: cannot open ledger {ledger}: database is locked (another process held it for "
        f"{TIMEOUT_S} s); run the command again once that one is done"
    ]
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    assert sql_rows(ledger, "SELECT count(*) FROM result") == before
