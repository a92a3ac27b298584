"""What the build and preflight jobs ask (campaign.planning.resources.step_allocation):
the cores of the most threads they run, within the node, the whole node only where the
partition demands it, one GPU's share on GPU partitions; memory by the partition's rule,
never above what a node lets a job ask."""

from __future__ import annotations

import math

import pytest

from campaign.config import load_config
from campaign.planning.resources import step_allocation


def _site_mib(gb: float) -> int:
    return math.floor(gb * 1e9 / 2**20)


@pytest.mark.parametrize("threads", [1, 16, 128, 512])
def test_cpu_preflight_asks_its_threads_within_the_node(threads: int) -> None:
    part = load_config(["cluster=delta"]).cluster.partitions["cpu"]
    alloc = step_allocation(part, threads, 0)
    assert alloc.cpus == min(threads, part.cores) and alloc.gpus == 0 and not alloc.exclusive
    usable = part.memory_gb * 0.95  # no usable_mem_gb for Delta cpu: the 5% default
    assert part.mem_per_core_gb is not None and alloc.mem_gb is not None
    assert round(alloc.mem_gb * 1024) == _site_mib(min(part.mem_per_core_gb * alloc.cpus, usable))


def test_whole_node_partition_gets_the_node_and_gpu_partition_one_gpu_share() -> None:
    anvil = load_config(["cluster=anvil"]).cluster.partitions
    assert step_allocation(anvil["wholenode"], 1, 0).cpus == anvil["wholenode"].cores
    assert step_allocation(anvil["wholenode"], 1, 0).mem_gb is None  # Anvil: the site's share per core
    gpu = load_config(["cluster=delta"]).cluster.partitions["gpuA100x4"]
    alloc = step_allocation(gpu, gpu.cpus_per_gpu, 1)
    assert (alloc.cpus, alloc.gpus) == (gpu.cpus_per_gpu, 1)
    assert gpu.mem_per_gpu_gb is not None and alloc.mem_gb is not None
    assert round(alloc.mem_gb * 1024) == _site_mib(gpu.mem_per_gpu_gb)
