"""Slurm without a configuration: sbatch and scontrol then ask DNS
for the controller and print "DNS SRV lookup failed", naming neither the
variable nor the file. campaign says to set SLURM_CONF, and how to reach the
test Slurm. The outputs are Slurm's own, recorded on the dev machine with
SLURM_CONF unset (tests/fixtures/slurm/*_no_config.stderr); the last test
runs the real CLI against the real Slurm commands."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from campaign.backends.slurm_messages import error_line
from campaign.backends.slurm_run import TEST_SLURM_ENV, failure_text, no_config_hint
from tests.conftest import CAMPAIGN
from tests.fixtures import SLURM_OUTPUTS


@pytest.mark.parametrize("name", ["sbatch_no_config.stderr", "scontrol_no_config.stderr"])
def test_slurms_own_words_get_the_hint(name: str) -> None:
    text = (SLURM_OUTPUTS / name).read_text()
    proc = subprocess.CompletedProcess(["sbatch"], 1, "", text)
    for line in (failure_text(proc), error_line(proc)):
        assert "SLURM_CONF" in line and f"source {TEST_SLURM_ENV}" in line and "\n" not in line
    # the hint alone: Slurm's DNS SRV lines name neither the variable nor the file
    assert "DNS SRV lookup failed" not in failure_text(proc) and "res_nsearch" not in failure_text(proc)


def test_other_failures_keep_slurms_words() -> None:
    proc = subprocess.CompletedProcess(
        ["sbatch"],
        1,
        "",
        "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n",
    )
    assert no_config_hint(proc.stderr) is None
    assert failure_text(proc).startswith("sbatch: error: Batch job submission failed: Invalid account")


@pytest.mark.skipif(
    shutil.which("scontrol") is None or Path("/etc/slurm/slurm.conf").exists(),
    reason="needs Slurm's commands and no system-wide slurm.conf",
)
@pytest.mark.parametrize("chain", [["--no-preflight"], []], ids=["runs", "preflight"])
def test_submit_without_slurm_conf_says_what_to_set(tmp_path: Path, chain: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    proc = subprocess.run(  # without SLURM_CONF, whatever the test run has
        [
            str(CAMPAIGN),
            "--ledger",
            str(tmp_path / "l.sqlite"),
            "submit",
            "cluster=localslurm",
            "experiment=smoke",
            "experiment.sweeps.0.variants=[naive]",
            "experiment.sweeps.0.threads=[1]",
            *chain,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "set SLURM_CONF" in proc.stderr and TEST_SLURM_ENV in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "DNS SRV" not in proc.stderr.replace("none by DNS SRV", "") and "is slurmctld running" not in proc.stderr
