"""`jobs --no-sync` and `show --no-sync` read an SQLite ledger with the
standard library (campaign/ledger/sqlite_read.py) and must print exactly what
the ORM path prints; for anything it was not written for they step aside
(None) and the ORM path answers, errors included. The facts both sides share
(schema version, default path, the jobs SQL) are one module's,
campaign/ledger/layout.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from campaign.cli import views
from campaign.ledger import Ledger, layout
from campaign.ledger import sqlite_read as ledger_read
from campaign.ledger.db import default_ledger_path
from campaign.ledger.models import SCHEMA_VERSION
from tests.cli.conftest import FAKE_ENV
from tests.conftest import run_cli, sql_rows


def job_rows(ledger: Path, campaign: str | None, state: str | None, *, all_attempts: bool) -> list[list[Any]] | None:
    """The light path's listing, its pages joined (None: it stepped aside)."""
    batches = ledger_read.job_batches(ledger, campaign, state, all_attempts=all_attempts)
    return None if batches is None else [row for batch in batches for row in batch]


@pytest.fixture(scope="module")
def rerun_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real campaigns on the local backend, one with rerun attempts."""
    work = tmp_path_factory.mktemp("ledger_read")
    led = str(work / "ledger.sqlite")
    for name, variants in (("mixed", "ok,exit3,badcheck"), ("other", "ok,exit3")):
        proc = run_cli("--ledger", led, "submit", "experiment=failures", f"experiment.sweeps.0.variants=[{variants}]",
                       f"campaign.name={name}", cwd=work, env=FAKE_ENV)
        assert proc.returncode in (0, 3), proc.stderr
    proc = run_cli("--ledger", led, "rerun", "mixed", "--failed", cwd=work, env=FAKE_ENV)
    assert proc.returncode in (0, 3), proc.stderr
    return Path(led)


@pytest.mark.parametrize("campaign", [None, "mixed", "other"])
@pytest.mark.parametrize("state", [None, "FAILED", "completed", "CHECK_FAILED", "PENDING"])
@pytest.mark.parametrize("all_attempts", [False, True])
def test_same_rows_as_the_orm_path(rerun_ledger: Path, campaign: str | None, state: str | None,
                                   all_attempts: bool) -> None:
    fast = job_rows(rerun_ledger, campaign, state, all_attempts=all_attempts)
    orm = views.job_rows(Ledger(rerun_ledger, create=False), campaign, state, all_attempts=all_attempts)
    assert fast is not None and fast == orm


@pytest.mark.parametrize("all_attempts", [False, True])
def test_pages_of_one_row_give_the_same_listing(rerun_ledger: Path, all_attempts: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing a page at a time: pages of one and two rows (each its own
    statement after the last attempt id) give every row once, in order."""
    whole = views.job_rows(Ledger(rerun_ledger, create=False), None, None, all_attempts=all_attempts)
    monkeypatch.setattr(ledger_read, "FIRST_PAGE", 1)
    monkeypatch.setattr(ledger_read, "LAST_PAGE", 2)
    batches = ledger_read.job_batches(rerun_ledger, None, None, all_attempts=all_attempts)
    assert batches is not None
    pages = list(batches)
    assert [len(p) for p in pages[:2]] == [1, 2] and len(pages) >= len(whole) // 2
    assert [row for page in pages for row in page] == whole


def test_the_rerun_ledger_has_what_the_comparison_needs(rerun_ledger: Path) -> None:
    every = job_rows(rerun_ledger, None, None, all_attempts=True)
    latest = job_rows(rerun_ledger, None, None, all_attempts=False)
    assert every and latest and len(every) > len(latest)  # reruns: earlier attempts exist


def test_cli_prints_the_same_either_way(rerun_ledger: Path, tmp_path: Path) -> None:
    fast = run_cli("--ledger", str(rerun_ledger), "jobs", "--no-sync", "--all-attempts", "--format", "json",
                   cwd=tmp_path, env=FAKE_ENV)
    synced = run_cli("--ledger", str(rerun_ledger), "jobs", "--all-attempts", "--format", "json", cwd=tmp_path,
                     env=FAKE_ENV)  # the ORM path (finished local jobs: the sync changes nothing)
    assert fast.returncode == synced.returncode == 0
    assert json.loads(fast.stdout) == json.loads(synced.stdout)


def test_hostile_file_names(rerun_ledger: Path, tmp_path: Path) -> None:
    """The file name goes into an sqlite3 URI: ?, #, % and spaces must not change which file is read."""
    odd = tmp_path / "a b?mode=rwc#x%41.sqlite"
    shutil.copy(rerun_ledger, odd)
    assert job_rows(odd, None, None, all_attempts=True) == \
        job_rows(rerun_ledger, None, None, all_attempts=True)
    assert job_rows(tmp_path / "a b", None, None, all_attempts=True) is None  # no such file
    assert not (tmp_path / "a b").exists()  # read-only: nothing created


def test_one_definition_of_the_ledgers_facts() -> None:
    """The ORM side and the sqlite3 reader take the schema version, the busy
    timeout and the default path from layout: none is written twice."""
    import campaign.ledger.db as db
    import campaign.ledger.models as models

    assert models.SCHEMA_VERSION is layout.SCHEMA_VERSION and db.SCHEMA_VERSION is layout.SCHEMA_VERSION
    assert db.default_ledger_path is layout.default_ledger_path and db.BUSY_TIMEOUT_MS is layout.BUSY_TIMEOUT_MS
    assert views.JOB_COLUMNS is layout.JOB_COLUMNS is ledger_read.JOB_COLUMNS
    for module in (ledger_read, views):  # neither spells a version, a timeout or the jobs SQL of its own
        source = Path(module.__file__ or "").read_text()
        assert "SCHEMA_VERSION =" not in source and "60_000" not in source and "max(attempt)" not in source


