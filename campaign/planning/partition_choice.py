"""Which partitions a sweep's runs go to (campaign.planning.plan expands
them): the ones it names, or per device the cluster's default, the
multi-node one for a CPU sweep over several nodes."""

from __future__ import annotations

from campaign.config.schema import ClusterSpec, KernelSpec, PartitionSpec, SweepSpec
from campaign.plumbing.errors import ConfigError


def default_partition(cluster: ClusterSpec, device: str, multinode: bool = False) -> PartitionSpec | None:
    """The partition a sweep naming none gets for `device`: the configured default (a CPU sweep over
    several nodes: the multi-node one), else the first partition of that device (never all of them)."""
    which = "gpu" if device != "cpu" else "multinode" if multinode and cluster.default_multinode_partition else "cpu"
    name = {"gpu": cluster.default_gpu_partition, "cpu": cluster.default_cpu_partition}.get(
        which, cluster.default_multinode_partition
    )
    if name:
        if name not in cluster.partitions:
            raise ConfigError(
                f"cluster.default_{which}_partition={name!r}: "
                f"cluster {cluster.name} has no such partition; known: {', '.join(cluster.partitions)}"
            )
        part = cluster.partitions[name]
        if (part.device == "cpu") != (device == "cpu"):  # a cuda sweep on CPU nodes, or a CPU one on GPU nodes
            kind = (
                "a CPU partition (no gpus): name a GPU partition"
                if part.device == "cpu"
                else "a GPU partition: name a CPU partition"
            )
            raise ConfigError(f"cluster.default_{which}_partition={name!r} is {kind}")
        return part
    return next((p for p in cluster.partitions.values() if p.device == device), None)


def _sweep_devices(sweep: SweepSpec, kernel: KernelSpec) -> list[str]:
    if sweep.devices:
        return list(sweep.devices)
    offered = {d for i in sweep.impls if i in kernel.impls for d in kernel.impls[i].devices}
    return ["cpu"] if "cpu" in offered or not offered else ["cuda"]


def sweep_partitions(cluster: ClusterSpec, sweep: SweepSpec, kernel: KernelSpec | None = None) -> list[PartitionSpec]:
    """The partitions a sweep's runs go to: those it names, or for each of its devices the
    cluster's default (default_partition); an unknown name lists the known ones."""
    if not sweep.partitions and kernel is not None:
        found = []
        for device in _sweep_devices(sweep, kernel):
            part = default_partition(cluster, device, multinode=max(sweep.nodes, default=1) > 1)
            if part is None:
                raise ConfigError(
                    f"cluster {cluster.name} has no {device} partition for {sweep.kernel}; "
                    f"name one in experiment.sweeps.N.partitions"
                )
            found.append(part)
        return found
    names = sweep.partitions or list(cluster.partitions)
    out = []
    for name in names:
        if name not in cluster.partitions:
            known = ", ".join(cluster.partitions)
            raise ConfigError(f"cluster {cluster.name} has no partition {name!r}; known: {known}")
        out.append(cluster.partitions[name])
    return out
