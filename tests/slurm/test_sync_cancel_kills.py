"""Stops at seeded random moments of `status` and `cancel` on the real test Slurm (SIGKILL,
SIGTERM, SIGINT; a SIGKILL also in the ingest's own write). After each: the ledger passes
SQLite's integrity check, every job Slurm accepted for the campaign (sacct, by job name) is
in the ledger, no result row is stored twice; the same command run again finishes the work:
every row stored once with the numbers the jobs wrote, every held job cancelled in Slurm and
in the ledger. Then a submit stopped between its record and sbatch's answer: a wait ends
on the runs it left, and a rerun (even while that submit's sbatch is still running) adopts
the job sbatch accepted instead of sending it again. The mass submit and rerun kills on
Slurm are test_crash_safety.py's and test_crash_rerun.py's."""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli, signal_after, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.slurm.helpers import _name

pytestmark = pytest.mark.slurm
RUNS = 4
STOPS = 5
SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "5"))
SIGNALS = (signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def _env() -> dict[str, str]:
    return {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}


def _submit_argv(ledger: Path, work: Path, name: str, *extra: str) -> list[str]:
    grid = ",".join(f"{i / 1000:.3f}" for i in range(RUNS))
    return [
        "--ledger",
        str(ledger),
        "submit",
        "cluster=localslurm",
        "experiment=crash_many",
        f"campaign.name={name}",
        f"campaign.workdir={work}",
        f"+experiment.sweeps.0.grid={{sleep: [{grid}]}}",
        *extra,
    ]


def _submit(ledger: Path, work: Path, name: str, *extra: str) -> None:
    proc = run_cli(*_submit_argv(ledger, work, name, *extra), env=_env())
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


def _cancel_left(name: str) -> None:
    """The test's jobs still in Slurm cancelled (only its own: the cluster is shared)."""
    left = _queued(name)
    if left:
        subprocess.run(["scancel", *sorted({j.split("_")[0] for j in left})], check=False)


def _rerun_adopts_one_job_per_run(ledger: Path, name: str) -> None:
    """`rerun --failed` after a stopped submit, waited for: each run has one job, and every job Slurm
    accepted for the campaign (the stopped submit's sbatch's among them) is the ledger's."""
    again = run_cli("--ledger", str(ledger), "rerun", name, "--failed", env=_env(), timeout=300)
    assert again.returncode == 0, again.stderr
    waited = run_cli("--ledger", str(ledger), "status", "--wait", name, env=_env(), timeout=300)
    assert waited.returncode == 0, waited.stderr
    _check(ledger, name)
    jobs = [job for (job,) in sql_rows(ledger, "SELECT job_id FROM job_attempt")]
    assert len(jobs) == RUNS and None not in jobs and sorted(jobs) == sorted(_accepted(name)), (jobs, _accepted(name))


def _marked(work: Path) -> int:
    """The cancel markers in the campaign's job folders."""
    return sum(1 for _ in work.rglob("cancel.json"))


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
    """Campaigns of held jobs: the first cancelled whole (how long a cancel takes here, now), each
    other one's cancel stopped once (by SIGKILL once it has marked a job, or at a random moment of
    that time by a random signal), then run again."""
    rng = random.Random(SEED)
    stops, took = 0, 0.0
    for i in range(4):
        name, ledger, work = _name("cancel-kill"), tmp_path / f"l{i}.sqlite", tmp_path / f"runs{i}"
        _submit(ledger, work, name, "++cluster.partitions.cpu.sbatch_extra={hold: true}")  # held: they never run
        try:
            argv = ["--ledger", str(ledger), "cancel", name]
            if i == 0:
                started = time.monotonic()
            else:
                marked = _marked(work)
                if i % 2:  # SIGKILL once the first job's cancel marker is written: Slurm not told yet
                    stops += signal_after(argv, _env(), 0.0, when=lambda w=work, m=marked: _marked(w) > m) is None
                else:
                    stops += signal_after(argv, _env(), rng.uniform(0.0, took), rng.choice(SIGNALS)) is None
                _check(ledger, name)
                # an attempt marked cancelled is one Slurm no longer runs
                cancelled = {j for (j,) in sql_rows(ledger, "SELECT job_id FROM job_attempt WHERE state = 'CANCELLED'")}
                assert not cancelled & set(_queued(name))
            proc = run_cli(*argv, env=_env())
            assert proc.returncode == 0, proc.stderr
            took = took or time.monotonic() - started
            _check(ledger, name)
            assert _queued(name) == []
            assert sql_rows(ledger, "SELECT state, count(*) FROM job_attempt GROUP BY state") == [("CANCELLED", RUNS)]
            assert set(_accepted(name).values()) <= {"CANCELLED", "CANCELLED+"}
        finally:
            _cancel_left(name)
    print(f"{stops} stops of cancel hit it running")
    assert stops >= 2


def test_a_wait_ends_on_the_runs_a_stopped_submit_left_and_rerun_adopts_them(
    slurm_cluster: object, tmp_path: Path
) -> None:
    """A submit SIGKILLed once its first manifest is written (sbatch about to run, or running: the
    job may reach Slurm, its ID never recorded) leaves its runs PENDING without a job ID: no sync
    can settle them, and `status --wait` waited for them for ever. It now ends (exit 3) naming them
    never submitted, `status` says what sends them, and that rerun adopts the jobs sbatch accepted
    and submits the rest: every run has one job, and every job Slurm accepted is in the ledger."""
    name, ledger, work = _name("strand"), tmp_path / "l.sqlite", tmp_path / "runs"
    manifests = work / name / "manifests"
    argv = _submit_argv(ledger, work, name)
    try:
        stopped = signal_after(argv, _env(), 0.0, when=lambda: manifests.is_dir() and any(manifests.iterdir()))
        assert stopped is None, "the submit ended before its first manifest"
        left = sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE job_id IS NULL")[0][0]
        assert left == RUNS
        waited = run_cli("--ledger", str(ledger), "status", "--wait", name, env=_env(), timeout=120)
        assert waited.returncode == 3, waited.stderr
        assert waited.stderr.count("never submitted") == left, waited.stderr
        status = run_cli("--ledger", str(ledger), "status", name, env=_env())
        assert status.returncode == 0 and f"`campaign rerun {name} --failed`" in status.stderr, status.stderr
        _rerun_adopts_one_job_per_run(ledger, name)
    finally:
        _cancel_left(name)


def test_a_rerun_right_after_a_stopped_submit_waits_for_its_sbatch_and_adopts_the_job(
    slurm_cluster: object, tmp_path: Path
) -> None:
    """The sbatch a SIGKILLed submit started outlives it. A rerun at once looked in Slurm by job name
    while that sbatch had not answered yet (a slow controller: here an sbatch that waits 4 s first),
    found nothing, and sent the runs again: two jobs per run once the first sbatch answered. The
    rerun now waits for that sbatch, then adopts its job."""
    name, ledger, work = _name("slow-sbatch"), tmp_path / "l.sqlite", tmp_path / "runs"
    real, slow, started = shutil.which("sbatch"), tmp_path / "bin", tmp_path / "sbatch.started"
    assert real is not None
    slow.mkdir()
    (slow / "sbatch").write_text(f'#!/bin/sh\ntouch "{started}"\nsleep 4\nexec "{real}" "$@"\n')
    (slow / "sbatch").chmod(0o755)
    env = {**_env(), "PATH": f"{slow}:{os.environ['PATH']}"}
    try:
        stopped = signal_after(_submit_argv(ledger, work, name), env, 0.0, when=started.exists)
        assert stopped is None, "the submit ended before its sbatch started"
        assert sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE job_id IS NULL") == [(RUNS,)]
        _rerun_adopts_one_job_per_run(ledger, name)
    finally:
        _cancel_left(name)
