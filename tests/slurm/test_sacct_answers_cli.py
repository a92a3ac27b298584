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
        return proc.stdout + proc.stderr

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
