"""The shipped experiments run on every shipped cluster that has the hardware
they need (`cluster=anvil experiment=forward_scaling` once failed with
"no partition 'cpu'" because the experiments named Delta's partition). They
name no partition, so the README's rule applies: the cluster's default CPU
partition, or its default GPU one for a sweep that says `devices: [cuda]`.
Planning may still refuse a cluster for what it lacks (GPUs, cores, walltime),
never for a partition name."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from campaign.config.load import group_options, load_config
from campaign.config.schema import RootConfig
from campaign.planning.plan import plan
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError

CLUSTERS = group_options("cluster")
EXPERIMENTS = group_options("experiment")
SITES = ("anvil", "delta")  # the real sites: every shipped experiment plans there
BASE = ["cluster.account=abc123", "campaign.allow_node_local=true"]

Planned = Callable[[str, str], tuple[RootConfig, list[RunSpec]]]


@pytest.fixture(scope="module")
def planned() -> Planned:
    """Each (cluster, experiment) composed and planned once (a Hydra
    compose is ~0.3 s of CPU, and the Delta ones serve both tests); a refusal
    is kept and raised again to every test that asks."""
    done: dict[tuple[str, str], tuple[RootConfig, list[RunSpec]] | ConfigError] = {}

    def get(cluster: str, experiment: str) -> tuple[RootConfig, list[RunSpec]]:
        key = (cluster, experiment)
        if key not in done:
            try:
                cfg = load_config([f"cluster={cluster}", f"experiment={experiment}", *BASE])
                done[key] = (cfg, plan(cfg).runs)
            except ConfigError as exc:
                done[key] = exc
        found = done[key]
        if isinstance(found, ConfigError):
            raise found
        return found

    return get


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_no_experiment_names_a_partition_a_cluster_lacks(cluster: str, experiment: str, planned: Planned) -> None:
    try:
        cfg, runs = planned(cluster, experiment)
    except ConfigError as exc:
        assert cluster not in SITES, f"{experiment} on {cluster}: {exc}"
        assert "no partition" not in str(exc), f"{experiment} on {cluster}: {exc}"
        return
    assert runs
    defaults = {cfg.cluster.default_cpu_partition, cfg.cluster.default_gpu_partition} - {None}
    # a CPU sweep over several nodes goes to the cluster's multi-node partition where it names one
    multinode = {cfg.cluster.default_multinode_partition} - {None}
    # (a default partition's runs that fill a node go to the partition it names for them)
    defaults |= {p.whole_node_partition for name, p in cfg.cluster.partitions.items() if name in defaults} - {None}
    if defaults:  # each run on a default partition of its device
        assert {r.partition for r in runs} <= defaults | multinode, (experiment, cluster)
    if multinode:
        assert {r.partition for r in runs if r.nodes > 1} <= multinode, (experiment, cluster)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_gpu_sweeps_stay_on_gpus(experiment: str, planned: Planned) -> None:
    """Dropping `partitions: [gpu]` must not move a GPU study onto CPUs: on a
    cluster with GPUs its GPU sweeps still plan cuda runs only."""
    cfg, planned_runs = planned("delta", experiment)
    for index, sweep in enumerate(cfg.experiment.sweeps):
        if sweep.devices == ["cuda"]:
            runs = [r for r in planned_runs if r.kernel == sweep.kernel]
            assert runs and all(r.device == "cuda" for r in runs), (experiment, index)
