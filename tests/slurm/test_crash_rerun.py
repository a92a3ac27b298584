"""A few kills on the real Slurm: SIGKILL `rerun` at
random points, run it again; every failed run got exactly one new attempt,
each attempt has its job ID and ran once. Then two identical reruns at once:
still one new attempt per run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.slurm.helpers import _name

pytestmark = pytest.mark.slurm
RUNS = 3


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
                "CAMPAIGN_FAKE_LOG": str(tmp / "executions.log")})
    return env


def _settle(ledger: Path, env: dict[str, str], name: str, *, submitted_only: bool = False) -> None:
    """`status` until no attempt is open. `submitted_only`: after a kill, only the
    attempts Slurm has a job ID for: a rerun killed before sbatch answered leaves
    its new attempts PENDING without one, and only the next rerun recovers them
    (it looks in Slurm by job name first: campaign.commands.attempts.recover_orphans);
    `status` never submits. The last settle (after a rerun that was not killed)
    counts every attempt."""
    extra = " AND job_id IS NOT NULL" if submitted_only else ""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert run_cli("--ledger", str(ledger), "status", name, env=env).returncode == 0
        if sql_rows(ledger, f"SELECT count(*) FROM job_attempt WHERE state IN ('PENDING', 'RUNNING'){extra}") == [(0,)]:
            return
        time.sleep(2)
    raise AssertionError("attempts still open after 300 s")


def _check(ledger: Path, tmp: Path, attempts: int) -> None:
    rows = sql_rows(ledger, "SELECT workdir, job_id FROM job_attempt")
    assert len(rows) == attempts
    assert all(job for _, job in rows) and len({job for _, job in rows}) == attempts
    ran = Counter((tmp / "executions.log").read_text().splitlines())
    assert set(ran) == {str(Path(w).resolve()) for w, _ in rows} and set(ran.values()) == {1}, ran


def test_sigkill_during_rerun_on_slurm(slurm_cluster: object, tmp_path: Path) -> None:
    rng = random.Random(11)
    env = _env(tmp_path)
    name = _name("crash-rerun")
    ledger = tmp_path / "l.sqlite"
    grid = ",".join(f"{i / 1000:.3f}" for i in range(RUNS))
    proc = run_cli("--ledger", str(ledger), "submit", "cluster=localslurm", "experiment=crash_many",
                   f"campaign.name={name}", f"campaign.workdir={tmp_path / 'runs'}",
                   "experiment.sweeps.0.variants=[exit3]", f"+experiment.sweeps.0.grid={{sleep: [{grid}]}}", env=env)
    assert proc.returncode == 0, proc.stderr
    _settle(ledger, env, name)
    kills = 0
    for _ in range(4):
        p = subprocess.Popen([str(CAMPAIGN), "--ledger", str(ledger), "rerun", name, "--failed"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 2.5))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        _settle(ledger, env, name, submitted_only=True)
    again = run_cli("--ledger", str(ledger), "rerun", name, "--failed", env=env)
    assert again.returncode == 0, again.stderr
    _settle(ledger, env, name)
    total = sql_rows(ledger, "SELECT count(*) FROM job_attempt")[0][0]
    assert total >= 2 * RUNS
    _check(ledger, tmp_path, total)
    # two identical reruns at once: one new attempt per failed run, not two
    procs = [subprocess.Popen([str(CAMPAIGN), "--ledger", str(ledger), "rerun", name, "--failed"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    _settle(ledger, env, name)
    _check(ledger, tmp_path, total + RUNS)
    print(f"{kills} kills of rerun on Slurm; {total + RUNS} attempts, each run once")
