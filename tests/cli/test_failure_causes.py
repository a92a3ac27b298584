"""Why a job failed, where a user looks first: `jobs`, `jobs --failed` and
`--format json` carry the cause from the job's own exit record (its exit code
and its program's error line); a failed preflight names the program's error,
not the tail of a crash dump, its job ID is on the runs it kept back, and
`show` takes that ID. The real-Slurm half is tests/slurm/test_failure_causes_slurm.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.job.error_line import error_line
from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

LOCAL = "experiment.sweeps.0.partitions=[local]"


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(FAKE_CONF))
    monkeypatch.setenv("CAMPAIGN_FAKE_KERNEL", str(FAKE_KERNEL))
    monkeypatch.setenv("CAMPAIGN_LEDGER", str(tmp_path / "ledger.sqlite"))
    yield tmp_path


def test_error_line_picks_the_error_not_the_crash_dump() -> None:
    dump = ("Python path configuration:\n  PYTHONHOME = '/x'\n"
            "Fatal Python error: init_fs_encoding: failed to get the Python codec of the filesystem encoding\n"
            "Python runtime state: core initialized\nModuleNotFoundError: No module named 'encodings'\n\n"
            "Current thread 0x00007f (most recent call first):\n  <no Python frame>\n")
    assert error_line(dump) == "ModuleNotFoundError: No module named 'encodings'"
    assert error_line("progress 1\nsh: 1: nosuchprog: not found\nbye\n") == "sh: 1: nosuchprog: not found"
    assert error_line("just a line\nthe last one\n") == "the last one"
    assert error_line("\n  \n") is None


def test_failed_job_shows_its_exit_code_and_error_in_jobs(fake_env: Path) -> None:
    sub = run_cli("submit", "experiment=failures", "experiment.sweeps.0.variants=[exit3]", LOCAL,
                  f"campaign.workdir={fake_env / 'runs'}", "kernels.fake.impls.py.argv=[/bin/sh,-c,nosuchprog]")
    assert sub.returncode == 3, sub.stderr
    for args in (["jobs"], ["jobs", "--failed"], ["jobs", "--no-sync"]):
        out = run_cli(*args)
        assert out.returncode == 0, out.stderr
        assert "exit 127: " in out.stdout and "nosuchprog: not found" in out.stdout, out.stdout
    (row,) = json.loads(run_cli("jobs", "--failed", "--format", "json").stdout)
    assert row["state"] == "FAILED" and row["reason"].startswith("exit 127: ")
    assert row["reason"].endswith("nosuchprog: not found")


def test_preflight_failure_names_the_error_and_its_job(fake_env: Path) -> None:
    sub = run_cli("submit", "experiment=preflight_crash", LOCAL, f"campaign.workdir={fake_env / 'runs'}",
                  "+cluster.env.PYTHONHOME=/nonexistent")
    assert sub.returncode == 3
    said = sub.stdout + sub.stderr
    assert "No module named 'encodings'" in said and "Current thread" not in said, said
    assert "(attempt" not in sub.stderr, sub.stderr  # the ledger's attempt numbers mean nothing to a user
    rows = json.loads(run_cli("jobs", "--format", "json").stdout)
    assert {r["state"] for r in rows} == {"PREFLIGHT_FAILED"}
    (pre_id,) = {r["job_id"] for r in rows}
    assert pre_id and pre_id.startswith("local-preflight-") and pre_id in sub.stderr
    assert all("No module named 'encodings'" in r["reason"] for r in rows)
    for args in (["show", pre_id], ["show", "--no-sync", pre_id]):
        shown = run_cli(*args)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"preflight job {pre_id}  campaign preflight_crash-local")
        assert "runs it gated: 2 (PREFLIGHT_FAILED 2)" in shown.stdout
        assert "0-run.err" in shown.stdout  # where the whole stderr is
    bad = run_cli("show", "--format", "json", pre_id)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_show_says_where_the_output_went_when_the_program_wrote_no_stderr(fake_env: Path) -> None:
    sub = run_cli("submit", "experiment=failures", "experiment.sweeps.0.variants=[ok]", LOCAL,
                  f"campaign.workdir={fake_env / 'runs'}")
    assert sub.returncode == 0, sub.stderr
    (row,) = json.loads(run_cli("jobs", "--format", "json").stdout)
    shown = run_cli("show", row["job_id"]).stdout
    tail = shown.split("kernel stderr (tail):\n", 1)[1].splitlines()[0]
    assert tail.startswith("    (empty: the program wrote nothing to its stderr); the job's other output: "), tail
    assert "_log.out (" in tail, tail  # the job's stdout, with how many lines it holds
    assert "exit code: 0" in shown  # finished: its code is shown
