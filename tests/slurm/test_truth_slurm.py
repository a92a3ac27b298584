"""On the real test Slurm, cancel returns once the kernel and the
child it started are gone; a TIMEOUT keeps the rows of the n it finished and a
rerun runs only the missing n."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign import api
from campaign.job.procs import group_members
from campaign.ledger import Ledger
from tests.slurm.helpers import _all_finished, _attempts, _db, _name, _overrides, _sync_until
from tests.truth.helpers import pid_alive

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _running_kernel(workdir: Path, deadline_s: float = 180) -> tuple[int, int]:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            kernel = json.loads((workdir / "job.json").read_text())["kernel_pid"]
            return kernel, int((workdir / "results.csv.child").read_text())
        except (OSError, KeyError, ValueError):
            time.sleep(0.5)
    raise AssertionError(f"the kernel in {workdir} did not start within {deadline_s} s")


def test_cancel_stops_kernel_timeout_keeps_finished_n_rerun_completes(
        tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("truth")
    cancel_at_end(ledger, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_truth"), ledger)
    assert len(rep.submitted) == 2
    timed_att, cancelled_att = _attempts(ledger)  # in plan order: the 8-n job, then the 2-n one
    kernel, child = _running_kernel(Path(cancelled_att["workdir"]))
    assert group_members(kernel) and pid_alive(child)
    api.cancel(ledger, cancelled_att["job_id"])
    assert group_members(kernel) == [] and not pid_alive(child)  # nothing left once cancel returned
    assert _db(ledger, "SELECT state FROM job_attempt WHERE id = ?", cancelled_att["id"]) == [("CANCELLED",)]

    _sync_until(ledger, name, _all_finished)
    timed = timed_att["id"]
    (state, missing_text), = _db(ledger, "SELECT state, missing_n FROM job_attempt WHERE id = ?", timed)
    done = sorted(n for (n,) in _db(ledger, "SELECT n FROM result WHERE attempt_id = ?", timed))
    missing = json.loads(missing_text)
    assert state == "TIMEOUT" and done and missing, (done, missing)
    assert sorted(done + missing) == [64, 128, 256, 512, 1024, 2048, 4096, 8192]

    again = api.rerun(ledger, name, states=["TIMEOUT"], time_factor=3)
    assert len(again.submitted) == 1
    _sync_until(ledger, name, _all_finished)
    (new_id, new_state, new_n, wall), = _db(ledger, "SELECT id, state, n, walltime_min FROM job_attempt "
                                                   "WHERE previous_id = ?", timed)
    assert new_state == "COMPLETED" and json.loads(new_n) == missing and wall == 3
    ran = sorted(n for (n,) in _db(ledger, "SELECT n FROM result WHERE attempt_id = ?", new_id))
    assert ran == missing  # only the rest ran; together they cover every n
