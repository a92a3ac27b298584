"""The shipped experiments run on every shipped cluster that has the hardware
they need (issue 28: `cluster=anvil experiment=forward_scaling` failed with
"no partition 'cpu'" because the experiments named Delta's partition). They
name no partition, so the README's rule applies: the cluster's default CPU
partition, or its default GPU one for a sweep that says `devices: [cuda]`.
Planning may still refuse a cluster for what it lacks (GPUs, cores, walltime),
never for a partition name."""

from __future__ import annotations

import pytest

from campaign.config.load import group_options, load_config
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError

CLUSTERS = group_options("cluster")
EXPERIMENTS = group_options("experiment")
SITES = ("anvil", "delta")  # the real sites: every shipped experiment plans there
BASE = ["cluster.account=abc123", "campaign.allow_node_local=true"]


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_no_experiment_names_a_partition_a_cluster_lacks(cluster: str, experiment: str) -> None:
    try:
        cfg = load_config([f"cluster={cluster}", f"experiment={experiment}", *BASE])
        runs = plan(cfg).runs
    except ConfigError as exc:
        assert cluster not in SITES, f"{experiment} on {cluster}: {exc}"
        assert "no partition" not in str(exc), f"{experiment} on {cluster}: {exc}"
        return
    assert runs
    defaults = {cfg.cluster.default_cpu_partition, cfg.cluster.default_gpu_partition} - {None}
    if defaults:  # each run on a default partition of its device
        assert {r.partition for r in runs} <= defaults, (experiment, cluster)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_gpu_sweeps_stay_on_gpus(experiment: str) -> None:
    """Dropping `partitions: [gpu]` must not move a GPU study onto CPUs: on a
    cluster with GPUs its GPU sweeps still plan cuda runs only."""
    cfg = load_config(["cluster=delta", f"experiment={experiment}", *BASE])
    for index, sweep in enumerate(cfg.experiment.sweeps):
        if sweep.devices == ["cuda"]:
            runs = [r for r in plan(cfg).runs if r.kernel == sweep.kernel]
            assert runs and all(r.device == "cuda" for r in runs), (experiment, index)
