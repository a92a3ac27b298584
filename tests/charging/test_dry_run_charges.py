"""The cost a dry run prints, against the site rules written in the configs.

Each expected value is worked out here from the config's own `charging:` and
memory rules (with their sources in conf/cluster/*.yaml) and the thread count,
not copied from the tool's output: 1-, 16- and 128-thread CPU runs and 1-GPU runs.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import pytest

from campaign.config import load_config
from campaign.config.schema import PartitionSpec
from campaign.planning.plan import plan
from tests.conftest import run_cli

WALLTIME_MIN = 120  # two hours: the per-job minimum charge does not hide the rule
COMMON = [
    "campaign.workdir=/scratch/charges",
    "campaign.python=/opt/venv/bin/python",
    "campaign.kernel_bin=/opt/campaign/kernels/build",
    f"experiment.walltime_min={WALLTIME_MIN}",
    "experiment=decode_scaling",
    "experiment.sweeps.0.impls=[fortran]",
    "experiment.sweeps.0.dtypes=[fp32]",
]
ACCOUNTS = {
    "anvil": [
        "cluster.partitions.shared.account=x",
        "cluster.partitions.wholenode.account=x",
        "cluster.partitions.gpu.account=x-gpu",
    ],
    "delta": [
        "cluster.partitions.cpu.account=x-delta-cpu",
        "cluster.partitions.gpuA100x4.account=x-delta-gpu",
        "cluster.partitions.gpuH200x8.account=x-delta-gpu",
    ],
}
LINE = re.compile(
    r"^#\s+(?P<part>\S+): (?P<runs>\d+) runs in (?P<arrays>\d+) array\(s\).*?; "
    r"(?P<ch>[\d.]+) core-hours, (?P<gh>[\d.]+) GPU-hours .*?charged (?P<su>[\d.]+) SU",
    re.M,
)
STEP = re.compile(
    r"^#\s+(?P<part>\S+) (?P<kind>build|preflight) job: (?P<runs>\d+) job\(s\); "
    r"(?P<ch>[\d.]+) core-hours, (?P<gh>[\d.]+) GPU-hours .*?charged (?P<su>[\d.]+) SU",
    re.M,
)
BUILD_MIN = 30  # campaign.commands.chain.BUILD_WALLTIME_MIN


def _site_mem_gb(part: PartitionSpec, units: int) -> float | None:
    """What the job asks, in site GB: the per-core/per-GPU share, at most what a job may ask
    on the node (the documented figure, else 95% of the nominal memory), rounded down to whole MiB."""
    per = part.mem_per_gpu_gb if part.gpus else part.mem_per_core_gb
    if per is None:
        return None
    usable = part.usable_mem_gb if part.usable_mem_gb is not None else part.memory_gb * 0.95
    return math.floor(min(per * units, usable) * 1e9 / 2**20) * 2**20 / 1e9


def expected_su(part: PartitionSpec, threads: int, minutes: int = WALLTIME_MIN) -> float:
    rule, hours = part.charging, minutes / 60
    if part.gpus:
        cores = part.cpus_per_gpu
        mem = _site_mem_gb(part, 1)
        shares = [1.0, cores / (rule.cores_per_unit or math.inf), (mem or 0.0) / (rule.mem_gb_per_unit or math.inf)]
        billed = max(shares)
    else:
        cores = part.cores if part.whole_node else threads
        mem = _site_mem_gb(part, cores)
        if rule.model == "whole_node":
            billed = float(part.cores)
        elif rule.model == "memory_or_cores":
            billed = max(float(cores), (mem or 0.0) / rule.mem_gb_per_unit)  # type: ignore[operator]
        else:
            billed = float(cores)
    return max(billed * hours * rule.su_per_unit_hour, rule.min_su)


@functools.cache
def _partition(cluster: str, partition: str) -> PartitionSpec:
    """A partition as its cluster's config defines it (cores, memory, charging rule): the sweep's threads
    and programs are no part of it, so one config load (a Hydra compose) per partition serves every
    test of it. Read only."""
    return load_config(
        [f"cluster={cluster}", *COMMON, f"experiment.sweeps.0.partitions=[{partition}]"]
    ).cluster.partitions[partition]


def _dry_run(cluster: str, extra: list[str], tmp_path: Path) -> dict[str, dict[str, float]]:
    proc = run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        f"cluster={cluster}",
        *COMMON,
        *ACCOUNTS[cluster],
        *extra,
        "--dry-run",
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "ledger.sqlite").exists()
    got = {
        m["part"]: {k: float(m[k]) for k in ("runs", "arrays", "ch", "gh", "su")} for m in LINE.finditer(proc.stdout)
    }
    got.update(
        {
            f"{m['part']} {m['kind']}": {k: float(m[k]) for k in ("runs", "ch", "gh", "su")}
            for m in STEP.finditer(proc.stdout)
        }
    )
    return got


CPU_CASES = [("delta", "cpu"), ("anvil", "shared"), ("anvil", "wholenode")]
GPU_CASES = [("delta", "gpuA100x4"), ("delta", "gpuH200x8"), ("anvil", "gpu")]


@pytest.mark.parametrize(("cluster", "partition"), CPU_CASES)
@pytest.mark.parametrize("threads", [1, 16, 128])
def test_cpu_run_su_follows_the_site_rule(cluster: str, partition: str, threads: int, tmp_path: Path) -> None:
    extra = [f"experiment.sweeps.0.partitions=[{partition}]", f"experiment.sweeps.0.threads=[{threads}]"]
    part = _partition(cluster, partition)
    assert part.charging.source, "every charging rule names its source"
    got = _dry_run(cluster, extra, tmp_path)
    want = expected_su(part, threads)
    cores = part.cores if part.whole_node else threads
    assert got[partition]["runs"] == 1 and got[partition]["arrays"] == 1
    assert got[partition]["su"] == pytest.approx(want, abs=0.005)
    assert got[partition]["ch"] == pytest.approx(cores * WALLTIME_MIN / 60, abs=0.005)
    # the build (1 core, or the node where the partition demands it) at its own walltime, on a line
    # of its own, in the total; no preflight: the one run is its own check (it would double the cost)
    assert f"{partition} preflight" not in got
    assert got[f"{partition} build"]["su"] == pytest.approx(expected_su(part, 1, BUILD_MIN), abs=0.005)
    assert got["total"]["su"] == pytest.approx(got[partition]["su"] + got[f"{partition} build"]["su"], abs=0.015)
    assert got["total"]["runs"] == 1


@pytest.mark.parametrize(("cluster", "partition"), CPU_CASES)
@pytest.mark.parametrize("smallest", [1, 16])
def test_the_preflight_asks_its_smallest_shape(cluster: str, partition: str, smallest: int, tmp_path: Path) -> None:
    """A thread sweep up to a whole node: the preflight runs each program once at its fewest threads and
    asks that (its cores and their memory share; the node where the partition demands it), not the
    128 cores and a node's memory of the widest run."""
    extra = [f"experiment.sweeps.0.partitions=[{partition}]", f"experiment.sweeps.0.threads=[{smallest},128]"]
    part = _partition(cluster, partition)
    got = _dry_run(cluster, extra, tmp_path)
    minutes = min(part.max_walltime_min, 10)
    cores = part.cores if part.whole_node else smallest
    assert got[partition]["runs"] == 2
    assert got[f"{partition} preflight"]["ch"] == pytest.approx(cores * minutes / 60, abs=0.005)
    assert got[f"{partition} preflight"]["su"] == pytest.approx(expected_su(part, smallest, minutes), abs=0.005)
    steps = got[f"{partition} preflight"]["su"] + got[f"{partition} build"]["su"]
    assert got["total"]["su"] == pytest.approx(got[partition]["su"] + steps, abs=0.015)


