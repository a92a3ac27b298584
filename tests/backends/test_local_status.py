"""The local backend reads a job's state from the files its job side left
(job.json, exit.json) and from whether its process is alive, so any later
process can sync it (campaign/backends/local.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from campaign.backends.base import JobRef
from campaign.backends.local import LocalBackend
from campaign.config import load_config
from campaign.job.files import EXIT_FILE, START_FILE
from campaign.plumbing.states import JobState


def _backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(load_config(["cluster=local"]).cluster, tmp_path)


def _ref(workdir: Path, job_id: str = "999999999", walltime_min: int = 10) -> JobRef:
    return JobRef(1, job_id, str(workdir), datetime.now(UTC), walltime_min)


def _start(workdir: Path, pid: int, started: datetime) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / START_FILE).write_text(json.dumps({"pid": pid, "host": "node1", "started": started.isoformat()}))


def test_exit_record_zero_is_completed_nonzero_failed(tmp_path: Path) -> None:
    for code, state in ((0, JobState.COMPLETED), (3, JobState.FAILED)):
        wd = tmp_path / f"c{code}"
        _start(wd, os.getpid(), datetime.now(UTC))
        (wd / EXIT_FILE).write_text(json.dumps({"exit_code": code, "ended": datetime.now(UTC).isoformat()}))
        st = _backend(tmp_path).query([_ref(wd)]).statuses[1]
        assert st.state is state and st.exit_code == code and st.node == "node1"
        assert (st.reason is None) == (code == 0)


def test_live_process_without_exit_record_is_running(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _start(tmp_path, proc.pid, datetime.now(UTC))
        st = _backend(tmp_path).query([_ref(tmp_path)]).statuses[1]
        assert st.state is JobState.RUNNING and st.started_at is not None
    finally:
        proc.kill()
        proc.wait()


def test_dead_process_past_walltime_is_timeout_before_it_failed(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    old = tmp_path / "old"
    _start(old, proc.pid, datetime.now(UTC) - timedelta(minutes=11))
    assert _backend(tmp_path).query([_ref(old)]).statuses[1].state is JobState.TIMEOUT
    fresh = tmp_path / "fresh"
    _start(fresh, proc.pid, datetime.now(UTC))
    st = _backend(tmp_path).query([_ref(fresh)]).statuses[1]
    assert st.state is JobState.FAILED and "without an exit record" in (st.reason or "")


def test_never_started_and_no_controller_is_failed(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    st = _backend(tmp_path).query([_ref(empty)]).statuses[1]
    assert st.state is JobState.FAILED and "never started" in (st.reason or "")


def test_deleted_job_folder_is_lost_output_not_failed(tmp_path: Path) -> None:
    st = _backend(tmp_path).query([_ref(tmp_path / "deleted")]).statuses[1]
    assert st.state is JobState.LOST_OUTPUT and "is gone" in (st.reason or "")
