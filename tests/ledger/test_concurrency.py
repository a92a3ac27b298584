"""Several `campaign` processes on one ledger at once: no "database is
locked", no lost write. Real processes, a real SQLite file, the installed CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from campaign.ledger import Ledger
from campaign.ledger.models import SCHEMA_VERSION
from campaign.plumbing.errors import LedgerError
from tests.conftest import CAMPAIGN, REPO, run_cli, sql_rows
from tests.fixtures import KNOWN_CSV

WORKER = Path(__file__).resolve().parent / "ledger_worker.py"
KNOWN = KNOWN_CSV
KNOWN_ROWS = len(KNOWN.read_text().splitlines()) - 1


def _count(path: Path, where: str = "1") -> int:
    """import_file rows (what ledger_worker.py writes)."""
    con = sqlite3.connect(path)
    try:
        return int(con.execute(f"SELECT count(*) FROM import_file WHERE {where}").fetchone()[0])
    finally:
        con.close()


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )


def _wait_created(path: Path, timeout: float = 120) -> None:
    """Until a writer has created the ledger (its schema version stored): read-only, so
    the wait itself creates nothing."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            try:
                if con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone():
                    return
            finally:
                con.close()
        except sqlite3.Error:
            pass  # not there yet
        time.sleep(0.05)
    raise AssertionError(f"no writer created {path} in {timeout} s")


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> dict[str, float]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0 and err == "", err
    return json.loads(out)


def test_parallel_short_writers_lose_nothing(tmp_path: Path) -> None:
    """6 processes x 150 one-row transactions, started together on a new ledger
    (so they also race to create it), plus 2 readers."""
    ledger = tmp_path / "ledger.sqlite"
    stop = tmp_path / "writers-done"
    writers = [_spawn("write", str(ledger), str(w), "150") for w in range(6)]
    _wait_created(ledger)  # a writer made the ledger: read while the others write
    readers = [_spawn("read", str(ledger), "4", str(stop)) for _ in range(2)]
    stats = [_finish(p) for p in writers]
    stop.touch()  # the readers stop here (or at 4 s) rather than read on alone
    reads = [_finish(p) for p in readers]
    assert sum(s["written"] for s in stats) == 900
    assert _count(ledger) == 900
    for w in range(6):
        assert _count(ledger, f"path = 'worker:{w}'") == 150
    assert all(r["reads"] > 0 for r in reads)
    assert not Path(f"{ledger}-wal").exists()  # DELETE journal by default, not WAL
    print(
        f"slowest write {max(s['slowest_s'] for s in stats):.3f} s, "
        f"slowest read {max(r['slowest_s'] for r in reads):.3f} s, reads {sum(r['reads'] for r in reads)}"
    )


def _csv(path: Path, tag: int) -> Path:
    """known_results.csv with its times scaled, so each file is distinct."""
    lines = KNOWN.read_text().splitlines()
    head = lines[0].split(",")
    t = head.index("time_s")
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[t] = repr(float(cells[t]) * (1 + tag / 1000))
        out.append(",".join(cells))
    path.write_text("\n".join(out) + "\n")
    return path


