"""Crash safety on the real test Slurm: SIGKILL `campaign submit` in the
middle of a large submission (three 1001-task arrays), run it again, and
check that every run has exactly one job — none lost, none duplicated."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

pytestmark = pytest.mark.slurm
RUNS = 2500


def _env(tmp_path: Path) -> dict[str, str]:
    """The fake conf, after a folder whose experiment crash_grid is crash_many with its RUNS distinct
    runs written in (as a 2,500-value override, Hydra's parser took ~0.5 CPU s of each submit)."""
    conf = tmp_path / "conf"
    if not conf.exists():
        many = (FAKE_CONF / "experiment" / "crash_many.yaml").read_text()
        grid = ", ".join(f"{i / 1e6:.6f}" for i in range(RUNS))
        (conf / "experiment").mkdir(parents=True)
        (conf / "experiment" / "crash_grid.yaml").write_text(
            many.replace("name: crash_many", "name: crash_grid") + f"    grid: {{sleep: [{grid}]}}\n"
        )
    env = dict(os.environ)
    env["CAMPAIGN_CONFIG_PATH"] = f"{conf}:{FAKE_CONF}"
    env["CAMPAIGN_FAKE_KERNEL"] = str(FAKE_KERNEL)
    return env


def _args(ledger: Path, work: Path, name: str) -> list[str]:
    return [
        "--ledger",
        str(ledger),
        "submit",
        "cluster=localslurm",
        "experiment=crash_grid",
        f"campaign.name={name}",
        f"campaign.workdir={work}",
        "++cluster.partitions.cpu.sbatch_extra={hold: true}",  # held: they never run, and are cancelled
    ]


def _slurm_jobs(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %j"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()[1].startswith(f"campaign:{name}:")]


def _cancel(name: str) -> None:
    ids = _slurm_jobs(name)
    bases = sorted({i.split("_")[0] for i in ids})
    if bases:
        subprocess.run(["scancel", *bases], check=False)


def _manifests(work: Path, name: str) -> int:
    folder = work / name / "manifests"
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


def _recorded_runs(ledger: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=0.05)
        try:
            return int(con.execute("SELECT count(*) FROM run").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


# Kill points, from the submitter's timeline: runs recorded but nothing sent;
# first manifest written (sbatch of chunk 1 in flight); first jobs visible in
# Slurm (sbatch answered, ledger write racing); second manifest (chunk 1
# recorded, chunk 2 in flight).
TRIGGERS = {
    "after_record": lambda led, work, name: _recorded_runs(led) >= RUNS,
    "first_manifest": lambda led, work, name: _manifests(work, name) >= 1,
    "jobs_in_slurm": lambda led, work, name: bool(_slurm_jobs(name)),
    "second_manifest": lambda led, work, name: _manifests(work, name) >= 2,
}


@pytest.mark.parametrize("point", list(TRIGGERS))
def test_sigkill_during_submit_loses_and_duplicates_nothing(slurm_cluster: object, tmp_path: Path, point: str) -> None:
    name = f"crash-{point}-{os.getpid()}"
    ledger, work = tmp_path / "l.sqlite", tmp_path / "runs"
    try:
        proc = subprocess.Popen(
            [str(CAMPAIGN), *_args(ledger, work, name)],
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while proc.poll() is None and not TRIGGERS[point](ledger, work, name) and time.monotonic() < deadline:
            time.sleep(0.02)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        assert killed, f"submit finished before the kill point {point}"
        before = len(_slurm_jobs(name))
        again = run_cli(*_args(ledger, tmp_path / "runs", name), env=_env(tmp_path), timeout=900)
        assert again.returncode == 0, again.stderr
        jobs = _slurm_jobs(name)
        con = sqlite3.connect(ledger)
        rows = con.execute("SELECT job_id FROM job_attempt").fetchall()
        runs = con.execute("SELECT count(*) FROM run").fetchone()[0]
        con.close()
        ledger_ids = [r[0] for r in rows]
        assert runs == RUNS and len(ledger_ids) == RUNS  # one attempt per run, nothing repeated
        assert None not in ledger_ids  # no job ID lost
        assert len(set(ledger_ids)) == RUNS
        assert sorted(jobs) == sorted(ledger_ids)  # exactly the scheduler's jobs, no duplicates
        print(
            f"killed at {point}: {before} jobs existed at the kill; "
            f"second submit: {again.stdout.strip().splitlines()[0]}"
        )
    finally:
        _cancel(name)
