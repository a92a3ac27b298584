"""Hostile values of the request limits: the memory a node lets a job ask and the
preflight's walltime are refused at compose/plan time with one line and exit 2, before
anything is rendered or submitted."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config import load_config
from tests.conftest import run_cli

BASE = ["submit", "cluster=delta", "cluster.partitions.cpu.account=x-delta-cpu", "experiment=decode_scaling",
        "experiment.sweeps.0.impls=[fortran]", "experiment.sweeps.0.threads=[1]",
        "campaign.workdir=/scratch/limits", "--dry-run"]


@pytest.mark.parametrize(("override", "named"), [
    ("cluster.partitions.cpu.usable_mem_gb=-1", "usable_mem_gb"),
    ("cluster.partitions.cpu.usable_mem_gb=0", "usable_mem_gb"),
    ("cluster.partitions.cpu.usable_mem_gb=nan", "usable_mem_gb"),
    ("cluster.partitions.cpu.usable_mem_gb=1e300", "usable_mem_gb"),
    ("cluster.partitions.cpu.mem_gb=nan", "mem_gb"),
    ("cluster.partitions.cpu.mem_gb=1e9", "mem_gb"),
    ("cluster.partitions.cpu.mem_gb=-3", "mem_gb"),
    ("experiment.mem_gb=inf", "experiment.mem_gb"),
    ("experiment.mem_gb=100000", "experiment.mem_gb"),
    ("cluster.preflight_walltime_min=0", "cluster.preflight_walltime_min"),
    ("cluster.preflight_walltime_min=-10", "cluster.preflight_walltime_min"),
])
def test_bad_request_limits_are_one_line_exit_2(override: str, named: str, tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), *BASE, override)
    assert proc.returncode == 2, proc.stdout[-500:] + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr
    assert "#SBATCH" not in proc.stdout and not (tmp_path / "l.sqlite").exists()


def test_preflight_walltime_is_configurable_and_capped_at_the_partition(tmp_path: Path) -> None:
    two = [*BASE, "experiment.sweeps.0.threads=[1,2]"]  # two runs: a preflight (one run is its own check)
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), *two, "cluster.preflight_walltime_min=7")
    assert proc.returncode == 0, proc.stderr
    scripts = proc.stdout.split("# ---- job script")
    preflight = next(s for s in scripts if "preflight=cpu" in s)
    assert "#SBATCH --time=7\n" in preflight
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), *two, "cluster.preflight_walltime_min=100000")
    assert proc.returncode == 0, proc.stderr
    preflight = next(s for s in proc.stdout.split("# ---- job script") if "preflight=cpu" in s)
    limit = load_config(["cluster=delta"]).cluster.partitions["cpu"].max_walltime_min
    assert f"#SBATCH --time={limit}\n" in preflight  # the partition's maximum
