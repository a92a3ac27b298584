"""On the real test Slurm, `submit --wait` while the build/preflight
chain holds the runs shows the step they wait on, its state and Slurm's
reason (not only "PENDING 2"); when the chain fails, the cause (the failing
`module load` line) is printed, once, as `status` prints it.

The jobs are submitted held (sbatch --hold, through the partition's
sbatch_extra), so the test sees the chain pending for certain, then releases
them; the test node has no `module` command, so the build fails there."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import CAMPAIGN
from tests.slurm.helpers import _db, _name, _overrides
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]

MISSING_MODULE = "nosuch-compiler/0.0"


def test_submit_wait_names_the_pending_chain_then_the_failure_cause_once(
        tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    name = _name("watchpf")
    ledger = tmp_path / "l.sqlite"
    cancel_at_end(Ledger(ledger), name)
    args = _overrides(tmp_path, name, "experiment=preflight_native", f"cluster.modules=[{MISSING_MODULE}]",
                      "+cluster.partitions.cpu.sbatch_extra={hold:true}")
    env = {**os.environ, **slurm_cluster.env, "PYTHONUNBUFFERED": "1"}
    env.pop("CAMPAIGN_DEBUG", None)
    proc = subprocess.Popen([str(CAMPAIGN), "--ledger", str(ledger), "submit", *args, "--wait", "--interval", "0.5"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    got: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # readline blocks; the test waits on the queue with a deadline instead
        assert proc.stdout is not None
        for line in proc.stdout:
            got.put(line.rstrip("\n"))
        got.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:  # the held chain as the watch shows it, once Slurm gave its reason
            try:
                line = got.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            lines.append(line)
            if "partition cpu: build job" in line and "(JobHeldUser)" in line:
                break
        chain = [line for line in lines if f"{name} partition cpu: build job" in line and "JobHeldUser" in line]
        assert chain, lines
        (build_id,), = _db(Ledger(ledger), "SELECT job_id FROM build_step")
        (pre_id,), = _db(Ledger(ledger), "SELECT job_id FROM preflight_step")
        assert f"build job {build_id} PENDING (JobHeldUser) -> preflight job {pre_id} PENDING" in chain[0], chain
        assert "2 run(s) wait on it" in chain[0]
        ids = {build_id, pre_id} | {a for (a,) in _db(Ledger(ledger), "SELECT DISTINCT array_job_id FROM job_attempt")}
        subprocess.run(["scontrol", "release", ",".join(sorted(ids))], env=env, check=True, timeout=60,
                       capture_output=True)
        proc.wait(timeout=240)
        reader.join(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    while not got.empty():
        line = got.get()
        if line is not None:
            lines.append(line)
    assert proc.stderr is not None
    err = proc.stderr.read()
    text = "\n".join(lines)
    assert proc.returncode == 3, text + err
    cause = f"PREFLIGHT_FAILED {name} partition cpu: build job {build_id} FAILED"
    assert text.count(cause) == 1, text
    assert text.count(f"module load {MISSING_MODULE}") == 1, text  # the log tail names the failing line
    assert lines[-1] == "done: PREFLIGHT_FAILED 2", lines
