"""What a tool-driven program leaves outside its process group (a `setsid` sleeper, a double-forked
daemon), on the local backend through the CLI: stopped after each invocation, never beside a later
repeat, and said in the job's kernel stderr (docs/byob.md, the driver's clean-up)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from campaign.job.files import STDERR_FILE
from tests.byob import escapers
from tests.conftest import CAMPAIGN, run_cli, sql_rows
from tests.truth.helpers import pid_alive


def test_a_setsid_sleeper_and_a_daemon_are_stopped_after_each_invocation_on_the_local_backend(
    tmp_path: Path,
) -> None:
    env = escapers.declare_escaper(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    runs = tmp_path / "runs"
    try:
        proc = run_cli(
            "--ledger",
            str(ledger),
            "submit",
            "experiment=escaper_sweep",
            f"campaign.workdir={runs}",
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        ((state, workdir),) = sql_rows(ledger, "SELECT state, workdir FROM job_attempt")
        stderr = (Path(workdir) / STDERR_FILE).read_text()
        assert state == "COMPLETED", stderr
        escapers.assert_stopped_after_each_invocation(Path(workdir), stderr)
    finally:
        escapers.end_sleepers(runs)


def test_a_cancel_on_the_local_backend_ends_what_left_the_process_group(tmp_path: Path) -> None:
    """A job cancelled while its program runs: the local backend's SIGTERM to the job's process group
    ended the driver and the program, but not the sleepers the program had moved out of that group,
    which ran on with no job (handed to init when the driver ended). The driver now ends its
    descendants before it ends, so nothing of the job is left once cancel returns."""
    env = escapers.declare_escaper(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    runs = tmp_path / "runs"
    args = [
        "--ledger",
        str(ledger),
        "submit",
        "experiment=escaper_sweep",
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
        cancel = run_cli("--ledger", str(ledger), "cancel", "escaper_sweep-local", cwd=tmp_path, env=env)
        assert cancel.returncode == 0, cancel.stderr
        assert [pid for pid in started if pid_alive(pid)] == []  # cancel returned: none of them is left
        submit.communicate(timeout=60)
        assert sql_rows(ledger, "SELECT state FROM job_attempt") == [("CANCELLED",)]
    finally:
        if submit.poll() is None:
            submit.kill()
        escapers.end_sleepers(runs)
