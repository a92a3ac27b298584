"""How a run spreads over nodes, ranks and GPUs (pure: no I/O).

Why a module of its own: a sweep of MPI or multi-GPU programs adds three
dimensions beside threads (docs/design.md#ranks-nodes-and-launchers):
nodes per job, ranks (tasks) per node and GPUs per rank; `threads` is the
cores of one rank. What a layout asks must fit the partition (its cores, its
GPUs, the nodes one job may span) at compose time: a layout Slurm can never
schedule would otherwise pend forever or be refused at sbatch, after the
earlier arrays of the campaign went out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from campaign.backends.capabilities import capabilities
from campaign.config.schema import PartitionSpec, SweepSpec
from campaign.plumbing.errors import ConfigError

LAUNCHERS = ("srun", "mpirun")
GPU_REQUESTS = ("per_task", "per_node")


@dataclass(frozen=True)
class Layout:
    """One point of the nodes x ranks_per_node x gpus_per_rank x threads sweep."""

    threads: int  # cores of one rank (--cpus-per-task)
    nodes: int = 1
    ranks_per_node: int = 1
    gpus_per_rank: int = 0  # 0: no GPU per rank (a GPU partition's single-rank run still gets its one GPU)

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node


def check_counts(sweep: SweepSpec, where: str) -> None:
    """The sweep's counts a job is asked for: threads, nodes and ranks per node each >= 1, GPUs per rank
    >= 0; before anything reads them (a rank count of 0 must not first surface as "no rank 0")."""
    _positive(sweep.threads, f"{where}.threads")
    _positive(sweep.nodes, f"{where}.nodes")
    _positive(sweep.ranks_per_node, f"{where}.ranks_per_node")
    if sweep.gpus_per_rank:
        _positive(sweep.gpus_per_rank, f"{where}.gpus_per_rank", zero_ok=True)


def _positive(values: list[int], where: str, zero_ok: bool = False) -> None:
    low = 0 if zero_ok else 1
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < low for v in values):
        kind = "non-negative" if zero_ok else "positive"
        raise ConfigError(f"{where} must be a non-empty list of {kind} whole numbers, got {values}")


def check_launcher(part: PartitionSpec, cluster: str) -> None:
    where = f"cluster.partitions.{part.name}"
    if part.launcher not in LAUNCHERS:
        raise ConfigError(f"{where}.launcher={part.launcher!r} ({cluster}); known: {', '.join(LAUNCHERS)}")
    if not isinstance(part.max_nodes, int) or part.max_nodes < 1:
        raise ConfigError(f"{where}.max_nodes must be a positive number of nodes, got {part.max_nodes!r}")
    if part.gpu_request not in GPU_REQUESTS:
        raise ConfigError(f"{where}.gpu_request={part.gpu_request!r} ({cluster}); known: {', '.join(GPU_REQUESTS)}")
    if not part.mpi or not part.mpi.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"{where}.mpi={part.mpi!r} is not an MPI plugin name (e.g. pmix, pmi2, none)")


def layouts(part: PartitionSpec, sweep: SweepSpec, index: int, cluster: str, cpus_limit: int,
            backend: str = "slurm") -> list[Layout]:
    """The sweep's layouts on `part`, each checked against it. `cpus_limit`:
    the hardware threads one node offers a job (4x with cpus_per_run, where
    oversubscribing is asked on purpose). Only a scheduler starts ranks: the
    local backend runs one process per run."""
    where = f"experiment.sweeps.{index}"  # (its counts: check_counts, when the plan checked the sweep)
    check_launcher(part, cluster)
    here = f"partition {part.name} ({cluster})"
    too_many_nodes = [n for n in sweep.nodes if n > part.max_nodes]
    if too_many_nodes:
        raise ConfigError(f"{where}.nodes {too_many_nodes} exceed the {part.max_nodes} node(s) a job may span on "
                          f"{here} (cluster.partitions.{part.name}.max_nodes)")
    if not capabilities(backend).multi_node and (any(n > 1 for n in sweep.nodes) or any(r > 1 for r in sweep.ranks_per_node)
                               or any(sweep.gpus_per_rank)):
        raise ConfigError(f"{where}: nodes, ranks_per_node and gpus_per_rank need a Slurm cluster; cluster "
                          f"{cluster} (backend {backend}) starts one process per run: pick a Slurm cluster")
    gpu_counts = list(sweep.gpus_per_rank) or [0]
    if part.gpus == 0 and any(gpu_counts):
        raise ConfigError(f"{where}.gpus_per_rank {sweep.gpus_per_rank}: {here} has no GPUs")
    out = []
    for nodes, rpn, gpr in itertools.product(sweep.nodes, sweep.ranks_per_node, gpu_counts):
        if part.gpus:
            gpus_node = rpn * gpr if gpr else (1 if rpn == 1 else 0)
            if rpn > 1 and not gpr:
                raise ConfigError(f"{where}: {rpn} ranks per node on GPU {here} need gpus_per_rank "
                                  f"(one rank per GPU: gpus_per_rank=[1])")
            if gpus_node > part.gpus:
                raise ConfigError(f"{where}: {rpn} ranks per node x {gpr} GPU(s) per rank = {gpus_node} GPUs, "
                                  f"above the {part.gpus} of a node of {here}")
            threads = [part.cpus_per_gpu * max(gpr, 1)]
        else:
            threads = list(sweep.threads)
        for t in threads:
            if rpn > 1 and rpn * t > cpus_limit:
                raise ConfigError(f"{where}: {rpn} ranks per node x {t} threads = {rpn * t} cores, above the "
                                  f"{cpus_limit} of a node of {here}")
            out.append(Layout(threads=t, nodes=nodes, ranks_per_node=rpn, gpus_per_rank=gpr))
    return out
