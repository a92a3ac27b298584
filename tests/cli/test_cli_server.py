"""tests/cli_server.py, the CLI forked from a server with its imports done:
a run gives what the installed console script gives (stdout,
stderr, exit code) for real commands, sees exactly the caller's environment
and directory whatever the run before it did, ends as an interpreter ends
(threads joined, atexit, SystemExit), and times out, crashes and is killed
as subprocess.run reports it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from campaign.plumbing.states import JobState
from tests import cli_server
from tests.cli.conftest import FAKE_ENV, SmallLedger
from tests.conftest import CAMPAIGN, REPO, run_cli

ENTRIES = "tests.fixtures.cli_entries"
SECOND = JobState.COMPLETED  # small_ledger's job 7302: finished: a sync has nothing to ask


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CAMPAIGN_DEBUG"}
    env.update(extra)
    return env


def _forked(
    entry: str, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return cli_server.run(
        args, cwd=cwd, env=env if env is not None else _env(), timeout=timeout, entry=f"{ENTRIES}:{entry}"
    )


def _interpreted(entry: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The same entry in a real interpreter started by subprocess.run: what the fork must match."""
    code = f"import sys; from {ENTRIES} import {entry}; sys.argv = ['campaign', *sys.argv[1:]]; sys.exit({entry}())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(PYTHONPATH=str(REPO)),
        timeout=120,
        check=False,
    )


def _both(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], ...]:
    return (run_cli(*args, cwd=cwd, env=env, script=True), run_cli(*args, cwd=cwd, env=env))


@pytest.mark.parametrize("argv", [["sumbit"], ["status", "--interval", "x"], ["--format", "yaml", "jobs"]])
def test_bad_input_as_the_script_gives_it(argv: list[str], small_ledger: SmallLedger, tmp_path: Path) -> None:
    script, forked = _both("--ledger", str(small_ledger(SECOND)), *argv, cwd=tmp_path)
    assert (forked.returncode, forked.stdout, forked.stderr) == (script.returncode, script.stdout, script.stderr)
    assert forked.returncode == 2 and len(forked.stderr.strip().splitlines()) == 1, forked.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "--no-sync"],
        ["--format", "json", "jobs", "--no-sync", "--all-attempts"],
        ["status", "--help"],
        ["show", "7301", "--no-sync"],
    ],
)
def test_reading_commands_as_the_script_gives_them(argv: list[str], small_ledger: SmallLedger, tmp_path: Path) -> None:
    script, forked = _both("--ledger", str(small_ledger(SECOND)), *argv, cwd=tmp_path)
    assert script.returncode == 0 and script.stdout, script.stderr
    assert (forked.returncode, forked.stdout, forked.stderr) == (script.returncode, script.stdout, script.stderr)


def _submit(tmp_path: Path, name: str, script: bool) -> subprocess.CompletedProcess[str]:
    work = tmp_path / name
    work.mkdir()
    return run_cli(
        "--ledger",
        str(work / "ledger.sqlite"),
        "submit",
        "experiment=failures",
        "experiment.sweeps.0.variants=[ok,exit3]",
        "experiment.sweeps.0.n=[64]",
        "experiment.repeats=1",
        f"experiment.name={name}",
        cwd=work,
        env=FAKE_ENV,
        script=script,
    )


def _masked(text: str, name: str) -> str:
    """A submit's output without what differs between two campaigns: names, IDs, times, paths."""
    text = text.replace(name, "NAME")
    return re.sub(r"\d+(\.\d+)?", "N", re.sub(r"/\S+", "PATH", text))


def test_a_submit_of_local_jobs_as_the_script_gives_it(tmp_path: Path) -> None:
    script = _submit(tmp_path, "viascript", script=True)
    forked = _submit(tmp_path, "viafork", script=False)
    assert script.returncode == 3, script.stderr  # the exit3 job failed, on purpose
    assert forked.returncode == script.returncode
    assert _masked(forked.stdout, "viafork") == _masked(script.stdout, "viascript")
    assert _masked(forked.stderr, "viafork") == _masked(script.stderr, "viascript")
    states = [
        sorted(
            (j["variant"], j["state"])
            for j in json.loads(
                run_cli("--ledger", str(tmp_path / n / "ledger.sqlite"), "--format", "json", "jobs", "--no-sync").stdout
            )
        )
        for n in ("viascript", "viafork")
    ]
    assert states[0] == states[1] == [("exit3", "FAILED"), ("ok", "COMPLETED")], states


def test_children_write_to_the_inherited_stdout_and_the_caller_reads_to_the_end(tmp_path: Path) -> None:
    forked = _forked("grandchildren", "0.3", cwd=tmp_path)
    real = _interpreted("grandchildren", "0.3", cwd=tmp_path)
    assert real.stdout.split() == ["main", "early", "late"] and real.stderr == "early-err\n", real
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)


def test_threads_atexit_and_exit_code_as_an_interpreter_ends(tmp_path: Path) -> None:
    forked = _forked("at_exit", cwd=tmp_path)
    real = _interpreted("at_exit", cwd=tmp_path)
    assert real.returncode == 4 and real.stdout.splitlines() == ["main done", "thread done", "atexit ran"], real
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)


