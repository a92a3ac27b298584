"""Stops at seeded random moments of `status` and `cancel` on the real test Slurm (SIGKILL,
SIGTERM, SIGINT; a SIGKILL also in the ingest's own write). After each: the ledger passes
SQLite's integrity check, every job Slurm accepted for the campaign (sacct, by job name) is
in the ledger, no result row is stored twice; the same command run again finishes the work:
every row stored once with the numbers the jobs wrote, every held job cancelled in Slurm and
in the ledger. The submit and rerun kills on Slurm are test_crash_safety.py's and
test_crash_rerun.py's."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.reliability.kills import signal_after
from tests.slurm.helpers import _name

pytestmark = pytest.mark.slurm
RUNS = 4
STOPS = 5
SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "5"))
SIGNALS = (signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def _env() -> dict[str, str]:
    return {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}


def _submit(ledger: Path, work: Path, name: str, *extra: str) -> None:
    grid = ",".join(f"{i / 1000:.3f}" for i in range(RUNS))
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "cluster=localslurm",
        "experiment=crash_many",
        f"campaign.name={name}",
        f"campaign.workdir={work}",
        f"+experiment.sweeps.0.grid={{sleep: [{grid}]}}",
        *extra,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr


def _accepted(name: str) -> dict[str, str]:
    """Every job Slurm accepted for the campaign, by its job name: job ID -> state."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,JobName,State", "-S", "now-2hours"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        job: state
        for job, job_name, state in (line.split("|")[:3] for line in out.splitlines() if line)
        if job_name.startswith(f"campaign:{name}:")
    }


def _queued(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %j"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()[1].startswith(f"campaign:{name}:")]


def _check(ledger: Path, name: str) -> None:
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    recorded = {job for (job,) in sql_rows(ledger, "SELECT job_id FROM job_attempt")}
    assert set(_accepted(name)) <= recorded, "a job Slurm accepted is missing from the ledger"
    assert sql_rows(ledger, "SELECT count(*) - count(DISTINCT (attempt_id, n, repeat)) FROM result") == [(0,)]


def _stop(argv: list[str], rng: random.Random, i: int, results: Path) -> bool:
    """One run of the command, stopped: every other time by SIGKILL a moment after its first temporary
    result file appeared (the ingest's write), else by a random signal at a random moment."""
    if i % 2 == 0:

        def writing() -> bool:
            return results.is_dir() and any(p.startswith(".tmp-") for p in os.listdir(results))

        return signal_after(argv, _env(), rng.uniform(0, 0.005), signal.SIGKILL, when=writing) is None
    return signal_after(argv, _env(), rng.uniform(0.0, 1.5), rng.choice(SIGNALS)) is None


def test_stopped_syncs_on_slurm_lose_nothing_and_store_each_row_once(slurm_cluster: object, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    name, ledger, work = _name("sync-kill"), tmp_path / "l.sqlite", tmp_path / "runs"
    _submit(ledger, work, name)
    deadline = time.monotonic() + 300
    while _queued(name) and time.monotonic() < deadline:  # the jobs end in Slurm; no status has run yet
        time.sleep(0.5)
    assert not _queued(name)
    argv = ["--ledger", str(ledger), "status", name]
    stops = 0
    for i in range(4 * STOPS):
        stops += _stop(argv, rng, i, work / name / "results")
        _check(ledger, name)
        if stops == STOPS:
            break
    assert stops >= 1  # (a run that ended first is one more whole sync)
    print(f"{stops} stops of status hit it running")
    proc = run_cli(*argv, env=_env())
    assert proc.returncode == 0, proc.stderr
    _check(ledger, name)
    assert sql_rows(ledger, "SELECT state, count(*) FROM job_attempt GROUP BY state") == [("COMPLETED", RUNS)]
    # the numbers the jobs wrote, each row once: what a sync never stopped stores
    wrote = sorted(
        float(row["time_s"]) for out in work.rglob("*.csv") for row in csv.DictReader(out.open()) if "time_s" in row
    )
    stored = sorted(t for (t,) in sql_rows(ledger, "SELECT time_s FROM result"))
    assert len(stored) == RUNS and stored == wrote


def test_stopped_cancels_on_slurm_cancel_every_job_once_run_again(slurm_cluster: object, tmp_path: Path) -> None:
    """Campaigns of held jobs, each cancel stopped once at a random moment, then run again."""
    rng = random.Random(SEED)
    stops = 0
    for i in range(3):
        name, ledger, work = _name("cancel-kill"), tmp_path / f"l{i}.sqlite", tmp_path / f"runs{i}"
        _submit(ledger, work, name, "++cluster.partitions.cpu.sbatch_extra={hold: true}")  # held: they never run
        try:
            argv = ["--ledger", str(ledger), "cancel", name]
            stops += signal_after(argv, _env(), rng.uniform(0.0, 0.6), rng.choice(SIGNALS)) is None
            _check(ledger, name)
            # an attempt marked cancelled is one Slurm no longer runs
            cancelled = {job for (job,) in sql_rows(ledger, "SELECT job_id FROM job_attempt WHERE state = 'CANCELLED'")}
            assert not cancelled & set(_queued(name))
            proc = run_cli(*argv, env=_env())
            assert proc.returncode == 0, proc.stderr
            _check(ledger, name)
            assert _queued(name) == []
            assert sql_rows(ledger, "SELECT state, count(*) FROM job_attempt GROUP BY state") == [("CANCELLED", RUNS)]
            assert set(_accepted(name).values()) <= {"CANCELLED", "CANCELLED+"}
        finally:
            left = _queued(name)
            if left:
                subprocess.run(["scancel", *sorted({j.split("_")[0] for j in left})], check=False)
    print(f"{stops} stops of cancel hit it running")
    assert stops >= 1
