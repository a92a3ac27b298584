"""Where result files live (docs/results.md "Where the files are"): a
pointer is relative to its campaign's folder, so a copied or renamed ledger
reads the same numbers; a ledger whose campaign folders are not on this
machine keeps its files beside it, in `<ledger stem>.results/c<id>/`; a file
in neither place is refused with one line naming it; a sweep through an older
copy of a ledger never removes a file a newer copy points to."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from campaign.backends.base import JobStatus
from campaign.commands.sync import _apply
from campaign.commands.sync_pending import collect
from campaign.ledger import Ledger, files
from campaign.plumbing.states import JobState
from campaign.results.reader import Outcome
from tests.conftest import run_cli, sql_rows
from tests.fixtures.ledger_rows import add_attempt, spec_with

DONE = JobStatus(JobState.COMPLETED, exit_code=0, node="n1", started_at=datetime(2026, 12, 1, 12, tzinfo=UTC))


def _row(threads: int, n: int, repeat: int) -> dict[str, object]:
    return {"kernel": "attention_forward", "impl": "c", "variant": "naive", "device": "cpu", "dtype": "fp32",
            "threads": threads, "n": n, "d": 16, "repeat": repeat, "time_s": (1 + repeat) * n / threads * 1e-6,
            "extra": {}}


def _finish(led: Ledger, aid: int, threads: int) -> None:
    """Sync one attempt as COMPLETED with two n x two repeats (what sync stores, in one transaction)."""
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
    rows = [_row(threads, n, r) for n in (64, 128) for r in range(2)]
    with led.session.begin() as s:
        _apply(s, pending, {aid: DONE}, {aid: Outcome(JobState.COMPLETED, rows)}, camps)


def _campaign(led: Ledger, folder: Path, threads: tuple[int, ...]) -> list[int]:
    ids = [add_attempt(led, folder, spec=spec_with(threads=t), job_id=f"{100 + t}") for t in threads]
    for aid, t in zip(ids, threads, strict=True):
        _finish(led, aid, t)
    return ids


def _report(ledger: Path) -> dict[str, object]:
    """report --json of the campaign, but its scope (whose header names the ledger file)."""
    proc = run_cli("--ledger", str(ledger), "report", "--json", "--campaign", "unit")
    assert proc.returncode == 0, proc.stderr
    report = dict(json.loads(proc.stdout))
    assert report.pop("scope")["campaigns"] == ["unit"]
    return report


def test_a_copied_ledger_reports_and_compares_the_same_numbers(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    led = Ledger(tmp_path / "ledger.sqlite")
    _campaign(led, folder, (1, 2))
    led.close()
    elsewhere = tmp_path / "backups"
    elsewhere.mkdir()
    copy = elsewhere / "old-ledger.sqlite"  # another folder, another name: nothing of ledger.results travels
    shutil.copyfile(led.path, copy)
    original = _report(led.path)
    assert original["speedup"] and _report(copy) == original
    assert sql_rows(copy, "SELECT count(*) FROM result") == sql_rows(led.path, "SELECT count(*) FROM result") == [(8,)]
    proc = run_cli("--ledger", str(led.path), "compare", f"campaign=unit,ledger={copy}", "unit", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert len(points) == 4 and all(p["t_base"] == p["t_new"] and p["ratio"] == 1.0 for p in points)


def test_campaign_folder_not_here_files_live_beside_the_ledger(tmp_path: Path) -> None:
    """A ledger written on another machine (its campaign folder absent here): the files go beside it
    and are read from there; without them a read names where it looked, in one line."""
    absent = tmp_path / "other-machine" / "runs"
    led = Ledger(tmp_path / "ledger.sqlite")
    _campaign(led, absent, (1,))
    [(path,)] = sql_rows(led.path, "SELECT path FROM result_file")
    beside = tmp_path / "ledger.results" / "c1" / path
    assert beside.is_file() and not absent.exists()
    assert _report(led.path)["speedup"]
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copyfile(led.path, lone / "ledger.sqlite")  # the ledger without its .results folder
    proc = run_cli("--ledger", str(lone / "ledger.sqlite"), "report", "--json", "--campaign", "unit")
    assert proc.returncode != 0 and proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert str(absent / path) in line and str(lone / "ledger.results" / "c1" / path) in line and "missing" in line
    shutil.copytree(tmp_path / "ledger.results", lone / "ledger.results")  # both travel: it reads again
    assert _report(lone / "ledger.sqlite") == _report(led.path)


def test_a_sweep_through_an_older_copy_keeps_what_the_newer_one_points_to(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    led = Ledger(tmp_path / "ledger.sqlite")
    first = add_attempt(led, folder, spec=spec_with(threads=1), job_id="101")
    second = add_attempt(led, folder, spec=spec_with(threads=2), job_id="102")
    _finish(led, first, 1)
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(led.path, backup)  # taken before the second attempt was stored
    _finish(led, second, 2)
    old = time.time() - files.SWEEP_AGE_S - 10
    stored = sorted((folder / "results").iterdir())
    assert len(stored) == 2
    for path in stored:
        os.utime(path, (old, old))
    proc = run_cli("--ledger", str(backup), "status")  # the backup's status sweeps the shared folder
    assert proc.returncode == 0, proc.stderr
    assert sorted((folder / "results").iterdir()) == stored
    assert sql_rows(led.path, "SELECT count(*) FROM result") == [(8,)]
    assert sql_rows(backup, "SELECT count(*) FROM result") == [(4,)]


def test_the_upgrade_writes_each_campaign_files_where_the_rule_says(tmp_path: Path) -> None:
    """v11 -> v13 moves the rows to files: into the folder of a campaign that is on this machine,
    beside the ledger for one that is not, the rows imported into a campaign (no folder) beside the
    ledger too, those imported without one to `<stem>.results/imports/`; the report reads them all."""
    import sqlite3

    from tests.ledger.make_version_fixtures import FIXTURES

    path = tmp_path / "ledger.sqlite"
    shutil.copyfile(FIXTURES / "v11.sqlite", path)
    here = tmp_path / "runs" / "smoke-local"
    here.mkdir(parents=True)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE campaign SET workdir = ? WHERE name = 'smoke-local'", (str(here),))
    ids = dict(con.execute("SELECT name, id FROM campaign"))
    con.close()
    Ledger(path).close()  # the upgrade
    pointers = sql_rows(path, "SELECT campaign_id, path FROM result_file")
    assert pointers and {cid for cid, _ in pointers} == {ids["smoke-local"], ids["scaling-cpu"], ids["imported-alpha"],
                                                         None}
    beside = tmp_path / "ledger.results"
    expected = {here / rel if cid == ids["smoke-local"] else beside / (f"c{cid}" if cid else "imports") / rel
                for cid, rel in pointers}
    assert set(tmp_path.rglob("*.parquet")) == expected  # each file where the rule says, and nowhere else
    proc = run_cli("--ledger", str(path), "report", "--json", "--campaign", "smoke-local", "--campaign", "scaling-cpu")
    assert proc.returncode == 0 and json.loads(proc.stdout)["speedup"], proc.stderr


def test_compare_reads_an_older_ledger_with_its_files_beside_it_unchanged(tmp_path: Path) -> None:
    """`compare ledger=OLD` upgrades a temporary copy of an older ledger: the files beside OLD (its campaign
    folders are not here) travel with the copy, and neither OLD nor its folder gains a byte."""
    from tests.ledger.make_version_fixtures import FIXTURES, copy_ledger

    (tmp_path / "old").mkdir()
    old = copy_ledger(FIXTURES / "v12.sqlite", tmp_path / "old" / "v12.sqlite")
    mine = copy_ledger(FIXTURES / "v12.sqlite", tmp_path / "ledger.sqlite")
    before = sorted((p.relative_to(tmp_path / "old"), p.read_bytes()) for p in (tmp_path / "old").rglob("*") if p.is_file())
    proc = run_cli("--ledger", str(mine), "compare", f"campaign=smoke-local,ledger={old}", "smoke-local",
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert points and all(p["t_base"] == p["t_new"] for p in points)
    after = sorted((p.relative_to(tmp_path / "old"), p.read_bytes()) for p in (tmp_path / "old").rglob("*") if p.is_file())
    assert after == before