def test_parallel_cli_imports_with_readers(tmp_path: Path) -> None:
    """4 `campaign import` loops and 2 loops of `results --format json` /
    `report --json`, all through the installed CLI at once: exact row count,
    nothing on stderr, every exit 0."""
    ledger = tmp_path / "ledger.sqlite"
    files_per_writer = 3  # 12 imports, 4 at once, beside 2 reader loops: each overlaps the others
    script = tmp_path / "loop.sh"
    script.write_text(
        "#!/bin/bash\n"  # one shell per writer/reader: the processes overlap for real
        "set -u\nmode=$1; shift\n"
        'if [ "$mode" = write ]; then for f in "$@"; do "$CAMPAIGN" --ledger "$LEDGER" import "$f" >/dev/null || exit 1; done\n'
        # readers: at least once, then until the writers are done (STOP) or $1 seconds pass
        "else end=$((SECONDS + $1)); while :; do\n"
        '  "$CAMPAIGN" --ledger "$LEDGER" results --format json >/dev/null || exit 1\n'
        '  "$CAMPAIGN" --ledger "$LEDGER" report --json >/dev/null || exit 1\n'
        '  [ -e "$STOP" ] || [ $SECONDS -ge $end ] && break; done; fi\n'
    )
    stop = tmp_path / "writers-done"
    env = {
        "CAMPAIGN": str(CAMPAIGN),
        "LEDGER": str(ledger),
        "PATH": "/usr/bin:/bin",
        "STOP": str(stop),
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }  # (a worktree's code, where given)
    run_cli("--ledger", str(ledger), "import", str(_csv(tmp_path / "seed.csv", 999)))  # readers need a ledger
    writers = []
    for w in range(4):
        files = [str(_csv(tmp_path / f"w{w}-{i}.csv", w * 10 + i)) for i in range(files_per_writer)]
        writers.append(
            subprocess.Popen(
                ["bash", str(script), "write", *files],
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    readers = [
        subprocess.Popen(
            ["bash", str(script), "read", "20"], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for p in writers:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and err == "", err
    stop.touch()  # reading on alone would prove nothing (and cost the suite CPU)
    for p in readers:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and err == "", err
    assert sql_rows(ledger, "SELECT count(*) FROM result") == [((4 * files_per_writer + 1) * KNOWN_ROWS,)]
    proc = run_cli("--ledger", str(ledger), "results", "--format", "json")
    assert proc.returncode == 0 and proc.stderr == ""
    rows = json.loads(proc.stdout)
    assert len(rows) == (4 * files_per_writer + 1) * KNOWN_ROWS
    assert len({r["source"] for r in rows}) == 4 * files_per_writer + 1  # no file twice, none missing


@pytest.mark.serial  # wall-clock bounds: run alone, not beside other workers
def test_readers_do_not_block_writers_for_long(tmp_path: Path) -> None:
    """Two processes re-reading a 20,000-row ledger back to back; a writer's
    short transactions still each get through within a couple of seconds."""
    ledger = tmp_path / "ledger.sqlite"
    led = Ledger(ledger)
    with led.session.begin() as s:
        s.execute(
            text(
                "INSERT INTO import_file (fingerprint, path, rows, imported_at) "
                "VALUES (:n, 'seed', 1, '2026-12-01 00:00:00')"
            ),
            [{"n": str(i)} for i in range(20_000)],
        )
    led.close()
    stop = tmp_path / "writer-done"
    readers = [_spawn("read", str(ledger), "8", str(stop)) for _ in range(2)]
    time.sleep(1.0)
    writer = _finish(_spawn("write", str(ledger), "w", "40"))
    stop.touch()  # the readers stop here (or at 8 s): the write is what this measures
    reads = [_finish(p) for p in readers]
    assert _count(ledger) == 20_040
    slowest_read = max(r["slowest_s"] for r in reads)
    print(f"slowest write {writer['slowest_s']:.3f} s while readers took up to {slowest_read:.3f} s per read")
    # A writer waits at most for the reads in progress (BEGIN IMMEDIATE queues
    # them all), never for the busy timeout.
    assert writer["slowest_s"] < 3 * slowest_read + 1.0


def test_journal_mode_delete_by_default_wal_opt_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led = Ledger(tmp_path / "a.sqlite")
    with led.session() as s:
        assert s.execute(text("PRAGMA journal_mode")).scalar() == "delete"
        assert s.execute(text("PRAGMA busy_timeout")).scalar() == 60_000
    led.close()
    monkeypatch.setenv("CAMPAIGN_JOURNAL_MODE", "wal")
    led = Ledger(tmp_path / "b.sqlite")
    with led.session() as s:
        assert s.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    led.close()
    monkeypatch.setenv("CAMPAIGN_JOURNAL_MODE", "memory")
    with pytest.raises(LedgerError, match="CAMPAIGN_JOURNAL_MODE"):
        Ledger(tmp_path / "c.sqlite")


@pytest.mark.serial  # wall-clock bounds: run alone, not beside other workers
def test_plain_sessions_read_without_the_write_lock(tmp_path: Path) -> None:
    """session() reads beside a writer holding the lock; session.begin()
    waits for that writer (busy timeout) instead of failing."""
    import threading

    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta VALUES ('other', 'x')")
    t0 = time.perf_counter()
    with led.session() as s:
        assert s.get_bind() is led.reader
        assert s.execute(text("SELECT count(*) FROM import_file")).scalar() == 0
    assert time.perf_counter() - t0 < 1.0
    threading.Timer(1.0, other.execute, args=("COMMIT",)).start()
    t0 = time.perf_counter()
    with led.session.begin() as s:
        assert s.get_bind() is led.engine
        s.execute(text("INSERT INTO meta VALUES ('mine', 'y')"))
    assert time.perf_counter() - t0 >= 0.9
    other.close()
    con = sqlite3.connect(path)
    assert dict(con.execute("SELECT key, value FROM meta").fetchall()) == {
        "schema_version": str(SCHEMA_VERSION),
        "other": "x",
        "mine": "y",
    }
    con.close()
