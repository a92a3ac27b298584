"""The partitions the sites publish, and which one a run lands on, through `submit --dry-run`:
Anvil's 128-core runs of a sweep naming no partition go to `wholenode` (not `shared`); Delta's
`gpuA40x4`/`gpuA100x8` and Anvil's `wide`/`debug` are there with their charging rules, each
figure's source in docs/sites.md. Expected values come from the configs' own rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from campaign.config import load_config
from tests.charging.test_dry_run_charges import WALLTIME_MIN, _dry_run, expected_su
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
SCALING = ["experiment=forward_scaling", "experiment.sweeps.0.impls=[c]", "experiment.sweeps.0.variants=[naive]",
           "campaign.workdir=/scratch/parts", "campaign.kernel_bin=/opt/campaign/kernels/build"]


def _arrays(stdout: str) -> dict[int, str]:
    """threads -> the partition of the array that runs them."""
    out = {}
    for script in stdout.split("# ---- job script")[1:]:
        if "# runs in this" not in script:
            continue
        [part] = re.findall(r"^#SBATCH --partition=(\S+)$", script, re.M)
        for threads in re.findall(r"--threads (\d+)", script):
            out[int(threads)] = part
    return out


def test_anvil_whole_node_runs_of_a_sweep_naming_no_partition_go_to_wholenode(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "cluster=anvil", "cluster.account=abc",
                   *SCALING, "experiment.sweeps.0.threads=[1,64,128]", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert _arrays(proc.stdout) == {1: "shared", 64: "shared", 128: "wholenode"}
    named = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "cluster=anvil", "cluster.account=abc",
                    *SCALING, "experiment.sweeps.0.threads=[1,128]", "experiment.sweeps.0.partitions=[shared]",
                    "--dry-run")
    assert named.returncode == 0, named.stderr
    assert _arrays(named.stdout) == {1: "shared", 128: "shared"}  # a partition named is taken as named


def test_a_whole_node_partition_that_is_not_one_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "cluster=anvil", "cluster.account=abc",
                   *SCALING, "cluster.partitions.shared.whole_node_partition=gpu", "--dry-run")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "cluster.partitions.shared.whole_node_partition='gpu'" in proc.stderr
    assert not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize(("cluster", "partition"), [("delta", "gpuA40x4"), ("delta", "gpuA100x8")])
def test_delta_gpu_partitions_bill_one_gpu_at_their_charge_factor(cluster: str, partition: str,
                                                                   tmp_path: Path) -> None:
    extra = [f"experiment.sweeps.0.partitions=[{partition}]", "experiment.sweeps.0.impls=[torch]",
             f"cluster.partitions.{partition}.account=x-delta-gpu"]
    part = load_config([f"cluster={cluster}", *extra]).cluster.partitions[partition]
    got = _dry_run(cluster, extra, tmp_path)
    hours = got[partition]["gh"]
    assert hours > 0 and got[partition]["su"] == pytest.approx(hours * part.charging.su_per_unit_hour, abs=0.005)
    assert got[partition]["su"] == pytest.approx(expected_su(part, part.cpus_per_gpu), abs=0.005)


@pytest.mark.parametrize("partition", ["wide", "debug"])
def test_anvil_wide_and_debug_follow_their_rules(partition: str, tmp_path: Path) -> None:
    extra = [f"experiment.sweeps.0.partitions=[{partition}]", "experiment.sweeps.0.threads=[16]",
             f"cluster.partitions.{partition}.account=x"]
    part = load_config(["cluster=anvil", *extra]).cluster.partitions[partition]
    got = _dry_run("anvil", extra, tmp_path)
    assert got[partition]["su"] == pytest.approx(expected_su(part, 16), abs=0.005)
    assert got[partition]["ch"] == pytest.approx((part.cores if part.whole_node else 16) * WALLTIME_MIN / 60, abs=0.005)


def test_every_new_partition_is_in_sites_md_with_its_source() -> None:
    sites = (REPO / "docs" / "sites.md").read_text()
    for cluster, names in (("delta", ("gpuA40x4", "gpuA100x8")), ("anvil", ("wide", "debug"))):
        parts = load_config([f"cluster={cluster}"]).cluster.partitions
        for name in names:
            assert parts[name].charging.source and parts[name].ceilings.source
            assert f"`{name}`" in sites, name
