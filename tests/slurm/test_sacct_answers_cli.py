"""What `status`, `jobs` and `show` say of answers other sites' Slurm gives:
a state word campaign does not know, a job killed by a signal, and lines
on sacct's stdout that are no job record. The words are Slurm's, played by
fake executables first on PATH (sbatch answers a job id, sacct what the
test says)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

JOB = "4242"
START, END = "2026-11-30T08:15:01", "2026-11-30T08:15:09"


def _fake(folder: Path, name: str, stdout: str) -> None:
    script = folder / name
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{folder}/{name}.calls"\ncat "{folder}/{name}.out"\n')
    script.chmod(0o755)
    (folder / f"{name}.out").write_text(stdout)


class Site:
    """One job submitted to a fake Slurm, and the CLI to ask about it."""

    def __init__(self, tmp: Path) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.work = tmp
        self.env = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF),
            "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
            "CAMPAIGN_LEDGER": str(tmp / "l.sqlite"),
        }
        _fake(self.bin, "sbatch", f"{JOB}\n")
        _fake(self.bin, "squeue", "")
        _fake(self.bin, "scontrol", "MaxArraySize = 1001\n")
        _fake(self.bin, "sacct", "")
        self.cli(
            "submit",
            "cluster=localslurm",
            "experiment=failures",
            "experiment.sweeps.0.variants=[ok]",
            "experiment.sweeps.0.partitions=[cpu]",
            f"campaign.workdir={tmp / 'runs'}",
            "campaign.name=answers",
        )

    def sacct(self, stdout: str) -> None:
        (self.bin / "sacct.out").write_text(stdout)

    def cli(self, *args: str, code: int = 0) -> str:
        proc = run_cli(*args, cwd=self.work, env=self.env)
        assert proc.returncode == code, proc.stderr
        return proc.stdout

    def job(self) -> dict[str, object]:
        (row,) = json.loads(self.cli("jobs", "--format", "json"))
        return row


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def test_a_state_word_campaign_does_not_know_is_named_in_jobs_and_show(site: Site) -> None:
    site.sacct(f"{JOB}|QUIESCED|0:0|localhost|{START}|Unknown|None\n")
    row = site.job()
    assert (row["state"], row["reason"]) == ("UNKNOWN", "Slurm state 'QUIESCED' not known to campaign")
    assert "state: UNKNOWN  (Slurm state 'QUIESCED' not known to campaign)" in site.cli("show", JOB)
    site.sacct(f"{JOB}|COMPLETED|0:0|localhost|{START}|{END}|None\n")  # still asked about: open
    assert site.job()["state"] != "UNKNOWN"


@pytest.mark.parametrize(
    ("line", "state", "said"),
    [
        (f"{JOB}|FAILED|0:9|localhost|{START}|{END}|None", "FAILED", "exit -9, SIGKILL"),  # its batch shell killed
        (
            f"{JOB}|FAILED|11:0|localhost|{START}|{END}|None\n{JOB}.0|CANCELLED|0:11|localhost|{START}|{END}|",
            "FAILED",
            "exit -11, SIGSEGV",
        ),  # srun's step killed: srun exits with the signal's number
        (
            f"{JOB}|CANCELLED by 0|0:0|localhost|{START}|{END}|None\n{JOB}.batch|CANCELLED|0:15|localhost|{START}|{END}|",
            "CANCELLED",
            "-15, SIGTERM",
        ),
    ],
)
def test_a_job_killed_by_a_signal_says_so_in_jobs_and_show(site: Site, line: str, state: str, said: str) -> None:
    """A job that left no exit record of its own (its runner was killed with it) is stored as the job
    record stores a killed program: -N, the signal named in the reason and in `show`."""
    site.sacct(line + "\n")
    row = site.job()
    assert row["state"] == state
    if state == "FAILED":
        assert row["reason"] == said
    code = -int(said.split(", ")[0].split()[-1].lstrip("-"))
    shown = json.loads(site.cli("show", JOB, "--format", "json"))
    assert shown["exit_code"] == code, shown
    assert f"exit code: {code}, {said.rsplit(', ', 1)[1]}" in site.cli("show", JOB)


def test_lines_that_are_no_record_are_a_warning_not_a_failed_status(site: Site) -> None:
    """A site's sacct wrapper that merges stderr into stdout, or prints a banner: the job's state is
    read, the lines are named once on stderr; a record that cannot be read still fails the status."""
    banner = "*** Maintenance on Tuesday 08:00-12:00: jobs will not start ***"
    error = "sacct: error: Invalid field requested: Reason2"
    site.sacct(f"{banner}\n{error}\n{JOB}|RUNNING|0:0|localhost|{START}|Unknown|None\n")
    proc = run_cli("status", cwd=site.work, env=site.env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == (
        f"campaign: warning: sacct printed 2 line(s) that are no job record, read past: {banner} | {error}"
    )
    assert site.job()["state"] == "RUNNING"
    site.sacct(f"{error}\n{JOB}|COMPLETED|0:0\n")
    proc = run_cli("status", cwd=site.work, env=site.env)
    assert proc.returncode == 1 and f"unexpected sacct line (expected 7 fields): '{JOB}|COMPLETED|0:0'" in proc.stderr
    assert site.job()["state"] == "RUNNING"  # as last read: nothing guessed


def test_a_pending_reason_is_stored_without_parentheses(site: Site) -> None:
    site.sacct(f"{JOB}|PENDING|0:0|None assigned|Unknown|Unknown|(Dependency)\n")
    _fake(site.bin, "squeue", "")  # squeue no longer lists it as pending: sacct's reason stands
    assert site.job()["reason"] == "Dependency"
    _fake(site.bin, "squeue", f"{JOB}|(Priority)\n")  # the controller's reason now, as %R would print it
    assert site.job()["reason"] == "Priority"
