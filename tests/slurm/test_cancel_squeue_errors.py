"""Cancel on the real test Slurm when squeue cannot answer: a cancel that
returns means the jobs stopped (the ledger then says CANCELLED and reads
their partial output), so squeue's own failure (a socket timeout of a busy
controller) is never taken for "no job left"; its "Invalid job id
specified" (every id gone from the controller) is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from campaign.backends.base import JobRef
from campaign.backends.slurm_cancel import cancel_and_wait
from campaign.plumbing.errors import SchedulerError
from tests.slurm.helpers import _stand_in
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm

TIMED_OUT = "squeue: error: slurm_load_jobs error: Socket timed out on send/recv operation"


def _failing_squeue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    _stand_in(tmp_path, monkeypatch, "squeue", f"echo '{message}' >&2\nexit 1")


def _held_job(cluster: SlurmCluster, tmp_path: Path) -> JobRef:
    proc = subprocess.run(
        ["sbatch", "--parsable", "--hold", "-t", "1", "--mem=50M", "-J", "campaign-test-cancel", "-o", "/dev/null"]
        + ["--wrap", "true"],
        env=cluster.full_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return JobRef(1, proc.stdout.strip().split(";")[0], str(tmp_path), None, 1)


def test_a_squeue_that_cannot_answer_never_says_the_jobs_stopped(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = _held_job(slurm_cluster, tmp_path)
    _failing_squeue(tmp_path, monkeypatch, TIMED_OUT)
    with pytest.raises(SchedulerError, match="Socket timed out") as caught:
        cancel_and_wait({None: [ref]}, 2.0)
    assert ref.job_id in str(caught.value) and "\n" not in str(caught.value)


def test_squeues_invalid_job_id_means_every_job_is_gone(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = _held_job(slurm_cluster, tmp_path)
    _failing_squeue(tmp_path, monkeypatch, "slurm_load_jobs error: Invalid job id specified")
    cancel_and_wait({None: [ref]}, 2.0)  # returns: the controller no longer knows any of them
