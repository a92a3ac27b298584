"""What each run asks of a partition (campaign.planning.resources): cores =
threads unless the whole node is needed or asked for, memory in proportion,
one default partition per device, oversubscription only on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.api import dry_run
from campaign.config import load_config
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError

BASE = ["campaign.python=/opt/venv/bin/python", "campaign.kernel_bin=/opt/campaign/kernels/build"]
ANVIL = ["cluster=anvil", "cluster.account=abc123", *BASE]


def _plan(*overrides: str):  # type: ignore[no-untyped-def]
    return plan(load_config([*ANVIL, *overrides])).runs


def test_no_partition_named_gives_the_default_cpu_partition_only() -> None:
    runs = _plan("experiment=smoke")  # torch runs on cpu and cuda: the CPU default wins
    assert {r.partition for r in runs} == {"shared"} and {r.device for r in runs} == {"cpu"}
    gpu = _plan("experiment=smoke", "experiment.sweeps.0.devices=[cuda]", "experiment.sweeps.1.devices=[cuda]")
    assert {r.partition for r in gpu} == {"gpu"} and {r.gpus for r in gpu} == {1}


def test_cores_follow_threads_and_whole_node_only_where_needed() -> None:
    shared = _plan(
        "experiment=forward_scaling",
        "experiment.sweeps.0.partitions=[shared]",
        "experiment.sweeps.0.threads=[1,16]",
        "experiment.sweeps.0.impls=[c]",
    )
    assert sorted({(r.threads, r.alloc_cpus) for r in shared}) == [(1, 1), (16, 16)]
    whole = _plan(
        "experiment=forward_scaling",
        "experiment.sweeps.0.partitions=[wholenode]",
        "experiment.sweeps.0.threads=[1]",
        "experiment.sweeps.0.impls=[c]",
    )
    node = load_config(ANVIL).cluster.partitions["wholenode"].cores
    assert {r.alloc_cpus for r in whole} == {node}
    exclusive = _plan(
        "experiment=forward_scaling",
        "experiment.sweeps.0.partitions=[shared]",
        "experiment.sweeps.0.threads=[4]",
        "experiment.sweeps.0.impls=[c]",
        "experiment.exclusive=true",
    )
    assert {(r.alloc_cpus, r.exclusive) for r in exclusive} == {(node, True)}


def test_oversubscription_on_purpose(tmp_path: Path) -> None:
    over = [
        "experiment=forward_scaling",
        "experiment.sweeps.0.partitions=[shared]",
        "experiment.sweeps.0.impls=[c]",
        "experiment.sweeps.0.threads=[64]",
        "experiment.cpus_per_run=32",
        "experiment.sweeps.0.variants=[naive]",
    ]
    runs = _plan(*over)
    assert {(r.threads, r.alloc_cpus) for r in runs} == {(64, 32)}
    assert runs[0].label.endswith("64t/32c")
    script = "\n".join(dry_run([*ANVIL, *over], tmp_path / "ledger.sqlite").scripts)
    assert "#SBATCH --cpus-per-task=32" in script and "export OMP_NUM_THREADS=64" in script
    with pytest.raises(ConfigError, match="exceed"):  # without cpus_per_run, threads above the node stay an error
        _plan(
            "experiment=forward_scaling",
            "experiment.sweeps.0.partitions=[shared]",
            "experiment.sweeps.0.threads=[256]",
            "experiment.sweeps.0.impls=[c]",
        )


def test_keys_of_plain_runs_do_not_change_with_the_new_fields() -> None:
    """cpus (= threads) and exclusive (False) stay out of the run key, so a
    campaign planned before them is not submitted again."""
    run = _plan(
        "experiment=forward_scaling", "experiment.sweeps.0.partitions=[shared]", "experiment.sweeps.0.impls=[c]"
    )[0]
    from dataclasses import replace

    assert replace(run, cpus=run.threads).key == run.key
    assert replace(run, cpus=run.threads * 2).key != run.key
    assert replace(run, exclusive=True).key != run.key


@pytest.mark.parametrize(("max_array", "arrays", "jobs"), [(0, 0, 3), (1, 0, 3), (2, 1, 2), (None, 1, 1)])
def test_the_dry_run_groups_runs_as_submit_does_under_max_array_size(
    tmp_path: Path, max_array: int | None, arrays: int, jobs: int
) -> None:
    """A site's MaxArraySize of 0 turns arrays off, and submit then sends one job per run
    (SlurmBackend._groups takes at least 1 a job); the dry run showed one array instead.
    Three runs of one shape: one array, or chunks of max_array_size, or three jobs."""
    cap = [] if max_array is None else [f"cluster.max_array_size={max_array}"]
    report = dry_run(
        [*ANVIL, "experiment=smoke", "experiment.sweeps.0.threads=[1]", *cap], tmp_path / "l.sqlite", preflight=False
    )
    assert report.planned == 3
    assert (sum("#SBATCH --array=" in s for s in report.scripts), len(report.scripts)) == (arrays, jobs)
