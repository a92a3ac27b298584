"""A submission the scheduler refuses: its runs are
NOT_SUBMITTED with sbatch's error and how to send them again, never PENDING
without a job ID for ever; sending them again works and runs no job twice.
Against the real test Slurm, through the CLI a user runs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.slurm.helpers import _all_finished, _name, _overrides, _sync_until

pytestmark = pytest.mark.slurm


@pytest.mark.parametrize("again", ["submit", "rerun"])
def test_refused_submit_is_not_submitted_and_sending_again_runs_each_once(
        slurm_cluster: object, tmp_path: Path, again: str, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("refused")
    ledger = tmp_path / "ledger.sqlite"
    cancel_at_end(Ledger(ledger), name)
    env = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}
    args = ["--ledger", str(ledger)]
    submit = [*args, "submit", *_overrides(tmp_path, name, "experiment=failures",
                                           "experiment.sweeps.0.variants=[ok,badcheck]")]
    refused = run_cli(*submit, env={**env, "SLURM_CONF": str(tmp_path / "no-such-slurm.conf")})
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "NOT_SUBMITTED" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    rows = sql_rows(ledger, "SELECT state, job_id, reason FROM job_attempt")
    assert len(rows) == 2 and all(st == "NOT_SUBMITTED" and job is None for st, job, _ in rows), rows
    assert all("not submitted:" in why and "campaign submit" in why for _, _, why in rows)
    status = run_cli(*args, "status", name, env=env)  # nothing open: status neither waits nor asks Slurm
    assert status.returncode == 0 and "NOT_SUBMITTED 2" in status.stdout, status.stdout + status.stderr
    wait = run_cli(*args, "status", name, "--wait", "--interval", "0.2", env=env, timeout=60)
    assert wait.returncode == 3, wait.stderr  # nothing left to wait for, and nothing ran: a failure
    sent = run_cli(*submit, env=env) if again == "submit" else run_cli(*args, "rerun", name, "--failed", env=env)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    rows = sql_rows(ledger, "SELECT attempt, state, job_id, reason FROM job_attempt ORDER BY id")
    assert len(rows) == 2 and all(a == 1 and st != "NOT_SUBMITTED" and job and why is None
                                  for a, st, job, why in rows), rows
    done = _sync_until(Ledger(ledger), name, _all_finished)
    assert set(done.counts) == {"COMPLETED", "CHECK_FAILED"}, done.counts
    # one Slurm job per run: the scheduler knows no other job of this campaign
    listed = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobID,JobName", "-S", "now-1hours"],
                            capture_output=True, text=True, timeout=60, check=True)
    tasks = [line.split("|")[0] for line in listed.stdout.splitlines() if f"campaign:{name}:" in line]
    assert sorted(tasks) == sorted(job for _, _, job, _ in rows), listed.stdout
