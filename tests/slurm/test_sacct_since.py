"""A job id answers for one job only: sync asks sacct for jobs submitted since
the earliest submission it waits on (`-S`), so an older job that had the same
id (a controller whose state was reset, ids wrapped at MaxJobId) is not taken
for a new job that accounting does not show yet. Against the real sacct."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest

from campaign.backends import slurm_query as sq
from campaign.plumbing.clock import now
from campaign.plumbing.states import JobState
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm
DEADLINE_S = 120


def test_a_job_that_ended_before_the_submission_is_not_answered(
        slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    submitted = now()
    proc = subprocess.run(["sbatch", "--parsable", "-o", str(tmp_path / "out-%j"), "-D", str(tmp_path), "--wrap", "true"],
                          env=slurm_cluster.full_env(), capture_output=True, text=True, timeout=30, check=True)
    job = proc.stdout.strip().split(";")[0]
    deadline = time.monotonic() + DEADLINE_S
    while (got := sq.query_sacct([job], env=slurm_cluster.env, since=submitted)).get(job) is None \
            or not got[job].state.finished:
        assert time.monotonic() < deadline, got
        time.sleep(1)
    assert got[job].state is JobState.COMPLETED  # found from its own submission on
    assert got[job].end is not None
    monkeypatch.setattr(sq, "SINCE_SLACK", timedelta(0))
    later = max(now(), got[job].end.astimezone() + timedelta(seconds=2))
    while now() < later:  # sacct's times have whole seconds: a new submission strictly after its end
        time.sleep(0.2)
    assert sq.query_sacct([job], env=slurm_cluster.env, since=later) == {}
    assert job in sq.query_sacct([job], env=slurm_cluster.env)  # without the bound: every job that had the id
