"""What one run asks of a partition: cores, memory, GPUs (pure).

Why a module of its own: what a job requests is what the site bills
(docs/sites.md). A 1-thread run that asks a whole node's memory is charged
like the whole node on Delta, so the request follows the run's need and the
partition's policy, never a per-partition constant:

- cores = threads, or `experiment.cpus_per_run` (threads above it
  oversubscribe on purpose), or the whole node when the partition demands it
  (`whole_node`) or the experiment asks `exclusive`;
- memory in proportion to the cores or GPUs taken (`mem_per_core_gb`,
  `mem_per_gpu_gb`, in the sites' GB of 1e9 bytes, rounded down to whole MiB
  so the request never crosses into the next billing unit), else the
  partition's fixed `mem_gb`, else the site's default;
- one GPU per GPU run, with the partition's `cpus_per_gpu` cores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from campaign.config.schema import ExperimentSpec, PartitionSpec

MIB = 2**20
SITE_GB = 1e9  # sites bill memory in GB of 1e9 bytes (Delta's job accounting)


@dataclass(frozen=True)
class Allocation:
    cpus: int  # cores (hardware threads) allocated to the job
    gpus: int
    mem_gb: float | None  # --mem in GiB, a whole number of MiB; None = site default
    exclusive: bool


def mem_from_site_gb(gb: float) -> float:
    """Site GB (1e9 bytes) -> the ledger's memory value (GiB, whole MiB, rounded down)."""
    return math.floor(gb * SITE_GB / MIB + 1e-9) / 1024


def mem_site_gb(mem_gb: float) -> float:
    """The ledger's memory value (GiB) -> site GB (1e9 bytes), for billing."""
    return round(mem_gb * 1024) * MIB / SITE_GB


def node_cpus(part: PartitionSpec) -> int:
    return part.cores * part.threads_per_core


def allocate(part: PartitionSpec, exp: ExperimentSpec, threads: int) -> Allocation:
    """The request of one run with `threads` threads on `part`."""
    exclusive = exp.exclusive
    if part.gpus > 0:
        gpus = 1
        cpus = node_cpus(part) if exclusive else part.cpus_per_gpu * gpus
        per_unit, units = part.mem_per_gpu_gb, gpus
    else:
        gpus = 0
        cpus = exp.cpus_per_run or threads
        if exclusive or part.whole_node:
            cpus = node_cpus(part)
        per_unit, units = part.mem_per_core_gb, cpus
    mem: float | None
    if exp.mem_gb is not None:
        mem = exp.mem_gb
    elif per_unit is not None:
        mem = mem_from_site_gb(min(per_unit * units, part.memory_gb))  # never above the node
    else:
        mem = part.mem_gb
    return Allocation(cpus=cpus, gpus=gpus, mem_gb=mem, exclusive=exclusive)
