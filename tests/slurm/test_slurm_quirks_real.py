"""Two sacct quirks on the real test Slurm. A heterogeneous job: sacct lists
it only as LEADER+0, LEADER+1, ...; query_states answers for the id sbatch
printed, while held and after it was cancelled. A job that waited on another
runs with sacct's Reason still `Dependency`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from campaign.backends import slurm_fields
from campaign.backends import slurm_query as sq
from campaign.plumbing.states import JobState
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm


def test_a_held_then_cancelled_hetjob_is_answered_under_its_leader(slurm_cluster: SlurmCluster,
                                                                   tmp_path: Path) -> None:
    script = tmp_path / "het.sh"
    script.write_text("#!/bin/bash\n#SBATCH -c 1 --mem=50M -t 1\n#SBATCH hetjob\n#SBATCH -c 1 --mem=50M -t 1\n"
                      "true\n")
    proc = subprocess.run(["sbatch", "--parsable", "--hold", "-J", "campaign-test-het", "-o", "/dev/null",
                           str(script)], env=slurm_cluster.full_env(), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    leader = proc.stdout.strip().split(";")[0]
    try:
        got: dict[str, slurm_fields.SlurmJobInfo] = {}
        for _ in range(30):  # the records reach slurmdbd a moment after sbatch
            got, _warnings = sq.query_states([leader], env=slurm_cluster.env)
            if leader in got:
                break
            time.sleep(1)
        assert leader in got and got[leader].state is JobState.PENDING, got
        assert not [k for k in got if "+" in k]
    finally:
        subprocess.run(["scancel", leader], env=slurm_cluster.full_env(), timeout=30, check=False)
    for _ in range(30):
        got, _warnings = sq.query_states([leader], env=slurm_cluster.env)
        if leader in got and got[leader].state.finished:
            break
        time.sleep(1)
    assert got[leader].state is JobState.CANCELLED and got[leader].end is not None, got


def test_a_pending_reason_does_not_outlive_pending_on_the_real_cluster(slurm_cluster: SlurmCluster) -> None:
    """A job that waited on another runs with sacct's
    Reason still `Dependency` (Slurm 22.05); `status` must not carry it past
    PENDING (`show` printed `RUNNING (Dependency)`)."""
    env = slurm_cluster.full_env()

    def sbatch(*args: str) -> str:
        proc = subprocess.run(["sbatch", "--parsable", "-c", "1", "--mem=50M", "-t", "2", "-o", "/dev/null", *args],
                              env=env, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().split(";")[0]

    first = sbatch("-J", "campaign-test-dep-a", "--wrap", "sleep 1")
    second = sbatch("-J", "campaign-test-dep-b", f"--dependency=afterok:{first}", "--wrap", "sleep 30")
    try:
        seen: list[tuple[JobState, str | None, str]] = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # until sacct's own job line says RUNNING (not only its step)
            got, _warnings = sq.query_states([second], env=slurm_cluster.env)
            raw = subprocess.run(["sacct", "-X", "-n", "-P", "-j", second, "-o", "State,Reason"], env=env,
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            if second in got:
                seen.append((got[second].state, got[second].reason, raw))
                if got[second].state is JobState.RUNNING and raw.startswith("RUNNING|"):
                    break
            time.sleep(1)
        assert seen and seen[-1][0] is JobState.RUNNING and seen[-1][2].startswith("RUNNING|"), seen
        # the test cluster prints RUNNING|Dependency here: the quirk this guards against
        assert all(reason is None for state, reason, _ in seen if state is not JobState.PENDING), seen
    finally:
        subprocess.run(["scancel", first, second], env=env, timeout=30, check=False)
