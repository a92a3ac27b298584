"""Scheduler faults on the real single-node Slurm: the ledger never
loses or duplicates a job.

Each test submits one fake-kernel job that sleeps (experiment fault_sleep in
tests/fixtures/reliability_conf), breaks the cluster under it — a daemon stopped, the
node set DOWN — runs `campaign status` through the installed CLI, and puts
the cluster back in a finally block: daemons restarted exactly as
.ci/slurm-up.sh starts them (tests/reliability/slurm_daemons.py), the node
resumed, the test's jobs cancelled. Other integration tests run after these.

What Slurm 22.05 does here (seen on the test cluster, and why the asserts
are what they are):
- slurmctld down alone: sacct talks to slurmdbd, not to the controller, so
  `status` still answers (exit 0) with the states accounting has.
- slurmctld and slurmdbd down: nothing can answer; `status` fails with one
  line, exit 1, and leaves the ledger as it was.
- slurmdbd down alone: sacct fails with "Problem talking to the database:
  Connection refused"; campaign/backends/slurm_query.py then falls back to
  squeue with a warning (as it does when accounting is disabled), and the
  test checks the state squeue gives and the warning.
- node set DOWN under a running job: with JobRequeue=1 (the default) Slurm
  would requeue the job under the same ID; campaign submits with
  --no-requeue, so the job ends NODE_FAIL and only `campaign rerun` runs it
  again (as a new attempt). The test fails if Slurm requeues it.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL, RELIABILITY_CONF
from tests.reliability import slurm_daemons as daemons
from tests.slurm_cluster import SlurmCluster

# serial: the faults hit every job on the shared cluster (make test runs these after the parallel run)
pytestmark = [pytest.mark.slurm, pytest.mark.serial]

CONFIG_PATH = f"{FAKE_CONF}:{RELIABILITY_CONF}"
NODE = "localhost"
RUNNING_DEADLINE_S = 60
QUIET_DEADLINE_S = 180  # other tests' jobs on a shared test cluster


# ----------------------------------------------------------------- helpers


class Campaign:
    """One fake_sleep campaign of this test: its ledger, name and CLI env."""

    def __init__(self, tmp_path: Path, cluster: SlurmCluster, sleep_s: int = 120) -> None:
        self.ledger = tmp_path / "ledger.sqlite"
        self.name = f"rel-{uuid.uuid4().hex[:6]}"
        self.work = tmp_path
        self.sleep_s = sleep_s
        self.env = {**cluster.env, "CAMPAIGN_CONFIG_PATH": CONFIG_PATH, "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("--ledger", str(self.ledger), *args, cwd=self.work, env=self.env, timeout=180)

    def submit(self) -> str:
        proc = self.cli("submit", "cluster=localslurm", "experiment=fault_sleep", f"campaign.name={self.name}",
                        f"campaign.workdir={self.work / 'runs'}", f"experiment.sweeps.0.args.sleep={self.sleep_s}")
        assert proc.returncode == 0, proc.stderr
        assert "1 submitted" in proc.stdout, proc.stdout
        return self.attempts()[0][0]

    def status(self) -> subprocess.CompletedProcess[str]:
        return self.cli("status", self.name)

    def attempts(self) -> list[tuple[str, str, str | None, int]]:
        """(job_id, state, reason, attempt) of every attempt, oldest first."""
        con = sqlite3.connect(self.ledger)
        try:
            return con.execute("SELECT job_id, state, reason, attempt FROM job_attempt ORDER BY id").fetchall()
        finally:
            con.close()

    def wait_running(self) -> None:
        deadline = time.monotonic() + RUNNING_DEADLINE_S
        while True:
            proc = self.status()
            assert proc.returncode == 0, proc.stderr
            if self.attempts()[0][1] == "RUNNING":
                return
            if time.monotonic() > deadline:
                pytest.fail(f"job not RUNNING after {RUNNING_DEADLINE_S} s: {self.attempts()}; {_squeue()}")
            time.sleep(1)


def _slurm(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


def _squeue() -> str:
    return "squeue: " + "; ".join(_slurm("squeue", "-h", "-o", "%i %P %T %r").stdout.splitlines()[:10])


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def campaign(tmp_path: Path, slurm_cluster: SlurmCluster) -> Iterator[Campaign]:
    """The test's campaign; its jobs are cancelled afterwards, whatever happened."""
    _wait_quiet()
    camp = Campaign(tmp_path, slurm_cluster)
    try:
        yield camp
    finally:
        ids = [j for j, *_ in camp.attempts() if j] if camp.ledger.exists() else []
        if ids:
            _slurm("scancel", *ids)
            daemons.wait_for(lambda: not set(ids) & set(_slurm("squeue", "-h", "-o", "%A").stdout.split()),
                             60, f"jobs {ids} to leave the queue")


def _active() -> list[str]:
    """The cluster's jobs that run or may start: a job held back to a begin time (a year ahead, as
    the sync-batching test holds its array; one an interrupted run never cancelled) runs through
    no fault, and waiting on it would only spend QUIET_DEADLINE_S."""
    lines = _slurm("squeue", "-h", "-o", "%A %r").stdout.splitlines()
    return [line.split()[0] for line in lines if line.split() and line.split()[-1] != "BeginTime"]