@pytest.mark.parametrize(("cluster", "partition"), GPU_CASES)
def test_one_gpu_run_su_follows_the_site_rule(cluster: str, partition: str, tmp_path: Path) -> None:
    extra = [f"experiment.sweeps.0.partitions=[{partition}]", "experiment.sweeps.0.impls=[torch]"]
    part = _partition(cluster, partition)
    got = _dry_run(cluster, extra, tmp_path)
    assert got[partition]["gh"] == pytest.approx(WALLTIME_MIN / 60, abs=0.005)
    assert got[partition]["su"] == pytest.approx(expected_su(part, part.cpus_per_gpu), abs=0.005)
    # one GPU's share of cores and memory bills as exactly one GPU
    assert got[partition]["su"] == pytest.approx(WALLTIME_MIN / 60 * part.charging.su_per_unit_hour, abs=0.005)


def test_delta_smoke_needs_the_cpu_account_and_plans_cpu_only(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    proc = run_cli("--ledger", ledger, "submit", "cluster=delta", "experiment=smoke", "--dry-run")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "cluster.partitions.cpu.account" in proc.stderr
    proc = run_cli(
        "--ledger",
        ledger,
        "submit",
        "cluster=delta",
        "experiment=smoke",
        "cluster.partitions.cpu.account=bbka-delta-cpu",
        "--dry-run",
    )
    assert proc.returncode == 0, proc.stderr
    partitions = set(re.findall(r"^#SBATCH --partition=(\S+)$", proc.stdout, re.M))
    assert partitions == {"cpu"}
    assert "#SBATCH --account=bbka-delta-cpu" in proc.stdout
    assert not (tmp_path / "ledger.sqlite").exists()


def test_runs_already_in_the_ledger_are_marked_and_cost_nothing(tmp_path: Path) -> None:
    """A dry run reads an existing ledger (and writes nothing): the runs a submit
    would skip are counted apart and left out of the SUs."""
    from campaign import api
    from campaign.ledger import Campaign, Ledger, Run
    from campaign.plumbing.clock import now

    overrides = ["cluster=delta", *COMMON, *ACCOUNTS["delta"], "experiment.sweeps.0.threads=[1,16]"]
    first = api.dry_run(overrides, tmp_path / "ledger.sqlite")
    cpu = next(c for c in first.charges if c.partition == "cpu")
    assert cpu.runs == 2 and cpu.existing == 0
    from campaign.planning.identity import with_identity

    cfg = load_config(overrides)
    run = with_identity(cfg, plan(cfg).runs)[0]  # keyed as submit keys it (environment and program included)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    with ledger.session.begin() as s:
        camp = Campaign(
            name=first.campaign,
            cluster="delta",
            experiment="decode_scaling",
            backend="slurm",
            cluster_yaml="",
            python="python3",
            created_at=now(),
            workdir=str(tmp_path),
        )
        s.add(camp)
        s.flush()
        s.add(
            Run(
                campaign_id=camp.id,
                key=run.key,
                kernel=run.kernel,
                impl=run.impl,
                variant=run.variant,
                partition=run.partition,
                device=run.device,
                dtype=run.dtype,
                threads=run.threads,
                gpus=run.gpus,
                spec=run.to_json(),
                created_at=now(),
            )
        )
    ledger.close()
    before = (tmp_path / "ledger.sqlite").read_bytes()
    again = api.dry_run(overrides, tmp_path / "ledger.sqlite")
    cpu2 = next(c for c in again.charges if c.partition == "cpu")
    assert (cpu2.runs, cpu2.existing) == (1, 1)
    assert cpu2.su < cpu.su and cpu2.arrays == 1
    assert (tmp_path / "ledger.sqlite").read_bytes() == before


def test_a_partition_without_a_charging_rule_is_never_priced_at_zero(tmp_path: Path) -> None:
    """A new site's config may leave `charging:` out on a partition: its runs' cost is not known, so
    neither its line nor the total may say 0 SU for them (a total of the priced partitions alone
    read as the campaign's cost)."""
    extra = [
        "experiment.sweeps.0.partitions=[gpuA100x4,gpuH200x8]",
        "experiment.sweeps.0.impls=[torch]",
        "cluster.partitions.gpuH200x8.charging.model=none",
    ]
    proc = run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        "cluster=delta",
        *COMMON,
        *ACCOUNTS["delta"],
        *extra,
        "--dry-run",
    )
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(":")[0].strip("# "): line for line in proc.stdout.splitlines() if "GPU-hours" in line}
    priced = expected_su(_partition("delta", "gpuA100x4"), 16)
    assert f"charged {priced:.2f} SU" in lines["gpuA100x4"]
    assert "charged" not in lines["gpuH200x8"], lines["gpuH200x8"]
    assert "no SU estimate: no charging rule" in lines["gpuH200x8"]
    assert f"charged at least {priced:.2f} SU (no charging rule: gpuH200x8)" in lines["total"]  # (one run each:
    # no preflight job in front)
