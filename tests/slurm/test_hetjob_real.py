"""A heterogeneous job on the real test Slurm (issue 24, item 9): sacct lists
it only as LEADER+0, LEADER+1, ...; query_states answers for the id sbatch
printed, while held and after it was cancelled."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from campaign.backends import slurm_query as sq
from campaign.states import JobState
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
        got: dict[str, sq.SlurmJobInfo] = {}
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
