"""Launched ranks and signals, on the real test Slurm: a rank killed by a
signal leads the job's reason with its own end (`exit 139, SIGSEGV`), not the
SIGTERM srun then sent its peers; the USR2 Slurm sends before the walltime
leaves the ranks running (docs/byob.md#mpi-programs)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _name

pytestmark = pytest.mark.slurm

SEGV = """
name: segv_rank
driven_by: tool
impls:
  sh:
    script: |
      if [ "$RANK" = 1 ]; then kill -SEGV $$; fi
      exec sleep 30
    variants: [plain]
    launched: true
figures:
  - {name: time, regex: 'time: ([0-9.]+) s', unit: s}
"""
SEGV_SWEEP = """{name: segv_rank_sweep, repeats: 1, warmup: 0, check: false, walltime_min: 2, sweeps: [{kernel: segv_rank,
  impls: [sh], variants: [plain], partitions: [multi], nodes: [2], ranks_per_node: [1], threads: [1]}]}
"""


def _submit(
    tmp_path: Path, kernel: str, sweep: str, cancel_at_end: Callable[[Ledger, str], None], *wait: str
) -> tuple[Callable[..., list[dict]], int]:
    """The kernel `kernel` and the sweep `<kernel>_sweep` written to a config folder and submitted
    on the test Slurm; the campaign's jobs (`jobs --format json`) and submit's exit code."""
    for folder, name, text in (("kernel", kernel, KERNELS[kernel]), ("experiment", f"{kernel}_sweep", sweep)):
        (tmp_path / "conf" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "conf" / folder / f"{name}.yaml").write_text(text)
    env = {**os.environ, "CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf")}
    env.pop("CAMPAIGN_LEDGER", None)
    led, camp = str(tmp_path / "l.sqlite"), _name(kernel.replace("_", "-"))
    proc = run_cli(
        "--ledger",
        led,
        "submit",
        "cluster=localslurm",
        f"experiment={kernel}_sweep",
        f"campaign.workdir={tmp_path / 'runs'}",
        f"campaign.name={camp}",
        *wait,
        env=env,
    )
    cancel_at_end(Ledger(led), camp)

    def jobs(*wait: str) -> list[dict]:
        """The campaign's jobs, after `status --wait` where asked."""
        if wait:
            run_cli("--ledger", led, "status", camp, *wait, env=env)
        return json.loads(run_cli("--ledger", led, "jobs", "--campaign", camp, "--format", "json", env=env).stdout)

    return jobs, proc.returncode


def test_a_rank_killed_by_a_signal_leads_the_reason_not_the_launchers_sigterm(
    slurm_cluster: object, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    jobs, code = _submit(tmp_path, "segv_rank", SEGV_SWEEP, cancel_at_end, "--wait")
    assert code == 3
    [job] = jobs()
    assert job["state"] == "FAILED", job
    assert job["reason"].startswith("exit 139, SIGSEGV: "), job["reason"]
    # the killed shell said nothing: the launcher's lines name the task
    assert "exited with 139, SIGSEGV: " in job["reason"] and "task 1: Exited with exit code 139" in job["reason"], job


USR2 = """
name: usr2_rank
driven_by: tool
impls:
  sh:
    script: |
      touch "started.$RANK"
      sleep 8
      echo "time: 0.5 s"
    variants: [plain]
    launched: true
figures:
  - {name: time, regex: 'time: ([0-9.]+) s', unit: s}
"""
USR2_SWEEP = """{name: usr2_rank_sweep, repeats: 1, warmup: 0, check: false, walltime_min: 5, sweeps: [{kernel:
  usr2_rank, impls: [sh], variants: [plain], partitions: [multi], nodes: [2], ranks_per_node: [1], threads: [1]}]}
"""


def test_the_usr2_before_the_walltime_leaves_the_launched_ranks_running(
    slurm_cluster: object, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """Slurm sends submitit's USR2 (--signal=USR2@90) to every step's processes: the
    job ignores it, and so must each launched rank, or a run that would end at its
    walltime (TIMEOUT) fails of SIGUSR2 90 s early. `scancel -s USR2` sends it to the
    job's steps as that does."""
    jobs, code = _submit(tmp_path, "usr2_rank", USR2_SWEEP, cancel_at_end)
    assert code == 0
    [job] = jobs()
    deadline = time.monotonic() + 240
    while len(list((tmp_path / "runs").rglob("started.*"))) < 2:  # both ranks' programs are running
        assert time.monotonic() < deadline, "the ranks never started"
        time.sleep(0.2)
    sent = subprocess.run(["scancel", "--signal=USR2", job["job_id"]], capture_output=True, text=True, check=False)
    assert sent.returncode == 0, sent.stderr
    [job] = jobs("--wait")
    assert job["state"] == "COMPLETED", job


KERNELS = {"segv_rank": SEGV, "usr2_rank": USR2}
