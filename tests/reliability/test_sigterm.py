"""SIGTERM (`kill`) and SIGHUP (a closed terminal or ssh session) stop a command
as Ctrl-C does: one line saying so, the shell's exit code for the signal (143,
129), and the ledger holding every job submitted. Before, Python's default ended
the process at once, silent, with -15 or -1. Real CLI, local backend, the fake
kernel sleeping in its job."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.reliability.test_crash_kills import _env


@pytest.mark.parametrize(
    ("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGHUP, 129, "hung up (SIGHUP)")]
)
def test_sigterm_during_a_submit_says_so_and_keeps_the_job(
    tmp_path: Path, sig: signal.Signals, code: int, said: str
) -> None:
    env = _env(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    argv = [
        str(CAMPAIGN),
        "--ledger",
        str(ledger),
        "submit",
        "experiment=crash_many",
        "campaign.name=term",
        "experiment.sweeps.0.partitions=[]",
        "experiment.sweeps.0.variants=[sleep]",
        "+experiment.sweeps.0.grid={sleep: [60]}",
        "experiment.preflight=false",
    ]
    log, said_out, said_err = tmp_path / "executions.log", tmp_path / "out", tmp_path / "err"
    # into files, not pipes: the local job's processes inherit them and keep a pipe open while they run
    with open(said_out, "w") as out_fh, open(said_err, "w") as err_fh:
        proc = subprocess.Popen(argv, env=env, stdout=out_fh, stderr=err_fh)
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text().strip()):  # the kernel started: its job is recorded
            assert proc.poll() is None and time.monotonic() < deadline, said_err.read_text()
            time.sleep(0.1)
        proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    out, err = said_out.read_text(), said_err.read_text()
    assert proc.returncode == code, (out, err)
    assert err.strip().splitlines()[-1] == f"campaign: {said}; the ledger holds every job submitted so far", err
    assert "Traceback" not in err, err
    [(job_id,)] = sql_rows(ledger, "SELECT job_id FROM job_attempt")
    assert job_id, "the job's ID was recorded"
    cancel = run_cli("--ledger", str(ledger), "cancel", "term", env=env)
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