def _wait_quiet(timeout_s: float = QUIET_DEADLINE_S) -> None:
    """Faults hit every job on the cluster: wait until other tests' jobs are
    gone. A cluster that stays busy skips the test, except under
    CAMPAIGN_REQUIRE_SLURM=1 (CI runs one test at a time: leftovers there are
    jobs of finished tests, and the fault goes ahead)."""
    deadline = time.monotonic() + timeout_s
    while _active():
        if time.monotonic() > deadline:
            if os.environ.get("CAMPAIGN_REQUIRE_SLURM") == "1":
                return
            pytest.skip(f"the test cluster ran other jobs for {timeout_s:.0f} s; {_squeue()}")
        time.sleep(2)


# ----------------------------------------------------------------- daemons down


def test_controller_down_status_answers_from_accounting(campaign: Campaign, slurm_cluster: SlurmCluster) -> None:
    campaign.submit()
    campaign.wait_running()
    with daemons.stopped(slurm_cluster.lab, slurm_cluster.full_env(), "slurmctld"):
        assert _slurm("scontrol", "ping").stdout.count("DOWN") == 1  # really down
        before = campaign.ledger.read_bytes()
        proc = campaign.status()
        assert proc.returncode == 0, proc.stderr
        assert "RUNNING 1" in proc.stdout
        assert "Traceback" not in proc.stderr
        assert campaign.ledger.read_bytes() == before  # nothing changed state, nothing written
    proc = campaign.status()
    assert proc.returncode == 0, proc.stderr


def test_scheduler_down_status_fails_in_one_line_and_keeps_ledger(
        campaign: Campaign, slurm_cluster: SlurmCluster) -> None:
    campaign.submit()
    campaign.wait_running()
    with daemons.stopped(slurm_cluster.lab, slurm_cluster.full_env(), "slurmctld", "slurmdbd"):
        before = campaign.ledger.read_bytes()
        proc = campaign.status()
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        line = _one_line(proc.stderr)
        assert line.startswith("campaign: error:") and "sacct" in line and "slurmdbd" in line, line
        assert campaign.ledger.read_bytes() == before
        # the read-only views still work from the ledger alone
        jobs = campaign.cli("jobs", "--campaign", campaign.name)
        assert jobs.returncode == 0 and "RUNNING" in jobs.stdout, jobs.stderr
        assert campaign.ledger.read_bytes() == before
    proc = campaign.status()
    assert proc.returncode == 0, proc.stderr
    assert "RUNNING 1" in proc.stdout
    assert [(s, a) for _, s, _, a in campaign.attempts()] == [("RUNNING", 1)]


def test_accounting_down_status_falls_back_to_squeue(campaign: Campaign, slurm_cluster: SlurmCluster) -> None:
    campaign.submit()
    campaign.wait_running()
    with daemons.stopped(slurm_cluster.lab, slurm_cluster.full_env(), "slurmdbd"):
        proc = campaign.status()
        warnings = [ln for ln in proc.stderr.splitlines() if ln]
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        assert len(warnings) == 1 and warnings[0].startswith("campaign: warning:") and "squeue" in warnings[0]
        assert "RUNNING 1" in proc.stdout
    proc = campaign.status()
    assert proc.returncode == 0, proc.stderr
    assert not proc.stderr.strip()


# ----------------------------------------------------------------- node failure


class RequeuedBehindTheLedger(AssertionError):
    """Slurm runs a job again that the ledger has recorded as finished."""


def test_node_down_under_running_job(campaign: Campaign, slurm_cluster: SlurmCluster) -> None:
    """scontrol sets the node DOWN while the job runs: the ledger must end in a
    rerunnable state (NODE_FAIL), status must not add attempts, the node is
    resumed and the cluster left usable whatever happens; and Slurm must not
    run the job again behind the ledger's back."""
    job_id = campaign.submit()
    campaign.wait_running()
    env = slurm_cluster.full_env()
    requeued = ""
    try:
        down = _slurm("scontrol", "update", f"nodename={NODE}", "state=down", "reason=campaign-reliability-test")
        assert down.returncode == 0, down.stderr
        deadline = time.monotonic() + 60
        while True:
            proc = campaign.status()
            assert proc.returncode == 0, proc.stderr
            assert "Traceback" not in proc.stderr
            attempts = campaign.attempts()
            if attempts[-1][1] != "RUNNING":
                break
            if time.monotonic() > deadline:
                pytest.fail(f"still RUNNING 60 s after the node went down: {attempts}; {_squeue()}")
            time.sleep(1)
        assert [(j, s, a) for j, s, _, a in attempts] == [(job_id, "NODE_FAIL", 1)], attempts
        assert "NODE_FAIL 1" in proc.stdout
        # a second status changes nothing
        before = campaign.ledger.read_bytes()
        again = campaign.status()
        assert again.returncode == 0 and campaign.ledger.read_bytes() == before, again.stderr
        # what Slurm does next: with JobRequeue=1 the job is back in the queue under the same ID
        queued = _slurm("squeue", "-h", "-j", job_id, "-o", "%T %r")
        if queued.returncode == 0 and queued.stdout.strip():
            history = _slurm("sacct", "-D", "-X", "-P", "-n", "-j", job_id, "-o", "JobID,State,Reason")
            requeued = (f"ledger: {job_id} NODE_FAIL; squeue: {queued.stdout.strip()}; "
                        f"sacct -D: {' / '.join(history.stdout.split())}")
    finally:
        _slurm("scancel", job_id)
        _slurm("scontrol", "update", f"nodename={NODE}", "state=resume")  # an error if already back: fine
        daemons.wait_for(lambda: daemons.ready("slurmd", env), 90, "the node to be usable again")
    if requeued:
        raise RequeuedBehindTheLedger(requeued)