@pytest.mark.parametrize("env", [{}, {"CAMPAIGN_LEDGER": "/x/l.sqlite"}, {"XDG_DATA_HOME": "/data"},
                                 {"CAMPAIGN_LEDGER": "", "XDG_DATA_HOME": "/data"}])
def test_default_ledger_is_the_ledgers(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("CAMPAIGN_LEDGER", "XDG_DATA_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert ledger_read.ledger_file(None) == default_ledger_path()


def test_steps_aside_for_what_it_was_not_written_for(rerun_ledger: Path, tmp_path: Path) -> None:
    assert job_rows(Path("postgresql+psycopg://u@h/db"), None, None, all_attempts=False) is None
    assert job_rows(tmp_path / "missing.sqlite", None, None, all_attempts=False) is None
    assert job_rows(rerun_ledger, "nosuch", None, all_attempts=False) is None
    assert job_rows(rerun_ledger, None, "NOSUCH", all_attempts=False) is None
    older = tmp_path / "older.sqlite"
    shutil.copy(rerun_ledger, older)
    sql_rows(older, f"UPDATE meta SET value = '{SCHEMA_VERSION - 1}' WHERE key = 'schema_version'")
    assert job_rows(older, None, None, all_attempts=False) is None
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database" * 100)
    assert job_rows(garbage, None, None, all_attempts=False) is None


def _job_ids(led: Path) -> list[str]:
    return [str(r[0]) for r in sql_rows(led, "SELECT job_id FROM job_attempt WHERE job_id IS NOT NULL")]


def test_show_facts_are_the_orms(rerun_ledger: Path) -> None:
    """Every job ID of the ledger (reruns: lineages of two attempts; the
    failures campaign's chain steps): the same facts either way."""
    ids = _job_ids(rerun_ledger)
    assert len(ids) >= 5
    orm = Ledger(rerun_ledger, create=False)
    for job_id in ids:
        fast = ledger_read.show_facts(rerun_ledger, job_id)
        assert fast is not None and fast == views.show_facts(orm, job_id), job_id
    assert any(len(f.lineage) > 1 for f in (ledger_read.show_facts(rerun_ledger, j) for j in ids) if f)


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_show_prints_the_same_either_way(fmt: str, rerun_ledger: Path, tmp_path: Path) -> None:
    for job_id in _job_ids(rerun_ledger)[:3]:
        fast = run_cli("--ledger", str(rerun_ledger), "show", job_id, "--no-sync", "--format", fmt, cwd=tmp_path,
                       env=FAKE_ENV)
        synced = run_cli("--ledger", str(rerun_ledger), "show", job_id, "--format", fmt, cwd=tmp_path, env=FAKE_ENV)
        assert fast.returncode == synced.returncode == 0, fast.stderr + synced.stderr
        assert fast.stdout == synced.stdout and fast.stdout.strip()


def test_show_steps_aside(rerun_ledger: Path, tmp_path: Path) -> None:
    assert ledger_read.show_facts(rerun_ledger, "404404") is None
    assert ledger_read.show_facts(Path("postgresql+psycopg://u@h/db"), "1") is None
    older = tmp_path / "older.sqlite"
    shutil.copy(rerun_ledger, older)
    sql_rows(older, f"UPDATE meta SET value = '{SCHEMA_VERSION - 1}' WHERE key = 'schema_version'")
    assert ledger_read.show_facts(older, _job_ids(rerun_ledger)[0]) is None
    proc = run_cli("--ledger", str(rerun_ledger), "show", "404404", "--no-sync", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown job ID '404404'" in proc.stderr, proc.stderr


@pytest.mark.parametrize(("argv", "said"), [
    (["--campaign", "mixd"], "did you mean 'mixed'?"),
    (["--state", "DONE"], "unknown state 'DONE'"),
])
def test_errors_still_come_from_the_orm_path(argv: list[str], said: str, rerun_ledger: Path, tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(rerun_ledger), "jobs", "--no-sync", *argv, cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr


def test_a_missing_ledger_is_the_same_error(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "none.sqlite"), "jobs", "--no-sync", cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_a_writer_killed_mid_transaction_is_never_read_half_done(rerun_ledger: Path, tmp_path: Path) -> None:
    """A hot journal (a writer killed inside its transaction, pages already
    spilled to the file): the read-only reader must not read the half-written
    file; it steps aside and the ORM path rolls the journal back."""
    import subprocess
    import sys

    led = tmp_path / "crashed.sqlite"
    shutil.copy(rerun_ledger, led)
    committed = job_rows(led, None, None, all_attempts=True)
    writer = (f"import sqlite3, os\nc = sqlite3.connect({str(led)!r}, isolation_level=None)\n"
              "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE')\n"
              "c.execute(\"UPDATE job_attempt SET state = 'FAILED', node = 'half'\")\n"
              "c.execute('CREATE TABLE filler AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
              "WHERE i < 20000) SELECT i, hex(randomblob(64)) AS b FROM n')\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", writer], check=True, timeout=60)
    assert Path(f"{led}-journal").exists()  # the crash left a hot journal
    assert job_rows(led, None, None, all_attempts=True) in (None, committed)
    proc = run_cli("--ledger", str(led), "jobs", "--no-sync", "--all-attempts", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [list(r.values()) for r in json.loads(proc.stdout)] == committed
