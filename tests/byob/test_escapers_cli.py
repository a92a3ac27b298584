"""What a tool-driven or a contract program leaves outside its process group (a `setsid` sleeper, a
double-forked daemon), on the local backend through the CLI: stopped after each invocation, never
beside a later repeat or job, and said in the job's kernel stderr (docs/byob.md, the driver's
clean-up; docs/design.md, the runner's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from campaign.job.files import STDERR_FILE
from tests.byob import escapers
from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.truth.helpers import pid_alive


@pytest.mark.parametrize("experiment", escapers.SWEEPS)
def test_a_setsid_sleeper_and_a_daemon_are_stopped_after_each_invocation_on_the_local_backend(
    tmp_path: Path, experiment: str
) -> None:
    """The driver after each invocation of a tool-driven program; the runner, which starts a contract
    program in a session of its own and stopped only that session's process group (what the program
    moved out of it ran on past the job, beside the next jobs), once the program ended."""
    env = escapers.declare_escaper(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    runs = tmp_path / "runs"
    try:
        proc = run_cli(
            "--ledger",
            str(ledger),
            "submit",
            f"experiment={experiment}",
            f"campaign.workdir={runs}",
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        ((state, workdir),) = sql_rows(ledger, "SELECT state, workdir FROM job_attempt")
        stderr = (Path(workdir) / STDERR_FILE).read_text()
        assert state == "COMPLETED", stderr
        escapers.assert_stopped_after_each_invocation(Path(workdir), stderr, escapers.SWEEPS[experiment])
    finally:
        escapers.end_sleepers(runs)


@pytest.mark.parametrize("experiment", escapers.SWEEPS)
def test_a_cancel_on_the_local_backend_ends_what_left_the_process_group(tmp_path: Path, experiment: str) -> None:
    """A job cancelled while its program runs: the local backend's SIGTERM to the job's process group
    ended the driver (or the contract program) but not the sleepers the program had moved out of that
    group, which ran on with no job (handed to init). The driver ends its descendants before it ends,
    the runner once its program ended, so nothing of the job is left once cancel returns."""
    env = escapers.declare_escaper(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    runs = tmp_path / "runs"
    args = [
        "--ledger",
        str(ledger),
        "submit",
        f"experiment={experiment}",
        "experiment.sweeps.0.impls=[hold]",
        f"campaign.workdir={runs}",
    ]
    submit = subprocess.Popen(
        [str(CAMPAIGN), *args],
        env={**os.environ, **env},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        holding = escapers.holding(runs, lambda: submit.poll() is None)
        started = escapers.sleepers(holding.parent)
        assert len(started) == 2 and all(pid_alive(pid) for pid in started)
        cancel = run_cli("--ledger", str(ledger), "cancel", f"{experiment}-local", cwd=tmp_path, env=env)
        assert cancel.returncode == 0, cancel.stderr
        assert [pid for pid in started if pid_alive(pid)] == []  # cancel returned: none of them is left
        submit.communicate(timeout=60)
        assert sql_rows(ledger, "SELECT state FROM job_attempt") == [("CANCELLED",)]
    finally:
        if submit.poll() is None:
            submit.kill()
        escapers.end_sleepers(runs)
