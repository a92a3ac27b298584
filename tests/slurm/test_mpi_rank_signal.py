"""A rank killed by a signal, on the real test Slurm: srun stops its peers
(SIGTERM, 143) and returns their code, but the job's reason leads with the
failing rank's own end (`exit 139, SIGSEGV`), never a SIGTERM that reads as
a cancel (docs/byob.md#mpi-programs)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _name

pytestmark = pytest.mark.slurm

KERNEL = """
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
EXPERIMENT = """{name: segv_rank_sweep, repeats: 1, warmup: 0, check: false, walltime_min: 2, sweeps: [{kernel: segv_rank,
  impls: [sh], variants: [plain], partitions: [multi], nodes: [2], ranks_per_node: [1], threads: [1]}]}
"""


def test_a_rank_killed_by_a_signal_leads_the_reason_not_the_launchers_sigterm(
    slurm_cluster: object, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    for folder, name, text in (
        ("kernel", "segv_rank.yaml", KERNEL),
        ("experiment", "segv_rank_sweep.yaml", EXPERIMENT),
    ):
        (tmp_path / "conf" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "conf" / folder / name).write_text(text)
    env = {**os.environ, "CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf")}
    env.pop("CAMPAIGN_LEDGER", None)
    led, name = tmp_path / "l.sqlite", _name("segv-rank")
    cancel_at_end(Ledger(led), name)
    proc = run_cli(
        "--ledger",
        str(led),
        "submit",
        "cluster=localslurm",
        "experiment=segv_rank_sweep",
        f"campaign.workdir={tmp_path / 'runs'}",
        f"campaign.name={name}",
        "--wait",
        env=env,
    )
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    jobs = run_cli("--ledger", str(led), "jobs", "--campaign", name, "--format", "json", env=env)
    [job] = json.loads(jobs.stdout)
    assert job["state"] == "FAILED", job
    assert job["reason"].startswith("exit 139, SIGSEGV: "), job["reason"]
    # the killed shell said nothing: the launcher's lines name the task
    assert "exited with 139, SIGSEGV: " in job["reason"] and "task 1: Exited with exit code 139" in job["reason"], job
