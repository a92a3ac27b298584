"""What a campaign will cost: core-hours, GPU-hours and the site's SUs (pure).

Why: users on Anvil and Delta judge a tool first by whether it burns their
allocation. `submit --dry-run` prints this estimate per partition, each
partition's build and preflight jobs on lines of their own, and in total,
under the charging rule each partition's config states (`charging:` with its
source), at the requested walltime (the most a job can be billed), and it
leaves out runs already in the ledger, which a real submit would skip.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from campaign.config.schema import ChargingSpec, ClusterSpec, PartitionSpec
from campaign.planning.resources import mem_site_gb, node_cpus
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError

MODELS = ("none", "cores", "memory_or_cores", "whole_node", "per_gpu")


@dataclass
class Charge:
    """Totals of one partition (or of the whole campaign: partition "total")."""

    partition: str
    runs: int = 0
    arrays: int = 0  # sbatch submissions (arrays or single jobs)
    existing: int = 0  # runs already in the ledger: a real submit skips them
    core_hours: float = 0.0
    gpu_hours: float = 0.0
    su: float = 0.0
    model: str = ""
    source: str = ""
    kind: str = "runs"  # "runs", or the jobs in front of them: "build job", "preflight job"
    # the total's: partitions of its jobs whose cost is not known (charging.model none), and whether
    # any of its jobs is priced; a cost not known is never added as 0 SU
    unpriced: list[str] = field(default_factory=list)
    priced: bool = False

    def add(self, other: Charge) -> None:
        if other.kind == "runs":  # a build/preflight job is no run: its cost counts, not its count
            self.runs += other.runs
            self.arrays += other.arrays
            self.existing += other.existing
        self.core_hours += other.core_hours
        self.gpu_hours += other.gpu_hours
        self.su += other.su
        if other.model != "none":
            self.priced = True
        elif other.runs and other.partition not in self.unpriced:
            self.unpriced.append(other.partition)


def check_charging(name: str, spec: ChargingSpec) -> None:
    if spec.model not in MODELS:
        raise ConfigError(f"cluster.partitions.{name}.charging.model={spec.model!r}; known: {', '.join(MODELS)}")
    if spec.model == "memory_or_cores" and not spec.mem_gb_per_unit:
        raise ConfigError(f"cluster.partitions.{name}.charging.mem_gb_per_unit is required by memory_or_cores")


@dataclass(frozen=True)
class StepCost:
    """A job in front of the runs (a partition's build or preflight job), as charged."""

    kind: str  # "build" or "preflight"
    partition: str
    cpus: int
    gpus: int
    mem_gb: float | None  # GiB as requested; None: the site's default share
    walltime_min: int


def job_units(part: PartitionSpec, cpus: int, gpus: int, mem_gb: float | None, exclusive: bool = False) -> float:
    """Charged units of one job (cores or GPUs) under the partition's rule."""
    spec = part.charging
    mem = mem_site_gb(mem_gb) if mem_gb is not None else None
    if spec.model == "none":
        return 0.0
    if spec.model == "cores":
        return float(cpus)
    if spec.model == "whole_node" or (exclusive and spec.model != "per_gpu"):
        return float(node_cpus(part))
    if spec.model == "memory_or_cores":
        share = mem / spec.mem_gb_per_unit if mem is not None and spec.mem_gb_per_unit else 0.0
        return max(float(cpus), share)
    # per_gpu
    if exclusive:
        return float(part.gpus)
    shares = [float(gpus)]
    if spec.cores_per_unit:
        shares.append(cpus / spec.cores_per_unit)
    if spec.mem_gb_per_unit and mem is not None:
        shares.append(mem / spec.mem_gb_per_unit)
    return max(shares)


def units(part: PartitionSpec, run: RunSpec) -> float:
    """Charged units of one run's job: each of its nodes is billed like a
    one-node job of the same shape (its ranks' cores, its GPUs, --mem per node)."""
    per_node = job_units(part, run.alloc_cpus * run.ranks_per_node, run.gpus, run.mem_gb, run.exclusive)
    return run.nodes * per_node


def job_su(part: PartitionSpec, job_units_: float, walltime_min: int) -> float:
    """SUs of one job of `job_units_` units at its requested walltime."""
    if part.charging.model == "none":
        return 0.0
    return max(job_units_ * walltime_min / 60 * part.charging.su_per_unit_hour, part.charging.min_su)


def run_su(part: PartitionSpec, run: RunSpec) -> float:
    """SUs of one job at its requested walltime."""
    return job_su(part, units(part, run), run.walltime_min)


def estimate(
    cluster: ClusterSpec,
    runs: Sequence[RunSpec],
    arrays: dict[str, int],
    existing: Iterable[str] = (),
    steps: Sequence[StepCost] = (),
) -> list[Charge]:
    """Per partition, then each partition's build and preflight jobs apart
    (`steps`: what a real submit would send in front of the new runs), then
    the total; runs whose key is in `existing` are counted apart and cost
    nothing (a real submit would not send them)."""
    known = set(existing)
    out: dict[str, Charge] = {}
    for run in runs:
        part = cluster.partitions[run.partition]
        check_charging(part.name, part.charging)
        c = out.setdefault(run.partition, Charge(run.partition, model=part.charging.model, source=part.charging.source))
        if run.key in known:
            c.existing += 1
            continue
        hours = run.walltime_min / 60
        c.runs += 1
        c.core_hours += run.alloc_cpus * run.ranks * hours
        c.gpu_hours += run.gpus * run.nodes * hours
        c.su += run_su(part, run)
    for name, count in arrays.items():
        if name in out:
            out[name].arrays = count
    chained: dict[tuple[str, str], Charge] = {}
    for step in steps:
        part = cluster.partitions[step.partition]
        c = chained.setdefault(
            (step.partition, step.kind),
            Charge(step.partition, kind=f"{step.kind} job", model=part.charging.model, source=part.charging.source),
        )
        hours = step.walltime_min / 60
        c.runs += 1
        c.core_hours += step.cpus * hours
        c.gpu_hours += step.gpus * hours
        c.su += job_su(part, job_units(part, step.cpus, step.gpus, step.mem_gb), step.walltime_min)
    total = Charge("total")
    for c in [*out.values(), *chained.values()]:
        total.add(c)
    return [*out.values(), *chained.values(), total]


def charge_lines(charges: Sequence[Charge]) -> list[str]:
    """The dry run's estimate, one line per partition and the total."""
    lines = []
    for c in charges:
        rule = f"  [{c.model}: {c.source}]" if c.source else (f"  [{c.model}]" if c.model else "")
        if c.kind != "runs":  # a build or preflight job, at its own (short) walltime
            lines.append(
                f"{c.partition} {c.kind}: {c.runs} job(s); {c.core_hours:.2f} core-hours, "
                f"{c.gpu_hours:.2f} GPU-hours at its walltime; {_charged(c)}{rule}"
            )
            continue
        skip = f", {c.existing} already in the ledger (skipped)" if c.existing else ""
        lines.append(
            f"{c.partition}: {c.runs} runs in {c.arrays} array(s){skip}; "
            f"{c.core_hours:.2f} core-hours, {c.gpu_hours:.2f} GPU-hours at the requested walltime; "
            f"{_charged(c)}{rule}"
        )
    return lines


def _charged(c: Charge) -> str:
    """The SUs, where the rules of the jobs counted give them: a partition without a rule has no
    estimate, and a total over such a partition is a lower bound that names it."""
    if c.model == "none" or (c.partition == "total" and c.unpriced and not c.priced):
        return "no SU estimate: no charging rule (charging.model none)"
    if c.partition == "total" and c.unpriced:
        return f"charged at least {c.su:.2f} SU (no charging rule: {', '.join(c.unpriced)})"
    return f"charged {c.su:.2f} SU"
