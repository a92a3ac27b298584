"""What a tool-driven program leaves outside its process group (a `setsid` sleeper, a double-forked
daemon), on the local backend through the CLI: stopped after each invocation, never beside a later
repeat, and said in the job's kernel stderr (docs/byob.md, the driver's clean-up)."""

from __future__ import annotations

from pathlib import Path

from campaign.job.files import STDERR_FILE
from tests.byob import escapers
from tests.byob.declared import declare
from tests.conftest import run_cli, sql_rows
from tests.truth.helpers import pid_alive


def test_a_setsid_sleeper_and_a_daemon_are_stopped_after_each_invocation_on_the_local_backend(
    tmp_path: Path,
) -> None:
    program = escapers.write_program(tmp_path)
    env = declare(tmp_path, {"escaper": escapers.KERNEL % program}, {"escaper_sweep": escapers.EXPERIMENT}, {})
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
        started = escapers.sleepers(Path(workdir))
        assert len(started) == 2 * escapers.INVOCATIONS
        assert escapers.alive_at_start(Path(workdir)) == [0] * escapers.INVOCATIONS, stderr
        assert escapers.said_stopped(stderr) == started, stderr
        assert not any(pid_alive(pid) for pid in started)
    finally:
        escapers.end_sleepers(runs)
