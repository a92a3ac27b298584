"""Finding a submitted job again by its job name once it has ended, before
accounting has it: a job of a few seconds that a killed submitter's sbatch
started may end before the rerun looks, and slurmdbd records it a moment
later. Seen under load: the rerun found it neither queued nor in sacct and
sent the runs again, two jobs per run. The real Slurm runs the job; sacct is
played by an empty answer first on PATH (accounting that has not caught up)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from campaign.backends.slurm_manifest import _find_by_name
from tests.slurm_cluster import SlurmCluster


@pytest.mark.slurm
def test_a_job_that_ended_before_accounting_has_it_is_found_by_name(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"campaign:it-ended-{uuid.uuid4().hex[:6]}:m1"
    out = subprocess.run(
        ["sbatch", "--parsable", "-p", "cpu", "-J", name, "-o", str(tmp_path / "%j.out"), "--wrap", "true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    job = out.split(";")[0]
    deadline = time.monotonic() + 120
    while True:  # ended, as the controller says
        state = subprocess.run(
            ["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if state and state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            break
        assert time.monotonic() < deadline, f"job {job} still {state or 'unknown'}"
        time.sleep(0.2)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sacct").write_text("#!/bin/sh\nexit 0\n")  # accounting that has not recorded the job yet
    (fake / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    assert _find_by_name(name, time.time()) == (job, None)
