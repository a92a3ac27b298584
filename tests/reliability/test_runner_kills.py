"""The job side killed outright: SIGKILL (or the OOM killer) to a local job's
runner, which cannot stop its kernel then. The kernel, in a session of its own,
measured on, orphaned, beside the next jobs, while `status` recorded the job
FAILED; now it gets SIGTERM when its runner dies (PR_SET_PDEATHSIG). Real
CLI, local backend, the fake kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import run_cli, sql_rows
from tests.reliability.test_crash_kills import _env
from tests.reliability.test_sigterm import _runs, _sleeping_submit


def _started(runs: Path, proc: subprocess.Popen[bytes]) -> dict[str, int]:
    """The runner's job.json once it names its kernel."""
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, "the job never started its kernel"
        for path in runs.glob("*/*/attempt-1/job.json"):
            start = json.loads(path.read_text())
            if "kernel_pid" in start:
                return start
        time.sleep(0.1)


def test_a_runner_killed_outright_takes_its_kernel_with_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    ledger, runs = tmp_path / "ledger.sqlite", tmp_path / "runs"
    argv = [*_sleeping_submit(ledger, "kill9", 600), f"campaign.workdir={runs}"]  # 600 s: outlives every wait
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start: dict[str, int] = {}
    try:
        start = _started(runs, proc)
        os.kill(start["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while _runs(start["kernel_pid"], "fake_kernel"):
            assert time.monotonic() < deadline, f"the kernel {start['kernel_pid']} still runs, its runner gone"
            time.sleep(0.1)
        assert proc.wait(timeout=120) == 3  # the job it waited for ended FAILED
    finally:
        if proc.poll() is None:
            proc.kill()
        if start and _runs(start["kernel_pid"], "fake_kernel"):
            os.kill(start["kernel_pid"], signal.SIGKILL)
    status = run_cli("--ledger", str(ledger), "status", env=env)
    assert status.returncode == 0, status.stderr
    [(state, reason)] = sql_rows(ledger, "SELECT state, reason FROM job_attempt")
    assert state == "FAILED" and reason.startswith("job process ended without an exit record"), reason
