"""What `jobs` says of a job on the real test Slurm: the reason a pending job
waits as the controller says it now (sacct keeps `Dependency` after the
dependency was met), and the cause of a failure from the job's own exit
record; `submit --wait` names the failed jobs on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import DONE_DEADLINE_S, POLL_S, _name, _overrides, _squeue
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _env(cluster: SlurmCluster) -> dict[str, str]:
    return {**cluster.env, **{k: os.environ[k] for k in ("CAMPAIGN_CONFIG_PATH", "CAMPAIGN_FAKE_KERNEL")}}


def _slurm(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def _until(what: str, check: Callable[[], object]) -> object:
    deadline = time.monotonic() + DONE_DEADLINE_S
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen after {DONE_DEADLINE_S} s; squeue: {_squeue()}")
        time.sleep(POLL_S)


def test_jobs_shows_the_live_pending_reason_not_saccts_stale_one(
        tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("reason")
    ledger = tmp_path / "l.sqlite"
    cancel_at_end(Ledger(ledger), name)
    # a held job that will fill node n1; the campaign's job waits for it to start (Dependency), then
    # for n1's cores it holds (Resources), while sacct goes on saying Dependency
    blocker = _slurm("sbatch", "--parsable", "--hold", "-p", "multi", "-w", "n1", "-c", "2", "-t", "5",
                     "-J", f"{name}-blocker", "-o", "/dev/null", "--wrap", "sleep 300")
    try:
        args = _overrides(tmp_path, name, "experiment=failures", "experiment.sweeps.0.variants=[ok]",
                          "experiment.sweeps.0.partitions=[multi]", "+cluster.partitions.multi.sbatch_extra.nodelist=n1",
                          f"+cluster.partitions.multi.sbatch_extra.dependency=after:{blocker}")
        sub = run_cli("--ledger", str(ledger), "submit", *args, cwd=tmp_path, env=_env(slurm_cluster))
        assert sub.returncode == 0, sub.stderr

        def reason() -> str:
            proc = run_cli("--ledger", str(ledger), "jobs", "--campaign", name, "--format", "json",
                           cwd=tmp_path, env=_env(slurm_cluster))
            assert proc.returncode == 0, proc.stderr
            (row,) = json.loads(proc.stdout)
            assert row["state"] == "PENDING", row
            return str(row["reason"])

        assert _until("reason Dependency in `campaign jobs`", lambda: reason() == "Dependency")
        _slurm("scontrol", "release", blocker)
        _until("the blocker running", lambda: _slurm("squeue", "-h", "-j", blocker, "-o", "%T") == "RUNNING")
        assert _until("reason Resources in `campaign jobs`", lambda: reason() == "Resources")
        (row,) = json.loads(run_cli("--ledger", str(ledger), "jobs", "--no-sync", "--format", "json",
                                    cwd=tmp_path, env=_env(slurm_cluster)).stdout)
        shown = run_cli("--ledger", str(ledger), "show", "--no-sync", row["job_id"], cwd=tmp_path,
                        env=_env(slurm_cluster)).stdout
        assert "state: PENDING  (Resources)" in shown and "exit code: -" in shown, shown  # (sacct says 0:0)
        assert "kernel stderr (tail):\n    (none: the job has not started)" in shown, shown
    finally:
        subprocess.run(["scancel", blocker], capture_output=True, timeout=30, check=False)


def test_submit_wait_names_the_failed_job_and_jobs_shows_its_cause(
        tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("cause")
    ledger = tmp_path / "l.sqlite"
    cancel_at_end(Ledger(ledger), name)
    args = _overrides(tmp_path, name, "experiment=failures", "experiment.sweeps.0.variants=[exit3]",
                      "experiment.sweeps.0.partitions=[cpu]", "kernels.fake.impls.py.argv=[/bin/sh,-c,nosuchprog]")
    sub = run_cli("--ledger", str(ledger), "submit", *args, "--wait", "--interval", "1", cwd=tmp_path,
                  env=_env(slurm_cluster), timeout=DONE_DEADLINE_S)
    assert sub.returncode == 3, sub.stdout + sub.stderr
    rows = json.loads(run_cli("--ledger", str(ledger), "jobs", "--failed", "--format", "json", cwd=tmp_path,
                              env=_env(slurm_cluster)).stdout)
    (row,) = rows
    assert sub.stderr.strip() == f"campaign: 1 job(s) ended failed: {row['job_id']} FAILED", sub.stderr
    assert row["state"] == "FAILED" and row["reason"].startswith("exit 127: "), row
    assert row["reason"].endswith("nosuchprog: not found"), row
    table = run_cli("--ledger", str(ledger), "jobs", "--no-sync", cwd=tmp_path, env=_env(slurm_cluster)).stdout
    assert "exit 127: " in table and "nosuchprog: not found" in table, table
