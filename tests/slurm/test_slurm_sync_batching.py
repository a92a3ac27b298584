"""Sync of many held jobs costs one sacct call (the real test Slurm)."""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign import api
from campaign.backends import slurm_query as sq
from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from tests.slurm.helpers import _all_finished, _attempts, _calls, _name, _overrides, _shim, _sync_until

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


@pytest.mark.serial  # it bounds the sync's wall time: alone, where no other worker's load disturbs it
def test_sync_of_many_jobs_uses_batched_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """24 jobs held back (--begin a year ahead: sbatch's --hold takes no value,
    so sbatch_extra cannot express it); one sync must cost one sacct call, and
    the tasks of a pending array must still get their state from it."""
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("sacct")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_array",
                                "+cluster.partitions.cpu.sbatch_extra={begin: now+365days}"), led)
    n = len(rep.submitted)
    assert n == 24
    rows = _attempts(led)
    sacct_log = _shim(tmp_path, monkeypatch, "sacct")
    t0 = time.perf_counter()
    rep = api.sync(led, name)
    elapsed = time.perf_counter() - t0
    calls = _calls(sacct_log)
    assert 1 <= len(calls) <= math.ceil(n / 1000), calls
    assert rep.counts == {"PENDING": 24}, rep.counts
    assert elapsed < 10, elapsed
    # a pending array is visible to sacct only as 1234_[0-23]: the tasks are
    # asked for through their array, and every one of them is answered
    deadline = time.monotonic() + 30
    while True:  # the submit record reaches slurmdbd a moment after sbatch answers
        answered = sq.query_sacct([r["job_id"] for r in rows])
        if answered or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert sorted(answered) == sorted(r["job_id"] for r in rows)
    assert {i.state for i in answered.values()} == {JobState.PENDING}
    # cancelled behind campaign's back before any task started: sync still learns it
    subprocess.run(["scancel", rows[0]["array_job_id"]], check=True, timeout=60)
    rep = _sync_until(led, name, _all_finished, deadline_s=60)
    assert rep.counts == {"CANCELLED": 24}


# ----------------------------------------------------------------- b. failure classes, reruns, lineage
