"""Jobs on a second Slurm cluster (multi-cluster sites, `sbatch -M`): the
ledger keeps each job ID with the cluster that holds it; `status` asks that
cluster (sacct -M), `cancel` cancels there (scancel -M) and `show` names it.

The second cluster (.ci/slurm-second-up.sh) shares the first one's slurmdbd
and numbers its jobs from 7000000, so a job asked of the wrong cluster is
simply not found: a PENDING attempt that never moved would show the bug.
"""

from __future__ import annotations

import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from campaign import api
from campaign.job.files import START_FILE
from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from tests.conftest import run_cli
from tests.slurm.helpers import DONE_DEADLINE_S, POLL_S, _db, _name, _overrides

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _rows(ledger: Ledger) -> list[tuple]:
    return _db(ledger, "SELECT job_id, scheduler_cluster, state, alloc_cpus FROM job_attempt ORDER BY id")


def _wait_for(ledger: Ledger, name: str, states: set[str]) -> list[tuple]:
    deadline = time.monotonic() + DONE_DEADLINE_S
    while True:
        api.sync(ledger, name)
        rows = _rows(ledger)
        if all(r[2] in states for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(POLL_S)


def test_job_on_second_cluster_is_tracked_to_completed_and_shown(
    second_slurm_cluster: str, tmp_path: Path, cancel_at_end
) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("mc")
    cancel_at_end(ledger, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_remote"), ledger)
    assert len(rep.submitted) == 2
    rows = _rows(ledger)
    assert {r[1] for r in rows} == {second_slurm_cluster}
    # the first cluster does not know these IDs: only -M finds them
    local = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", rows[0][0].split("_")[0], "-o", "JobID"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert local.stdout.strip() == ""
    proc = run_cli("--ledger", str(ledger.path), "status", name)
    assert proc.returncode == 0, proc.stderr
    rows = _wait_for(ledger, name, {"COMPLETED"})
    assert [r[2] for r in rows] == ["COMPLETED", "COMPLETED"], rows
    assert all(r[3] == 1 for r in rows)  # the allocation is recorded with each attempt
    shown = run_cli("--ledger", str(ledger.path), "show", rows[0][0])
    assert shown.returncode == 0, shown.stderr
    assert f"scheduler cluster {second_slurm_cluster}" in shown.stdout
    assert "run: fake/py/sleep fp32 remote 1t" in shown.stdout
    # the two runs share one array (one job name); each task says which run it is in its own output
    outs = _db(ledger, "SELECT stdout_path FROM job_attempt ORDER BY id")
    labels = [
        line for (path,) in outs for line in Path(path).read_text().splitlines() if line.startswith("campaign run: ")
    ]
    assert len(labels) == 2 and all("fake/py/sleep fp32 remote 1t sleep=" in x for x in labels), labels
    names = subprocess.run(
        [
            "sacct",
            "-M",
            second_slurm_cluster,
            "-X",
            "-n",
            "-P",
            "-j",
            rows[0][0].split("_")[0],
            "-o",
            "JobName%200,Comment%200",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert f"campaign:{name}:fake/py/sleep:1t:" in names, names


def test_job_on_second_cluster_is_cancelled_there(second_slurm_cluster: str, tmp_path: Path, cancel_at_end) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("mcx")
    cancel_at_end(ledger, name)
    # the second cluster's job ids start again with each test session: an earlier session's job of the same
    # id (say COMPLETED) is in its accounting, and this one's record may not be yet; -S leaves that one out
    since = (datetime.now() - timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S")
    rep = api.submit(
        _overrides(tmp_path, name, "experiment=slurm_remote", "experiment.sweeps.0.grid.sleep=[600]"), ledger
    )
    assert len(rep.submitted) == 1
    job_id = rep.submitted[0][0]
    # cancel once the program runs: a job that starts after `cancel` left its marker runs nothing and ends
    # by itself (COMPLETED in Slurm's accounting, CANCELLED in the ledger), before scancel reaches it
    [(workdir,)] = _db(ledger, "SELECT workdir FROM job_attempt")
    deadline = time.monotonic() + DONE_DEADLINE_S
    while not (Path(workdir) / START_FILE).exists():
        assert time.monotonic() < deadline, f"job {job_id} never started its program"
        time.sleep(POLL_S)
    proc = run_cli("--ledger", str(ledger.path), "cancel", name)
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + DONE_DEADLINE_S
    while True:
        queue = subprocess.run(
            ["squeue", "-M", second_slurm_cluster, "-h", "-j", job_id, "-o", "%T"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if queue.stdout.strip() in ("", "CANCELLED") or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    assert queue.stdout.strip() in ("", "CANCELLED"), queue.stdout
    acct = ""
    while time.monotonic() < deadline:
        lines = subprocess.run(
            ["sacct", "-M", second_slurm_cluster, "-X", "-n", "-P", "-j", job_id, "-S", since, "-o", "Submit,State"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.splitlines()
        lines = [line for line in lines if line.split("|", 1)[0] >= since]  # submitted by this test
        acct = max(lines).split("|", 1)[1] if lines else ""
        if acct.strip():
            break
        time.sleep(POLL_S)
    assert acct.strip().startswith("CANCELLED"), acct
    assert _rows(ledger)[0][2] == JobState.CANCELLED.value


def _local_cluster() -> str:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    return next(line.split("=", 1)[1].strip() for line in config.splitlines() if line.startswith("ClusterName"))


def test_a_users_slurm_clusters_never_moves_campaigns_own_cluster_choice(
    second_slurm_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cancel_at_end
) -> None:  # type: ignore[no-untyped-def]
    """SLURM_CLUSTERS in a user's profile is sbatch's, squeue's and scancel's -M, never sacct's: the
    partition's `clusters:` goes on sbatch's command line (over the variable, which overrides the
    script's #SBATCH --clusters), and a job of the local cluster is cancelled there, where sacct reads."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    remote, here = _name("mcenv"), _name("mclocal")
    cancel_at_end(ledger, remote)
    cancel_at_end(ledger, here)
    monkeypatch.setenv("SLURM_CLUSTERS", _local_cluster())
    rep = api.submit(
        _overrides(tmp_path, remote, "experiment=slurm_remote", "experiment.sweeps.0.grid.sleep=[600]"), ledger
    )
    assert len(rep.submitted) == 1 and [r[1] for r in _rows(ledger)] == [second_slurm_cluster], _rows(ledger)
    monkeypatch.delenv("SLURM_CLUSTERS")
    rep = api.submit(
        _overrides(
            tmp_path,
            here,
            "experiment=failures",
            "experiment.sweeps.0.variants=[sleep]",
            "experiment.sweeps.0.partitions=[cpu]",
            "+experiment.sweeps.0.args={sleep: 600}",
        ),
        ledger,
    )
    job_id = rep.submitted[0][0]
    monkeypatch.setenv("SLURM_CLUSTERS", second_slurm_cluster)  # the user turns to the other cluster
    api.cancel(ledger, here)
    queue = subprocess.run(
        ["squeue", "-M", _local_cluster(), "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30
    )
    assert queue.stdout.strip() in ("", "CANCELLED", "COMPLETING"), queue.stdout
