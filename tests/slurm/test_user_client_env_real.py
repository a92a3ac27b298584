"""A user's SBATCH_*, SQUEUE_* and SCANCEL_* variables on the real test Slurm.

Slurm's clients read their options from such variables too, and for sbatch
they win over the script's `#SBATCH` lines (sbatch(1): "Environment
variables will override any options set in a batch script"). A profile that
sets SBATCH_PARTITION or SBATCH_ARRAY_INX would send campaign's jobs where
the ledger does not say, or as other arrays; a SQUEUE_PARTITION or
SCANCEL_PARTITION filter would hide the jobs from a cancel, or spare them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from campaign import api
from campaign.backends.base import JobRef
from campaign.backends.slurm_cancel import cancel_and_wait
from campaign.backends.slurm_run import run_slurm
from campaign.ledger import Ledger
from tests.slurm.helpers import _db, _name, _overrides, _stand_in
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]

USERS_SBATCH = {
    "SBATCH_PARTITION": "short",
    "SBATCH_TIMELIMIT": "1",
    "SBATCH_ARRAY_INX": "0-4",
    "SBATCH_JOB_NAME": "not-campaigns",
    "SBATCH_OUTPUT": "/tmp/not-campaigns-%j.out",
}


def _clean() -> dict[str, str]:
    """The test's own view of the queue: no filter of the user's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SQUEUE_", "SCANCEL_"))}


def _shown(job_id: str) -> dict[str, str]:
    proc = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], env=_clean(), capture_output=True, text=True, timeout=30, check=True
    )
    first = proc.stdout.splitlines()[0]
    return dict(word.split("=", 1) for word in first.split() if "=" in word)


def test_the_users_sbatch_variables_never_override_campaigns_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.which("sbatch")
    assert real
    _stand_in(tmp_path, monkeypatch, "sbatch", f'exec "{real}" --hold "$@"')  # nothing needs to run
    for key, value in USERS_SBATCH.items():
        monkeypatch.setenv(key, value)
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("userenv")
    try:
        rep = api.submit(_overrides(tmp_path, name, "experiment=preflight_native"), led)
        assert len(rep.submitted) == 2
        tasks = [i for (i,) in _db(led, "SELECT job_id FROM job_attempt")]
        steps = [i for t in ("preflight_step", "build_step") for (i,) in _db(led, f"SELECT job_id FROM {t}")]
        assert sorted(t.split("_")[1] for t in tasks) == ["0", "1"]
        for job_id in [*tasks, *steps]:
            job = _shown(job_id)
            assert job["Partition"] == "cpu", job  # where the ledger says it runs
            assert job["JobName"].startswith(f"campaign:{name}:"), job  # found again by it after a crash
            assert job["TimeLimit"] != "00:01:00" and str(tmp_path) in job["StdOut"], job
        array = _shown(tasks[0])["ArrayJobId"]
        shown = _shown(array)["ArrayTaskId"].split("%")[0]  # (campaign's throttle after the %)
        assert shown in ("0-1", "0,1"), shown  # the array campaign wrote, no more
    finally:
        listed = subprocess.run(
            ["squeue", "-h", "-o", "%i|%j"], env=_clean(), capture_output=True, text=True, timeout=30, check=True
        ).stdout.splitlines()
        mine = [  # an array by its base id: scancel refuses squeue's "7792_[0-1%2]"
            i.split("_")[0]
            for i, _, job in (line.partition("|") for line in listed)
            if name in job or job == "not-campaigns"
        ]
        if mine:
            subprocess.run(["scancel", *mine], env=_clean(), timeout=30, check=False)


def test_the_users_squeue_and_scancel_filters_neither_hide_nor_spare_a_job(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = subprocess.run(
        ["sbatch", "--parsable", "--hold", "-p", "cpu", "-t", "1", "--mem=50M", "-J", "campaign-test-filter"]
        + ["-o", "/dev/null", "--wrap", "true"],
        env=_clean(),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    job_id = proc.stdout.strip().split(";")[0]
    monkeypatch.setenv("SQUEUE_PARTITION", "gpu")
    monkeypatch.setenv("SQUEUE_STATES", "RUNNING")
    monkeypatch.setenv("SCANCEL_PARTITION", "gpu")
    try:
        cancel_and_wait({None: [JobRef(1, job_id, str(tmp_path), None, 1)]}, 60.0)
        left = subprocess.run(
            ["squeue", "-h", "-t", "PENDING,RUNNING", "-o", "%i", "-j", job_id],
            env=_clean(),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.split()
        assert job_id not in left  # cancelled, as cancel said
    finally:
        subprocess.run(["scancel", job_id], env=_clean(), timeout=30, check=False)


@pytest.mark.parametrize(
    ("script_lines", "kept"),
    [
        ("", {"SBATCH_ACCOUNT=bbka-delta-gpu", "SBATCH_QOS=normal"}),  # site defaults the config leaves unset
        ("#SBATCH --account=abcd-delta-cpu\n#SBATCH --qos=debug\n", set()),  # the config names them: its own win
        ("#SBATCH -A abcd-delta-cpu\n", {"SBATCH_QOS=normal"}),
    ],
)
def test_only_a_site_default_the_script_leaves_unset_reaches_sbatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script_lines: str, kept: set[str]
) -> None:
    _stand_in(tmp_path, monkeypatch, "sbatch", "env | grep '^SBATCH_' || true")  # shows what sbatch would read
    monkeypatch.setenv("SBATCH_ACCOUNT", "bbka-delta-gpu")
    monkeypatch.setenv("SBATCH_QOS", "normal")
    monkeypatch.setenv("SBATCH_PARTITION", "short")
    script = tmp_path / "job.sbatch"
    script.write_text(f"#!/bin/bash\n{script_lines}#SBATCH --partition=cpu\ntrue\n")
    proc = run_slurm(["sbatch", "--parsable", str(script)])
    assert set(proc.stdout.split()) == kept


def test_the_users_srun_variables_never_reach_the_job(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sbatch exports its environment to the job, where the sruns of a launched run read SLURM_* options:
    a profile's binding, or the allocation of an salloc that campaign was started in, would size and bind the
    ranks otherwise than the run says. The job sees Slurm's own for its allocation; SLURM_CONF still works."""
    theirs = {
        "SLURM_CPU_BIND": "map_cpu:0",
        "SLURM_HINT": "nomultithread",
        "SLURM_DISTRIBUTION": "cyclic",
        "SLURM_NTASKS": "7",
        "SLURM_MEM_PER_NODE": "12345",
    }
    for key, value in theirs.items():
        monkeypatch.setenv(key, value)
    seen = tmp_path / "env.txt"
    script = tmp_path / "job.sbatch"
    script.write_text(
        f"#!/bin/bash\n#SBATCH --partition=cpu\n#SBATCH --time=1\n#SBATCH --mem=50M\n"
        f"#SBATCH --output=/dev/null\nenv > {seen}.part && mv {seen}.part {seen}\n"
    )
    proc = run_slurm(["sbatch", "--parsable", str(script)])
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 180
        while not seen.exists():  # the job's own record of its environment, written whole
            assert time.monotonic() < deadline, f"job {job_id} wrote no environment"
            time.sleep(0.2)
        env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    finally:
        subprocess.run(["scancel", job_id], env=_clean(), timeout=30, check=False)
    assert env["SLURM_JOB_ID"] == job_id  # Slurm's own variables for the job
    assert not {k for k in theirs if env.get(k) == theirs[k]}, {k: env.get(k) for k in theirs}
