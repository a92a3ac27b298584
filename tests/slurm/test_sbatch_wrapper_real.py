"""A site whose `sbatch` is a wrapper that prints a notice after Slurm's
own answer (quota, purge policy): campaign, on the real test Slurm, still
records the job id of every job it submitted, the arrays' and the
preflight job's alike, never an error for a job that was queued."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.slurm.helpers import _db, _name, _overrides, _stand_in

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def test_a_notice_after_sbatchs_answer_loses_no_job_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which("sbatch")
    assert real
    _stand_in(
        tmp_path,
        monkeypatch,
        "sbatch",
        f'"{real}" --hold "$@" || exit $?\necho "Note: /scratch is purged after 30 days"',
    )
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("wrapsb")
    try:
        rep = api.submit(_overrides(tmp_path, name, "experiment=preflight_native"), led)
        assert len(rep.submitted) == 2
        ids = [
            i
            for table in ("job_attempt", "preflight_step", "build_step")
            for (i,) in _db(led, f"SELECT job_id FROM {table}")
        ]
        assert len(ids) >= 3 and all(ids), ids  # two runs, the preflight, the build where the key was not built
        queued = _queued(name)
        assert set(ids) == queued, (ids, queued)  # each queued job is recorded under the id Slurm gave it
    finally:  # a job whose id was lost is not the ledger's to cancel: cancelled by its name here
        if left := sorted(_queued(name)):
            subprocess.run(["scancel", *left], timeout=30, check=False)


def _queued(name: str) -> set[str]:
    """The ids of the campaign's jobs that squeue lists (array tasks one by one)."""
    listed = subprocess.run(
        ["squeue", "-h", "-r", "-o", "%i|%j"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()
    return {i for i, _, job in (line.partition("|") for line in listed) if job.startswith(f"campaign:{name}:")}
