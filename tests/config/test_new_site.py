"""A new site configured from docs/sites.md, the README and docs/contracts.md
alone (tests/fixtures/site_conf/cluster/newsite.yaml: CPU, A100 and H200
partitions, accounts per kind, QoS, constraints, a reservation): the dry run
writes the sbatch options that site needs, and a config that would plan
jobs other than the site has is one line, exit 2."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import SITE_CONF

ACCOUNTS = [
    "cluster.partitions.cpu.account=abc-cpu",
    "cluster.partitions.a100.account=abc-gpu",
    "cluster.partitions.h200.account=abc-gpu",
]
GPU_SWEEP = ["experiment=smoke", "experiment.sweeps.0.partitions=[a100,h200]", "experiment.sweeps.1.partitions=[cpu]"]


def _dry_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[int, str, str]:
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(SITE_CONF))
    proc = run_cli(
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "submit",
        "cluster=newsite",
        f"campaign.workdir={tmp_path / 'runs'}",
        *extra,
        "--dry-run",
    )
    return proc.returncode, proc.stdout, proc.stderr


def _scripts(stdout: str) -> dict[str, list[set[str]]]:
    """Each job script's #SBATCH options, by partition."""
    out: dict[str, list[set[str]]] = {}
    for script in stdout.split("#!/bin/bash")[1:]:
        options = set(re.findall(r"^#SBATCH (--\S+)$", script, re.M))
        part = next(o for o in options if o.startswith("--partition=")).split("=", 1)[1]
        out.setdefault(part, []).append(options)
    return out


def _mib(gb: float) -> str:
    return f"--mem={math.floor(gb * 1e9 / 2**20)}M"


def test_each_partition_gets_the_options_its_site_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, err = _dry_run(tmp_path, monkeypatch, *ACCOUNTS, *GPU_SWEEP)
    assert rc == 0, err
    got = _scripts(out)
    assert set(got) == {"cpu", "a100", "h200"}
    want = {  # the config's facts, each job asking one GPU's share (threads 1 and 2 on the CPU partition)
        "cpu": {"--account=abc-cpu", "--qos=normal", "--constraint='milan&ib'", _mib(1.9)},
        "a100": {
            "--account=abc-gpu",
            "--qos=gpu",
            "--constraint=a100",
            "--gpus-per-node=1",
            "--cpus-per-task=16",
            _mib(120),
        },
        "h200": {
            "--account=abc-gpu",
            "--qos=gpu-h200",
            "--constraint=h200",
            "--reservation=bench",
            "--gpus-per-node=1",
            "--cpus-per-task=12",
            _mib(250),
        },
    }
    for part, options in want.items():
        for script in got[part]:  # the preflight job's and the arrays' alike
            assert options <= script, (part, options - script)
            assert "--no-requeue" in script and not any(o.startswith("--gres") for o in script)
    assert "charged at least" not in out and re.search(r"total: .* charged [\d.]+ SU", out)


@pytest.mark.parametrize(
    ("override", "said"),
    [
        (
            "cluster.partitions.cpu.name=gpuA100x4",
            "cluster.partitions.cpu.name='gpuA100x4' must be the partition's key 'cpu'",
        ),
        (
            "cluster.default_gpu_partition=cpu",
            "cluster.default_gpu_partition='cpu' is a CPU partition (no gpus): name a GPU partition",
        ),
        (
            "cluster.default_cpu_partition=a100",
            "cluster.default_cpu_partition='a100' is a GPU partition: name a CPU partition",
        ),
        (
            "cluster.partitions.a100.cpus_per_gpu=32",
            "cluster.partitions.a100.cpus_per_gpu=32: 4 GPUs ask 128 cores, more than the node's 64",
        ),
        (
            "cluster.partitions.cpu.clusters='anvil gpu'",
            "cluster.partitions.cpu.clusters='anvil gpu' is not a valid name",
        ),
        ("cluster.clusters='delta,;x'", "cluster.clusters[1]=';x' is not a valid name"),
        (
            "cluster.partitions.cpu.charging.model=per_gpu",
            "cluster.partitions.cpu.charging.model='per_gpu' bills GPUs, and partition cpu has none",
        ),
    ],
)
def test_a_config_that_plans_jobs_the_site_lacks_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, said: str
) -> None:
    rc, _, err = _dry_run(
        tmp_path, monkeypatch, *ACCOUNTS, "experiment=smoke", "experiment.sweeps.1.devices=[cuda]", override
    )
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and said in err, err


def test_the_config_docs_sites_md_shows_is_the_one_tested_here() -> None:
    """docs/sites.md ("A new site") prints this file whole: what a new site copies is what is tested."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "sites.md").read_text()
    shown = doc.split("## A new site", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert shown == (SITE_CONF / "cluster" / "newsite.yaml").read_text()
