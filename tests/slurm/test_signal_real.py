"""Jobs that a signal ended, on the real test Slurm: the ledger, `jobs` and
`show` say which signal, whether the job side's exit record says it (a
program killed by SIGSEGV: -11) or only Slurm does (the job side killed with
the program: srun's step 0:9; the batch shell killed: the job line's 0:9;
a job cancelled: its steps' 0:15). The parsing half, on sacct's verbatim
answers, is in tests/slurm/test_slurm_site_states.py."""

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
from tests.slurm.helpers import DONE_DEADLINE_S, POLL_S, _name, _overrides, _squeue
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]
# variant -> (state, exit code stored, what `jobs` and `show` name)
EXPECTED = {
    "segv": ("FAILED", -11, "SIGSEGV"),
    "killrunner": ("FAILED", -9, "SIGKILL"),
    "killbatch": ("FAILED", -9, "SIGKILL"),
    "sleep": ("CANCELLED", -15, "SIGTERM"),
}


def test_a_job_a_signal_ended_names_the_signal(
    tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    name = _name("signal")
    ledger = tmp_path / "l.sqlite"
    cancel_at_end(Ledger(ledger), name)
    env = {**slurm_cluster.env, **{k: os.environ[k] for k in ("CAMPAIGN_CONFIG_PATH", "CAMPAIGN_FAKE_KERNEL")}}

    def cli(*args: str) -> str:
        proc = run_cli("--ledger", str(ledger), *args, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    args = _overrides(
        tmp_path,
        name,
        "experiment=failures",
        f"experiment.sweeps.0.variants=[{','.join(EXPECTED)}]",
        "experiment.sweeps.0.partitions=[cpu]",
        "+experiment.sweeps.0.args={sleep: 120}",
    )
    cli("submit", *args)
    deadline = time.monotonic() + DONE_DEADLINE_S
    while True:
        rows = {r["variant"]: r for r in json.loads(cli("jobs", "--campaign", name, "--format", "json"))}
        sleeping = rows["sleep"]
        if sleeping["state"] == "RUNNING":
            # cancelled by someone else than campaign (an admin, the user's own scancel)
            subprocess.run(["scancel", sleeping["job_id"]], capture_output=True, timeout=30, check=True)
        if all(r["state"] not in ("PENDING", "RUNNING", "UNKNOWN") for r in rows.values()):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"jobs not done after {DONE_DEADLINE_S} s: {rows}; squeue: {_squeue()}")
        time.sleep(POLL_S)
    for variant, (state, code, signal) in EXPECTED.items():
        row = rows[variant]
        shown = json.loads(cli("show", "--no-sync", row["job_id"], "--format", "json"))
        assert (row["state"], shown["exit_code"]) == (state, code), (variant, row, shown)
        assert f"exit code: {code}, {signal}" in cli("show", "--no-sync", row["job_id"]), variant
        if state == "FAILED":
            assert row["reason"].startswith(f"exit {code}, {signal}"), row
