"""SIGTERM (a closed login session, `kill`) stops a command as Ctrl-C does: one
line saying so, the shell's exit code for the signal (143), and the ledger
holding every job submitted. Before, Python's default ended the process at once,
silent, with -15. Real CLI, local backend, the fake kernel sleeping in its job."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.reliability.test_crash_kills import _env


def test_sigterm_during_a_submit_says_so_and_keeps_the_job(tmp_path: Path) -> None:
    env = _env(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    argv = [str(CAMPAIGN), "--ledger", str(ledger), "submit", "experiment=crash_many", "campaign.name=term",
            "experiment.sweeps.0.partitions=[]", "experiment.sweeps.0.variants=[ok]",
            "+experiment.sweeps.0.grid={sleep: [60]}", "experiment.preflight=false"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "executions.log"
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text().strip()):  # the kernel started: its job is recorded
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, (out, err)
    assert "campaign: terminated (SIGTERM); the ledger holds every job submitted so far" in err, err
    [(job_id,)] = sql_rows(ledger, "SELECT job_id FROM job_attempt")
    assert job_id, "the job's ID was recorded"
    cancel = run_cli("--ledger", str(ledger), "cancel", "term", env=env)
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
