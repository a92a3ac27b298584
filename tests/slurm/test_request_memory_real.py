"""Requests a site accepts, on the real test Slurm.

The test node declares RealMemory=512000 MB (.ci/slurm-up.sh). A partition
whose nominal memory is above that (as a site's hardware table can be:
DIMMs, not what Slurm offers) used to get a request of its whole nominal
memory: sbatch takes it, and the job pends for ever with reason
BadConstraints. The request is now capped at what a node lets a job ask
(docs/sites.md#memory-a-job-may-ask). The job is submitted held (so that it
never takes the shared node's memory for long), released, and Slurm must
not find it unschedulable. Its accounting record carries no submitit wckey
and names the campaign.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign import api
from campaign.config import load_config
from campaign.ledger import Ledger
from campaign.planning.resources import MEM_HEADROOM
from tests.slurm.helpers import _attempts, _name, _overrides

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _real_memory_mb() -> int:
    out = subprocess.run(["scontrol", "-o", "show", "node"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    return min(int(word.split("=", 1)[1]) for word in out.split() if word.startswith("RealMemory="))


def test_a_wide_memory_share_is_capped_to_what_the_node_offers(
        tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    real_mb = _real_memory_mb()
    nominal_gb = real_mb * 2**20 / 1e9 * 1.01  # the hardware table's figure: above what Slurm offers
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("memcap")
    cancel_at_end(led, name)
    extra = [f"cluster.partitions.cpu.memory_gb={nominal_gb:.3f}",
             f"cluster.partitions.cpu.mem_per_core_gb={nominal_gb:.3f}",  # one core's share: the whole node
             "experiment=slurm_threads", "experiment.sweeps.0.threads=[1]"]
    part = load_config(_overrides(tmp_path, name, *extra)).cluster.partitions["cpu"]
    assert part.usable_mem_gb is None  # the 5% default applies
    held = "+cluster.partitions.cpu.sbatch_extra={hold:true}"
    rep = api.submit(_overrides(tmp_path, name, *extra, held), led)
    assert len(rep.submitted) == 1
    (att,) = _attempts(led)
    asked_mib = round(att["mem_gb"] * 1024)
    assert asked_mib <= real_mb
    assert asked_mib == int(float(f"{nominal_gb:.3f}") * (1 - MEM_HEADROOM) * 1e9 / 2**20)
    job_id = att["job_id"]
    deadline = time.monotonic() + 60
    while True:  # slurmdbd records a new job within seconds
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "JobName%200,WCKey,ReqMem"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        if out.strip() or time.monotonic() > deadline:
            break
        time.sleep(1)
    job_name, wckey, req_mem = out.splitlines()[0].split("|")
    assert job_name.startswith(f"campaign:{name}:") and wckey == "", out  # no `--wckey=submitit`
    assert req_mem == f"{asked_mib}M", out
    subprocess.run(["scontrol", "release", job_id], capture_output=True, text=True, timeout=60, check=True)
    deadline = time.monotonic() + 60
    while True:  # until the scheduler has looked at it: started, or pending for a reason of its own
        proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T %r"], capture_output=True, text=True,
                              timeout=60, check=False)
        state, _, reason = (proc.stdout.strip() or "GONE -").partition(" ")
        if state != "PENDING" or reason not in ("JobHeldUser", "None"):
            break
        assert time.monotonic() < deadline, f"job {job_id} not looked at by the scheduler: {proc.stdout}"
        time.sleep(1)
    assert reason != "BadConstraints", f"job {job_id} can never be scheduled: {state} {reason}"
