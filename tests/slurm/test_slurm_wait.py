"""`campaign submit --wait` on the real test Slurm: it submits, then watches
the jobs it submitted (batched sacct each round) until none is pending or
running, prints one line per state change into a pipe, and exits 3 because
one job failed on purpose."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _name, _overrides
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def test_submit_wait_watches_until_done_and_exits_3(tmp_path: Path, slurm_cluster: SlurmCluster,
                                                     cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("wait")
    ledger = tmp_path / "l.sqlite"
    cancel_at_end(Ledger(ledger), name)  # if the test fails before the jobs end: the cluster is shared
    args = _overrides(tmp_path, name, "experiment=failures", "experiment.sweeps.0.variants=ok,exit3",
                      "experiment.sweeps.0.partitions=cpu")
    env = {**slurm_cluster.env, **{k: os.environ[k] for k in ("CAMPAIGN_CONFIG_PATH", "CAMPAIGN_FAKE_KERNEL")}}
    proc = run_cli("--ledger", str(ledger), "submit", *args, "--wait", "--interval", "1", cwd=tmp_path, env=env,
                   timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith(f"campaign {name}: 2 runs") for line in lines), lines
    assert any("fake/py/exit3" in line and "FAILED" in line for line in lines), lines
    assert lines[-1] == "done: COMPLETED 1, FAILED 1"
    con = sqlite3.connect(ledger)
    states = sorted(s for (s,) in con.execute("SELECT state FROM job_attempt"))
    con.close()
    assert states == ["COMPLETED", "FAILED"]
