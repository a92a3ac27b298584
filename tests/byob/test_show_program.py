"""`campaign show JOB` says what built the job's program, through the CLI on this machine
(cluster=local, fake_conf experiment ours_and_user: one of our kernels beside a user's program
found on PATH). Ours: the build job's compiler and flags. The user's: its real path and sha256 as
the submit recorded them, and no compiler of ours; a rerun's attempt the same; a ledger from
before that record: `not recorded`. Both ledger readers (SQLAlchemy's and `--no-sync`'s sqlite3)
give the same facts and the same text; `--format json|csv` gives the same facts as typed fields."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

from campaign.cli import views
from campaign.config import load_config
from campaign.ledger import Ledger
from campaign.ledger import sqlite_read as ledger_read
from tests.conftest import run_cli, sql_rows
from tests.fixtures import user_bench

# what `show --format json|csv` says of the program, in this order (campaign.cli.show_view.program_fields)
ORIGIN = ("program", "program_origin", "program_path", "program_sha256", "build_key", "build_compiler", "build_flags",
          "build_modules", "build_host")


def _jobs(ledger: Path) -> dict[str, str]:
    """The newest job ID of each kernel."""
    rows = sql_rows(ledger, "SELECT r.kernel, a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id ORDER BY a.id")
    return dict(rows)


def _show(ledger: Path, job: str, env: dict[str, str]) -> str:
    """`show JOB` through both readers: the same text, from the same facts."""
    proc = run_cli("--ledger", str(ledger), "show", job, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fast = run_cli("--ledger", str(ledger), "show", job, "--no-sync", env=env)
    assert fast.returncode == 0 and fast.stdout == proc.stdout, fast.stderr
    assert ledger_read.show_facts(ledger, job) == views.show_facts(Ledger(ledger), job)
    return proc.stdout


def _record(ledger: Path, job: str, env: dict[str, str]) -> dict[str, Any]:
    """`show JOB --format json`, through both readers, and its CSV: the same fields, the CSV's as text."""
    proc = run_cli("--ledger", str(ledger), "show", job, "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fast = run_cli("--ledger", str(ledger), "show", job, "--no-sync", "--format", "json", env=env)
    assert fast.returncode == 0 and fast.stdout == proc.stdout, fast.stderr
    record: dict[str, Any] = json.loads(proc.stdout)
    assert [k for k in record if k in ORIGIN] == list(ORIGIN)
    table = run_cli("--ledger", str(ledger), "show", job, "--no-sync", "--format", "csv", env=env)
    assert table.returncode == 0, table.stderr
    [row] = list(csv.DictReader(io.StringIO(table.stdout)))
    assert {k: row[k] for k in ORIGIN} == {k: "" if record[k] is None else str(record[k]) for k in ORIGIN}
    return {k: record[k] for k in ORIGIN}


def test_show_names_the_users_binary_and_our_compiler(tmp_path: Path) -> None:
    env, real, sha = user_bench.install(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=ours_and_user", "campaign.name=both",
                   f"campaign.workdir={tmp_path / 'runs'}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = _jobs(ledger)
    cc = load_config(["cluster=local"]).cluster.build
    gcc = subprocess.run([cc.cc, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]

    ours = _show(ledger, jobs["attention_forward"], env)
    assert f"  C:       {gcc}  flags {cc.cflags}" in ours.splitlines()
    assert "program:" not in ours
    [(key, host)] = sql_rows(ledger, "SELECT key, json_extract(info, '$.host') FROM build_step")
    assert f"build: key {key}  " in ours and f"  on {host}, " in ours
    assert _record(ledger, jobs["attention_forward"], env) == {
        "program": "c/attention_forward", "program_origin": "ours", "program_path": None, "program_sha256": None,
        "build_key": key, "build_compiler": gcc, "build_flags": cc.cflags, "build_modules": None, "build_host": host}

    mine = _show(ledger, jobs["user_bench"], env).splitlines()
    assert f"program: {real}  user binary sha256 {sha[:12]}" in mine
    assert not [line for line in mine if line.startswith(("  C:", "  Fortran:", "  on "))], mine
    users = {"program": "user_bench", "program_origin": f"user binary {sha[:12]}", "program_path": str(real),
             "program_sha256": sha, **dict.fromkeys(ORIGIN[4:])}
    assert _record(ledger, jobs["user_bench"], env) == users

    # a rerun's attempt records no provenance of its own: it ran the program of its run's submit
    proc = run_cli("--ledger", str(ledger), "rerun", "--job", jobs["user_bench"], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    again = _jobs(ledger)["user_bench"]
    assert again != jobs["user_bench"]
    assert f"program: {real}  user binary sha256 {sha[:12]}" in _show(ledger, again, env).splitlines()
    assert _record(ledger, again, env) == users

    # a ledger written before submit recorded the user's programs: what built it is not known, not guessed
    sql_rows(ledger, "UPDATE provenance SET environment = json_remove(environment, '$.programs')")
    old = _show(ledger, again, env).splitlines()
    assert "program: user_bench  not recorded" in old
    assert _record(ledger, again, env) == {"program": "user_bench", "program_origin": "not recorded",
                                           **dict.fromkeys(ORIGIN[2:])}
    assert not [line for line in old if line.startswith(("  C:", "  Fortran:", "  on "))], old
    assert f"  C:       {gcc}  flags {cc.cflags}" in _show(ledger, jobs["attention_forward"], env).splitlines()
