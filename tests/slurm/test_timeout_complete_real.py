"""A job that wrote every n and then hung until Slurm's TIMEOUT is COMPLETED,
shown so, and `rerun --failed --time-factor 2` sends nothing (the local
CANCELLED half is tests/truth/test_stopped_but_complete.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _all_finished, _db, _name, _overrides, _sync_until
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def test_timeout_after_every_n_is_complete_and_not_rerun(
        tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("late-timeout")
    led = Ledger(tmp_path / "l.sqlite")
    cancel_at_end(led, name)
    env = {**slurm_cluster.env, **{k: os.environ[k] for k in ("CAMPAIGN_CONFIG_PATH", "CAMPAIGN_FAKE_KERNEL")}}
    args = _overrides(tmp_path, name, "experiment=failures", "experiment.sweeps.0.variants=[linger]",
                      "experiment.sweeps.0.partitions=[short]", "experiment.walltime_min=1",
                      "+experiment.sweeps.0.args.sleep=300")
    sub = run_cli("--ledger", str(led.path), "submit", *args, cwd=tmp_path, env=env)
    assert sub.returncode == 0, sub.stderr
    _sync_until(led, name, _all_finished)
    (row,) = json.loads(run_cli("--ledger", str(led.path), "jobs", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert row["state"] == "COMPLETED", row
    assert row["reason"] == "ended TIMEOUT after writing every n: counted complete"
    shown = run_cli("--ledger", str(led.path), "show", "--no-sync", row["job_id"], cwd=tmp_path, env=env).stdout
    assert "state: COMPLETED  (ended TIMEOUT after writing every n" in shown
    again = run_cli("--ledger", str(led.path), "rerun", name, "--failed", "--time-factor", "2", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert _db(led, "SELECT count(*) FROM job_attempt") == [(1,)]  # nothing sent again
    assert _db(led, "SELECT count(*) FROM result") == [(4,)]  # n 64 and 128, 2 repeats each
