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
- never more memory than one node lets a job ask (`usable_memory`): a
  request above the nodes' RealMemory is never scheduled, so the nominal
  memory of the node is not a request (docs/sites.md#memory-a-job-may-ask);
- one GPU per GPU run, with the partition's `cpus_per_gpu` cores;
- a run whose cores fill a node goes, when its sweep names no partition, to
  the partition the default one names for that (`whole_node_partition`:
  Anvil's 128-core runs belong on `wholenode`, not `shared`);
- a run of several ranks (campaign.planning.ranks) asks this per rank (cores) and
  per node (GPUs, memory: Slurm's --mem is per node), so a node of a
  multi-node job is billed like a single-node job of the same shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from campaign.config.schema import ClusterSpec, ExperimentSpec, PartitionSpec, SweepSpec
from campaign.plumbing.errors import ConfigError

MIB = 2**20
SITE_GB = 1e9  # sites bill memory in GB of 1e9 bytes (Delta's job accounting)
# Share of a node's nominal memory kept for the OS and the site's daemons where the
# partition names no `usable_mem_gb` (Slurm's RealMemory is below the DIMMs' total).
MEM_HEADROOM = 0.05


@dataclass(frozen=True)
class Allocation:
    cpus: int  # cores (hardware threads) allocated to the job (to each rank of a multi-rank job)
    gpus: int  # per node
    mem_gb: float | None  # --mem (per node) in GiB, a whole number of MiB; None = site default
    exclusive: bool


def mem_from_site_gb(gb: float) -> float:
    """Site GB (1e9 bytes) -> the ledger's memory value (GiB, whole MiB, rounded down)."""
    return math.floor(gb * SITE_GB / MIB + 1e-9) / 1024


def mem_site_gb(mem_gb: float) -> float:
    """The ledger's memory value (GiB) -> site GB (1e9 bytes), for billing."""
    return round(mem_gb * 1024) * MIB / SITE_GB


def node_cpus(part: PartitionSpec) -> int:
    return part.cores * part.threads_per_core


def usable_site_gb(part: PartitionSpec) -> float:
    """The most memory one job may ask on a node of `part`, in site GB: the
    documented figure, else the nominal memory less MEM_HEADROOM."""
    if part.usable_mem_gb is not None:
        return part.usable_mem_gb
    return part.memory_gb * (1 - MEM_HEADROOM)


def usable_memory(part: PartitionSpec) -> float:
    """usable_site_gb in the ledger's unit (GiB, whole MiB, rounded down)."""
    return mem_from_site_gb(usable_site_gb(part))


def share_memory(part: PartitionSpec, cpus: int, gpus: int) -> float | None:
    """The memory asked with `cpus` cores or `gpus` GPUs under the partition's
    per-core/per-GPU rule, never above usable_memory; None without a rule."""
    per_unit, units = (part.mem_per_gpu_gb, gpus) if part.gpus > 0 else (part.mem_per_core_gb, cpus)
    if per_unit is None:
        return None
    return min(mem_from_site_gb(per_unit * units), usable_memory(part))


def allocate(part: PartitionSpec, exp: ExperimentSpec, threads: int, ranks_per_node: int = 1,
             gpus_per_rank: int = 0) -> Allocation:
    """The request of one run with `threads` threads per rank on `part`; a
    whole node (exclusive, whole_node) is shared evenly by the node's ranks."""
    exclusive = exp.exclusive
    rpn = max(1, ranks_per_node)
    if part.gpus > 0:
        gpus = rpn * gpus_per_rank if gpus_per_rank else 1
        cpus = node_cpus(part) // rpn if exclusive else part.cpus_per_gpu * max(1, gpus_per_rank)
    else:
        gpus = 0
        cpus = exp.cpus_per_run or threads
        if exclusive or part.whole_node:
            cpus = node_cpus(part) // rpn
    mem = exp.mem_gb if exp.mem_gb is not None else share_memory(part, cpus * rpn, gpus)
    if mem is None:
        mem = part.mem_gb
    return Allocation(cpus=cpus, gpus=gpus, mem_gb=mem, exclusive=exclusive)


def step_allocation(part: PartitionSpec, threads: int, gpus: int) -> Allocation:
    """What a build or preflight job asks: the cores of the most threads it
    runs (at most the node; the whole node where the partition demands it),
    or one GPU's share; memory by the partition's rule. Never exclusive: it
    times nothing."""
    if gpus:
        cpus = part.cpus_per_gpu * gpus
    elif part.whole_node:
        cpus = node_cpus(part)
    else:
        cpus = max(1, min(threads, node_cpus(part)))
    mem = share_memory(part, cpus, gpus)
    return Allocation(cpus=cpus, gpus=gpus, mem_gb=part.mem_gb if mem is None else mem, exclusive=False)


def memory_refusal(part: PartitionSpec, mem_gb: float | None, what: str) -> str | None:
    """Why `mem_gb` (GiB, as requested) cannot be asked on `part`, or None."""
    if mem_gb is None:
        return None
    if not (math.isfinite(mem_gb) and mem_gb > 0):
        return f"{what} must be a positive number of GB"
    limit = usable_memory(part)
    if round(mem_gb * 1024) > round(limit * 1024):
        return (f"{what} asks {mem_gb * 1024:.0f} MiB, above the {limit * 1024:.0f} MiB "
                f"({usable_site_gb(part):g} GB) a job may ask on a node of partition {part.name} "
                f"(cluster.partitions.{part.name}.usable_mem_gb): such a job would never be scheduled")
    return None


def check_memory(part: PartitionSpec, exp: ExperimentSpec) -> None:
    """Every memory request within what the partition's nodes let a job ask
    (docs/sites.md#memory-a-job-may-ask): a larger one is never scheduled."""
    where = f"cluster.partitions.{part.name}"
    if part.usable_mem_gb is not None and not 0 < part.usable_mem_gb <= part.memory_gb:
        raise ConfigError(f"{where}.usable_mem_gb={part.usable_mem_gb:g} must be positive and at most the "
                          f"node's memory_gb={part.memory_gb:g}")
    for what, mem in ((f"{where}.mem_gb", part.mem_gb), ("experiment.mem_gb", exp.mem_gb)):
        refusal = memory_refusal(part, mem, f"{what}={mem:g}" if mem is not None else what)
        if refusal:
            raise ConfigError(refusal)


def by_fill(cluster: ClusterSpec, exp: ExperimentSpec, sweep: SweepSpec,
            parts: list[PartitionSpec]) -> list[tuple[PartitionSpec, list[int]]]:
    """The sweep's partitions, each with the thread counts it runs: on a partition that names a
    `whole_node_partition`, a sweep naming no partition sends the counts whose cores (threads, or
    `experiment.cpus_per_run`) fill a node there. Named partitions are taken as named."""
    out: list[tuple[PartitionSpec, list[int]]] = []
    for part in parts:
        target = part.whole_node_partition
        if sweep.partitions or target is None:
            out.append((part, list(sweep.threads)))
            continue
        whole = cluster.partitions.get(target)
        if whole is None or not whole.whole_node or whole.device != part.device:
            raise ConfigError(f"cluster.partitions.{part.name}.whole_node_partition={target!r} must name a "
                              f"whole_node {part.device} partition of cluster {cluster.name}")
        fill = [t for t in sweep.threads if (exp.cpus_per_run or t) >= node_cpus(part)]
        rest = [t for t in sweep.threads if t not in fill]
        out += [(p, threads) for p, threads in ((part, rest), (whole, fill)) if threads]
    return out
