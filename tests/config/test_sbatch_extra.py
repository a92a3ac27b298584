"""A partition's `sbatch_extra` adds options to the `#SBATCH` block campaign
writes, where a later line wins: one that sets (or, as sbatch reads a unique
prefix, abbreviates) an option campaign decides itself would run the job
other than the ledger records. Such a key is refused at compose time in one
line naming it and what decides that option; the site's own options pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from campaign.config import load_config
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli

DELTA = ["cluster=delta", "experiment=smoke", "cluster.partitions.cpu.account=bbka-delta-cpu"]


@pytest.mark.parametrize(
    ("key", "value", "option"),
    [
        ("partition", "gpuA100x4", "partition"),
        ("part", "gpuA100x4", "partition"),  # sbatch takes --part for --partition
        ("time", "5", "time"),
        ("array", "0-9", "array"),
        ("job-name", "mine", "job-name"),
        ("output", "/tmp/x.out", "output"),
        ("cpus_per_task", "4", "cpus-per-task"),
        ("mem", "10G", "mem"),
        ("mem-per-cpu", "4G", "mem-per-cpu"),
        ("gpus-per-node", "2", "gpus-per-node"),
        ("account", "abcd-delta-cpu", "account"),
        ("no-requeue", "true", "no-requeue"),
        ("requeue", "true", "requeue"),
        ("export", "NONE", "export"),
    ],
)
def test_an_option_campaign_decides_is_refused_naming_the_key(key: str, value: str, option: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config([*DELTA, f"+cluster.partitions.cpu.sbatch_extra.{key}={value}"])
    message = str(caught.value)
    assert message.startswith(f"cluster.partitions.cpu.sbatch_extra.{key}: campaign writes --{option} itself")
    assert "\n" not in message


def test_a_gpu_gres_is_refused_where_a_gres_of_something_else_passes() -> None:
    with pytest.raises(ConfigError, match=r"sbatch_extra\.gres='gpu:a100:1': campaign asks the GPUs itself"):
        load_config([*DELTA, "+cluster.partitions.gpuA100x4.sbatch_extra.gres=gpu:a100:1"])
    with pytest.raises(ConfigError, match=r"profiler\.sbatch_extra\.time: campaign writes --time itself"):
        load_config([*DELTA, "+cluster.partitions.gpuA100x4.profiler.sbatch_extra.time=5"])
    cfg = load_config([*DELTA, "+cluster.partitions.cpu.sbatch_extra.gres=nvme:1"])
    assert cfg.cluster.partitions["cpu"].sbatch_extra == {"gres": "nvme:1"}


def test_the_sites_own_options_reach_every_script_and_a_refused_one_exits_2(tmp_path: Path) -> None:
    site = ["+cluster.partitions.cpu.sbatch_extra={constraint: milan, reservation: bench, begin: now, nodelist: cn001}"]
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", *DELTA, *site, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    scripts = proc.stdout.count("#!/bin/bash")
    for line in ("--constraint=milan", "--reservation=bench", "--begin=now", "--nodelist=cn001"):
        assert len(re.findall(rf"^#SBATCH {line}$", proc.stdout, re.M)) == scripts >= 2, line
    proc = run_cli(
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "submit",
        *DELTA,
        "+cluster.partitions.cpu.sbatch_extra.partition=gpuA100x4",
        "--dry-run",
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "sbatch_extra.partition: campaign writes --partition itself" in proc.stderr
