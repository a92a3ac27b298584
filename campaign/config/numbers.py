"""The numbers a config declares (a partition's, an experiment's), and their bounds.

Each is a fact a plan, a charge or a report divides by or loops over: a
roofline fraction is a rate over `ceilings.mem_bw`, the NUMA penalty splits
`cores` into `numa_domains`, the thread limit is `cores x threads_per_core`.
OmegaConf takes NaN, inf, 0 and negatives for a float field and 0 or
negatives for an int, so each is checked here against a sensible range
(docs/sites.md#numbers-a-partition-declares): outside it is one line naming
the key (exit 2) at compose time. The report, which reads the cluster as
recorded in the ledger (where an older campaign may hold such a value), takes
a fact outside its range as not declared, by the same rule (`problem`).
An experiment's repeats, warm-up calls, walltime and memory are bounded the
same way (docs/design.md#experiment-numbers): a count past SQLite's 64-bit
integers is stored as a real, and its job would call the program until the
walltime ends it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from campaign.config.schema import ExperimentSpec, PartitionSpec
from campaign.plumbing.errors import ConfigError


@dataclass(frozen=True)
class Bound:
    """What a number must be: whole or not, above (or from) `low`, at most `high`."""

    what: str  # its unit, as the error says it
    low: float
    high: float
    whole: bool = False
    low_allowed: bool = True  # False: strictly above `low`


WALLTIME_MAX_MIN = 366 * 24 * 60  # a year: no site lets a job run longer
MEMORY_MAX_GB = 1e5  # 100 TB: above any node's memory
# a node's (or GPU's) ceilings: an exaFLOP/s and 10 PB/s are far above any one node
CEILINGS = {
    "peak_flops_fp32": Bound("FLOP/s", 0, 1e18, low_allowed=False),
    "peak_flops_bf16": Bound("FLOP/s", 0, 1e18, low_allowed=False),
    "peak_flops_fp16": Bound("FLOP/s", 0, 1e18, low_allowed=False),
    "mem_bw": Bound("bytes/s", 0, 1e16, low_allowed=False),
}
PARTITION = {
    "sockets": Bound("sockets per node", 1, 256, whole=True),
    "cores_per_socket": Bound("cores per socket", 1, 4096, whole=True),
    "numa_domains": Bound("NUMA domains per node", 1, 4096, whole=True),
    "threads_per_core": Bound("hardware threads per core", 1, 16, whole=True),
    "gpus": Bound("GPUs per node", 0, 64, whole=True),
    "cpus_per_gpu": Bound("cores per GPU", 1, 4096, whole=True),
    "max_walltime_min": Bound("minutes", 1, WALLTIME_MAX_MIN, whole=True),
    "max_nodes": Bound("nodes per job", 1, 100_000, whole=True),
    "memory_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
    "usable_mem_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
    "mem_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
    "mem_per_core_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
    "mem_per_gpu_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
}
CHARGING = {
    "su_per_unit_hour": Bound("SUs per unit-hour", 0, 1e9),
    "mem_gb_per_unit": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
    "cores_per_unit": Bound("cores", 0, 1e6, low_allowed=False),
    "min_su": Bound("SUs", 0, 1e9),
}
EXPERIMENT = {
    "repeats": Bound("timed calls per n", 1, 100_000, whole=True),
    "warmup": Bound("untimed calls per n", 0, 10_000, whole=True),
    "walltime_min": Bound("minutes", 1, WALLTIME_MAX_MIN, whole=True),
    "mem_gb": Bound("GB", 0, MEMORY_MAX_GB, low_allowed=False),
}
REFERENCE = {
    "time_s": Bound("seconds", 0, 1e9, low_allowed=False),
    "flops_per_s": Bound("FLOP/s", 0, 1e21, low_allowed=False),
    "tolerance": Bound("relative tolerance", 0, 100),
}


def problem(value: object, bound: Bound) -> str | None:
    """Why `value` is not a number within `bound`, or None (None itself: not declared, no problem)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, not {type(value).__name__}"
    kind = "a whole number" if bound.whole else "a finite number"
    span = (
        f"from {bound.low:g} to {bound.high:g}" if bound.low_allowed else f"above {bound.low:g}, at most {bound.high:g}"
    )
    outside = value < bound.low or (value == bound.low and not bound.low_allowed) or value > bound.high
    if not math.isfinite(value) or (bound.whole and value != int(value)) or outside:
        return f"must be {kind} of {bound.what}, {span}"
    return None


def fact(value: object, bound: Bound) -> float | None:
    """A recorded fact as the report takes it: None where it is outside its bound (as if not declared)."""
    return None if value is None or problem(value, bound) is not None else float(value)  # type: ignore[arg-type]


def _check(obj: object, bounds: dict[str, Bound], where: str) -> None:
    for key, bound in bounds.items():
        value = getattr(obj, key)
        why = problem(value, bound)
        if why is not None:
            raise ConfigError(f"{where}.{key}={str(value)[:40]} {why}")


def check_partition(part: PartitionSpec, where: str) -> None:
    """Every number of one partition within its bound, and NUMA domains no more than its cores."""
    _check(part, PARTITION, where)
    _check(part.ceilings, CEILINGS, f"{where}.ceilings")
    _check(part.charging, CHARGING, f"{where}.charging")
    for i, ref in enumerate(part.references):
        _check(ref, REFERENCE, f"{where}.references[{i}]")
    if part.numa_domains > part.cores:
        raise ConfigError(
            f"{where}.numa_domains={part.numa_domains}: more NUMA domains than the node's "
            f"{part.cores} cores (sockets x cores_per_socket)"
        )
    if part.gpus and part.cpus_per_gpu * part.gpus > part.cores:  # a job of the node's GPUs would never start
        raise ConfigError(
            f"{where}.cpus_per_gpu={part.cpus_per_gpu}: {part.gpus} GPUs ask {part.cpus_per_gpu * part.gpus} "
            f"cores, more than the node's {part.cores} (sockets x cores_per_socket)"
        )


def check_experiment(exp: ExperimentSpec) -> None:
    """The experiment's repeats, warm-up, walltime and memory within their bounds (replicates:
    campaign.planning.replicates)."""
    _check(exp, EXPERIMENT, "experiment")
