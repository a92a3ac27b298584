"""A job stopped after its program had written every n (a TIMEOUT in a
finalize that hangs, a cancel a moment too late) is COMPLETED: its final
result file holds every n, read by the same reader as any finished job's, so
`jobs` shows it complete and `rerun` measures nothing again. The TIMEOUT
half on the real scheduler is tests/slurm/test_timeout_complete_real.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

WAIT_S = 120


def _output_path(ledger: Path) -> Path:
    """The attempt's result file, once the background submit recorded it."""
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        try:
            found = sql_rows(ledger, "SELECT output_path FROM job_attempt WHERE job_id IS NOT NULL")
        except sqlite3.Error:
            found = []
        if found:
            return Path(found[0][0])
        time.sleep(0.2)
    raise AssertionError("the submit never recorded its job")


def test_cancelled_after_every_n_was_written_is_complete_and_not_rerun(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    env = {**os.environ, "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
           "CAMPAIGN_LEDGER": str(ledger)}
    env.pop("CAMPAIGN_DEBUG", None)
    submit = subprocess.Popen([str(CAMPAIGN), "submit", "experiment=failures", "experiment.sweeps.0.variants=[linger]",
                               "experiment.sweeps.0.partitions=[local]", "+experiment.sweeps.0.args.sleep=600",
                               f"campaign.workdir={tmp_path / 'runs'}", "-q"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        output = _output_path(ledger)
        end = time.monotonic() + WAIT_S
        while not output.is_file():  # the program renamed its file into place: every n is written
            assert time.monotonic() < end and submit.poll() is None, "the program never wrote its result file"
            time.sleep(0.2)
        cancel = run_cli("cancel", "failures-local", env=env)
        assert cancel.returncode == 0, cancel.stderr
    finally:
        submit.communicate(timeout=WAIT_S)
    (row,) = json.loads(run_cli("jobs", "--format", "json", env=env).stdout)
    assert row["state"] == "COMPLETED", row
    assert row["reason"] == "ended CANCELLED after writing every n: counted complete"
    assert sql_rows(ledger, "SELECT count(*) FROM result") == [(4,)]  # n 64 and 128, 2 repeats each
    assert run_cli("jobs", "--failed", env=env).stdout.count("\n") <= 1  # nothing failed
    again = run_cli("rerun", "failures-local", "--failed", "--state", "CANCELLED", env=env)
    assert again.returncode == 0, again.stderr
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(1,)]  # nothing sent again
