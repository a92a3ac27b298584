"""A user's own Slurm settings must not change what campaign reads.

Sites and users set SLURM_TIME_FORMAT (``relative``, ``%s``, a local
``%d.%m. %H:%M``) in their shell profiles, and every Slurm client then prints
its times that way: a Start of ``06:07:03`` or ``1796623623``, which no ISO
parser reads. The job's start and end, and the shared-node check's jobs, must
come out the same under any of them."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta

import pytest

from campaign.backends import slurm_nodes
from campaign.backends import slurm_query as sq
from campaign.backends.base import NodeJob
from campaign.backends.slurm_fields import SlurmJobInfo
from campaign.plumbing.states import JobState
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm


def _node_jobs(cluster: SlurmCluster, info: SlurmJobInfo) -> list[NodeJob]:
    assert info.node is not None and info.start is not None and info.end is not None
    return [
        j
        for j in slurm_nodes.query_node_jobs(
            [info.node], info.start - timedelta(seconds=1), info.end + timedelta(seconds=1), env=cluster.env
        )
        if j.job_id == info.job_id
    ]


@pytest.fixture(scope="module")
def finished_job(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A job that ended, once sacct shows it by id and by node (the node's record comes a moment later)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SLURM_TIME_FORMAT", raising=False)
        return _finished_job(slurm_cluster, tmp_path_factory)


def _finished_job(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("site_env")
    proc = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "-p",
            "short",
            "-c",
            "1",
            "--mem=50M",
            "-t",
            "1",
            "-o",
            str(work / "out"),
            "--wrap",
            "true",
        ],
        env=slurm_cluster.full_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 240
    while True:
        got = sq.query_sacct([job_id], env=slurm_cluster.env)
        if (
            job_id in got
            and got[job_id].state.finished
            and got[job_id].end is not None
            and _node_jobs(slurm_cluster, got[job_id])
        ):
            return job_id
        assert time.monotonic() < deadline, f"job {job_id} did not finish: {got}"
        time.sleep(1)


@pytest.mark.parametrize("time_format", ["relative", "%s", "%d.%m. %H:%M", "standard"])
def test_times_read_the_same_under_any_slurm_time_format(
    slurm_cluster: SlurmCluster, finished_job: str, time_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLURM_TIME_FORMAT", raising=False)
    plain = sq.query_sacct([finished_job], env=slurm_cluster.env)[finished_job]
    assert plain.state is JobState.COMPLETED and plain.start is not None and plain.end is not None
    monkeypatch.setenv("SLURM_TIME_FORMAT", time_format)
    got = sq.query_sacct([finished_job], env=slurm_cluster.env)[finished_job]
    assert (got.state, got.start, got.end, got.node) == (plain.state, plain.start, plain.end, plain.node)
    mine = _node_jobs(slurm_cluster, plain)
    assert len(mine) == 1, mine  # a job whose Start nobody could read held no CPUs: it was left out
    assert (mine[0].start, mine[0].end) == (plain.start, plain.end)