@pytest.mark.parametrize(("how", "code"), [("kill", -signal.SIGKILL), ("exit", 5), ("raise", 1), ("string", 1)])
def test_a_crash_gives_the_code_subprocess_gives(how: str, code: int, tmp_path: Path) -> None:
    forked = _forked("crash", how, "5", cwd=tmp_path)
    real = _interpreted("crash", how, "5", cwd=tmp_path)
    assert real.returncode == code and forked.returncode == code, (real, forked)
    assert forked.stdout == real.stdout == "before\n"
    assert forked.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]  # "RuntimeError: boom", "a message"


def test_each_run_sees_exactly_the_callers_environment_and_directory(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    env = _env(CAMPAIGN_ONLY_ONCE="x y", TZ="America/Chicago")
    env.pop("HOME", None)
    mask = os.umask(0o077)
    try:
        seen = json.loads(_forked("probe", "a", "--b", cwd=first, env=env).stdout)
    finally:
        os.umask(mask)
    assert seen["env"] == env and "HOME" not in seen["env"]
    assert seen["tzname"] == ["CST", "CDT"] and seen["umask"] == 0o077
    assert seen["cwd"] == str(first) and seen["argv"] == ["campaign", "a", "--b"]
    assert seen["executable"] == cli_server._script_executable() and seen["stdin"] == "" and seen["stdout_fd"] == 1
    assert seen["server_threads"] == 1 and not seen["torch"] and seen["preloaded"] and seen["start_method"] is None
    again = json.loads(_forked("probe", cwd=second).stdout)  # the first run set a variable and left for /
    assert again["env"] == _env() and "CAMPAIGN_ONLY_ONCE" not in again["env"] and again["cwd"] == str(second)
    assert again["tzname"] == list(time.tzname) and again["umask"] == mask
    assert os.environ.get("CAMPAIGN_LEFT_BEHIND") is None and Path.cwd() != Path("/")


def test_the_preloaded_heap_is_left_out_of_each_runs_collections(tmp_path: Path) -> None:
    """The server's imports (every module, pandas, SQLAlchemy, Hydra: ~230,000 objects) are frozen:
    a run's full collections walk only what the run made, as in a process that imported what it
    needed (unfrozen, they cost a submit ~0.15 CPU s more: BENCHMARKS.md section 31)."""
    seen = json.loads(_forked("probe", cwd=tmp_path).stdout)
    assert seen["gc_frozen"] > 100_000, seen["gc_frozen"]
    assert seen["gc_tracked"] < seen["gc_frozen"] // 10, (seen["gc_tracked"], seen["gc_frozen"])


def test_a_run_is_charged_from_its_servers_figures_asked_again_once_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU of a run comes from its server's /proc figures: the server is
    the process a run sees as its parent; a PID kept of a server that is gone
    is asked again (multiprocessing starts another), never read as zero."""
    seen = json.loads(_forked("probe", cwd=tmp_path).stdout)
    assert cli_server._server_pid(fresh=False) == seen["server"] == cli_server._server_pid(fresh=True)
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its PID names no process now
    monkeypatch.setattr(cli_server, "_pid", gone.pid)
    cli_server._charge()
    assert cli_server._pid == seen["server"]


def test_the_real_cli_reads_its_environment_at_each_call(small_ledger: SmallLedger, tmp_path: Path) -> None:
    """CAMPAIGN_LEDGER set for one call only: the next call finds no ledger (a default under an empty XDG_DATA_HOME)."""
    listed = run_cli("jobs", "--no-sync", cwd=tmp_path, env={"CAMPAIGN_LEDGER": str(small_ledger(SECOND))})
    assert listed.returncode == 0 and "7301" in listed.stdout, listed.stderr
    xdg = tmp_path / "xdg"
    alone = run_cli("jobs", "--no-sync", cwd=tmp_path, env={"XDG_DATA_HOME": str(xdg)})
    assert alone.returncode == 2 and str(xdg) in alone.stderr and "7301" not in alone.stdout, alone.stderr


def test_a_timeout_raises_as_subprocess_does_and_leaves_no_process(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        cli_server.run(["x"], cwd=tmp_path, env=_env(), timeout=2, entry=f"{ENTRIES}:hang", on_start=pids.append)
    assert caught.value.cmd == [str(CAMPAIGN), "x"] and caught.value.timeout == 2
    pid = pids[0]
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:  # the server reaps it
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()


def test_a_missing_directory_fails_as_subprocess_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_cli("--version", cwd=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):
        run_cli("--version", cwd=tmp_path / "nowhere", script=True)


def test_startup_variables_go_through_the_script(tmp_path: Path) -> None:
    assert cli_server.needs_script(_env(PYTHONPROFILEIMPORTTIME="1"))
    assert cli_server.needs_script(_env(LC_ALL="C"))
    assert not cli_server.needs_script(_env(CAMPAIGN_LEDGER="x"))
    proc = run_cli("--version", cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0 and "import time:" in proc.stderr  # a real interpreter start logged its imports
