"""Structured-config schemas: the dataclasses *are* the config contract.

Hydra merges the YAML files in conf/ onto these (registered in the
ConfigStore by `campaign.config.load`), so a misspelt key or a wrong type is an
error at compose time, before anything is planned or submitted.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# OmegaConf's marker of a required value (omegaconf.MISSING is this string; a
# test checks they agree): the schemas are read by `show` and `jobs`, which
# must not load OmegaConf (start-up time).
MISSING: Any = "???"


@dataclass
class Ceilings:
    """Roofline ceilings of one node (CPU) or one GPU (GPU partitions)."""

    peak_flops_fp32: float | None = None  # FLOP/s
    peak_flops_bf16: float | None = None  # FLOP/s (dense, tensor cores on GPUs)
    peak_flops_fp16: float | None = None  # FLOP/s where fp16's rate is not bf16's (AMD MI100: twice); absent: bf16's
    mem_bw: float | None = None  # bytes/s
    source: str = ""  # "measured <how>" or "datasheet <where>": reports print it


@dataclass
class ReferenceSpec:
    """An expected value for one point, as ReFrame's references: `campaign
    compare --reference` flags measured medians outside the tolerance."""

    kernel: str = MISSING
    impl: str = MISSING
    variant: str = MISSING
    threads: int = 1
    n: int = MISSING
    dtype: str | None = None  # None: any dtype
    params: str | None = None  # extra program args as results carry them ("sdpa-backend=cudnn"); None: any
    time_s: float | None = None  # expected median time per call; or
    flops_per_s: float | None = None  # expected rate (cost-model FLOPs / median time)
    tolerance: float = 0.1  # relative: 0.1 = +-10%


@dataclass
class ProfilerSpec:
    """A partition's profiler site knobs, for `experiment.profile` (docs/contracts.md).

    Values never become shell syntax: `module` is quoted, each `setup` entry is
    split into words and re-quoted (one command with literal arguments), and
    `sbatch_extra` goes through submitit's quoting like the partition's own.
    """

    enabled: bool = False  # the nodes may be profiled (Slurm: required for experiment.profile)
    ncu: str | None = None  # ncu on the nodes; None: `ncu` on PATH
    module: str | None = None  # `module load` for the profiler (after the partition's)
    perf_allowed: bool = False  # `perf stat` may read hardware events on these nodes
    sbatch_extra: dict[str, Any] = field(default_factory=dict)  # e.g. {constraint: perfctr}
    setup: list[str] = field(default_factory=list)  # e.g. ["dcgmi profile --pause"]


@dataclass
class ChargingSpec:
    """How the site bills a job on this partition (docs/sites.md); the dry run
    prints the estimate. Models:
      none             no estimate
      cores            allocated cores x hours
      memory_or_cores  max(cores, memory / mem_gb_per_unit) x hours (Delta cpu, Anvil shared)
      whole_node       the node's cores x hours, whatever was asked (Anvil wholenode)
      per_gpu          max(GPUs, cores / cores_per_unit, memory / mem_gb_per_unit) x hours
    Charged units x su_per_unit_hour = SUs; a job costs at least min_su."""

    model: str = "none"
    su_per_unit_hour: float = 1.0  # SUs per core-hour (CPU models) or GPU-hour (per_gpu)
    mem_gb_per_unit: float | None = None  # GB (1e9 bytes) of memory that bill as one unit
    cores_per_unit: float | None = None  # per_gpu: cores that bill as one GPU
    min_su: float = 0.0  # minimum charge of any job
    source: str = ""  # where the rule comes from (the YAML comment says more)


# container.runtime -> the command that runs it (campaign.planning.run_env renders each)
CONTAINER_RUNTIMES = {
    "apptainer": "apptainer",
    "singularity": "singularity",
    "podman": "podman",
    "charliecloud": "ch-run",
}


@dataclass
class ContainerSpec:
    """The image a run's program starts in, per rank, inside the launcher
    (docs/sites.md#containers). Its digest and the runtime's version are part
    of the run's identity."""

    runtime: str = ""  # apptainer | singularity | podman | charliecloud; "": no container
    image: str = ""  # a .sif file or docker:// reference, a podman image, a charliecloud image folder
    options: list[str] = field(default_factory=list)  # the runtime's own options, before the image
    gpus: bool = False  # pass the partition's GPUs in (--nv; podman: CDI nvidia.com/gpu=all); GPU partitions only
    # the image's interpreter for programs the config runs with campaign.python (torch kernels): the
    # repository is bound and put on PYTHONPATH; "": such programs keep campaign.python's path
    python: str = ""


@dataclass
class SpackSpec:
    """A Spack environment activated in the job script before the program
    (and before the build and preflight); its spack.lock's hash is part of the
    run's identity."""

    env: str | None = None  # a named environment or an environment folder (spack env activate); None: no Spack
    view: str | None = None  # or a view's folder: its bin/ and lib/ put first on PATH and LD_LIBRARY_PATH
    lock: str | None = None  # the spack.lock to hash; None: <env folder>/spack.lock where env is a folder


@dataclass
class PartitionSpec:
    """One partition as users request it; facts feed planning and analysis."""

    name: str = ""  # filled from the key under cluster.partitions when empty
    sockets: int = 1
    cores_per_socket: int = MISSING
    numa_domains: int = 1
    threads_per_core: int = 1
    memory_gb: float = MISSING  # nominal memory per node, GB = 1e9 bytes (the site's hardware table)
    # the most memory one job may ask on a node, GB = 1e9 bytes: Slurm's RealMemory less what the
    # site keeps for the OS, as the site documents it; None: memory_gb less 5% (campaign.planning.resources)
    usable_mem_gb: float | None = None
    gpus: int = 0  # GPUs per node
    gpu_model: str | None = None
    cpus_per_gpu: int = 1  # CPU cores requested with each GPU
    max_walltime_min: int = 60
    account: str | None = None  # overrides cluster.account
    qos: str | None = None
    requires_account: bool = False  # site rejects jobs without --account
    whole_node: bool = False  # jobs must take the whole node (Anvil `wholenode`)
    # where a sweep naming no partition sends its runs whose cores fill a node of this one (a whole_node
    # partition of the same nodes: Anvil `shared` -> `wholenode`); None: they stay here
    whole_node_partition: str | None = None
    mem_gb: float | None = None  # --mem per job when no per-core/per-GPU rule is set; None = site default
    mem_per_core_gb: float | None = None  # memory asked per allocated core, GB = 1e9 bytes (CPU partitions)
    mem_per_gpu_gb: float | None = None  # memory asked per GPU, GB = 1e9 bytes (GPU partitions)
    account_hint: str | None = None  # the site's account pattern, named in the missing-account error
    clusters: str | None = None  # Slurm cluster(s) of this partition (sbatch -M); overrides cluster.clusters
    modules: list[str] = field(default_factory=list)  # after cluster.modules
    env: dict[str, str] = field(default_factory=dict)  # after cluster.env
    sbatch_extra: dict[str, Any] = field(default_factory=dict)  # e.g. {constraint: cpu, hold: true}
    ceilings: Ceilings = field(default_factory=Ceilings)
    references: list[ReferenceSpec] = field(default_factory=list)  # expected values (compare --reference)
    profiler: ProfilerSpec = field(default_factory=ProfilerSpec)  # not enabled: profiling refused (Slurm)
    charging: ChargingSpec = field(default_factory=ChargingSpec)
    # multi-rank runs (docs/design.md#ranks-nodes-and-launchers)
    max_nodes: int = 1  # nodes one job may span (the site's per-job limit for this partition)
    launcher: str = "srun"  # srun (srun --mpi=<mpi>) | mpirun: how a run of more than one rank starts
    mpi: str = "pmix"  # srun's --mpi plugin; default: no --mpi (the site's MpiDefault, as its own scripts run srun)
    launcher_args: list[str] = field(default_factory=list)  # binding options, e.g. [--cpu-bind=cores]
    # how a multi-rank job asks its GPUs: per_task (--gpus-per-task) or per_node (--gpus-per-node, as
    # Delta's job scripts do); the launcher binds one rank to its GPUs either way (--gpus-per-task)
    gpu_request: str = "per_task"
    container: ContainerSpec = field(default_factory=ContainerSpec)  # the runs' image (an experiment's own wins)
    spack: SpackSpec = field(default_factory=SpackSpec)  # the runs' Spack environment (an experiment's own wins)

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def device(self) -> str:
        return "cuda" if self.gpus > 0 else "cpu"


@dataclass
class BuildSpec:
    """Compilers and flags for `make kernels` on this cluster (never -march=native by default)."""

    cc: str = "gcc"
    fc: str = "gfortran"
    mpicc: str = "mpicc"  # the MPI wrapper compiler of kernels/mpi, found through the partition's MPI modules
    cflags: str = "-O3 -fopenmp"
    fflags: str = "-O3 -fopenmp"


@dataclass
class ClusterSpec:
    """A cluster: its scheduler, job environment and partitions."""

    name: str = MISSING
    backend: str = "local"  # "local" (this machine, no scheduler) or "slurm"
    description: str = ""
    account: str | None = None
    qos: str | None = None
    max_array_size: int | None = None  # None: read MaxArraySize from scontrol
    array_parallelism: int = 256  # the %N of --array
    modules: list[str] = field(default_factory=list)  # `module load` lines, in order
    module_reset: bool = False  # `module reset` before loading (Delta)
    env: dict[str, str] = field(default_factory=dict)
    stack_unlimited: bool = True  # ulimit -s unlimited (the 8 MB stack crash)
    omp_proc_bind: str = "close"
    omp_places: str = "cores"
    job_template: str = "default"  # job_templates/<name>.sh
    local_parallel_jobs: int = 1  # local backend: jobs at once (timings need a quiet machine)
    # walltime of each partition's preflight job (minutes; at most the partition's maximum):
    # it runs every program once at its smallest n, so minutes, not the runs' walltime
    preflight_walltime_min: int = 10
    build: BuildSpec = field(default_factory=BuildSpec)
    clusters: str | None = None  # Slurm cluster(s) jobs go to (sbatch -M); None = the local one
    default_cpu_partition: str | None = None  # sweeps naming no partition; None = the first CPU partition
    default_gpu_partition: str | None = None  # None = the first GPU partition
    # CPU sweeps naming no partition whose nodes go above 1 (MPI programs over nodes); None = default_cpu_partition
    default_multinode_partition: str | None = None
    allow_node_local: bool = False  # accept a workdir/ledger on /tmp or /dev/shm with Slurm (test clusters)
    partitions: dict[str, PartitionSpec] = field(default_factory=dict)


@dataclass
class ImplSpec:
    """How to start one implementation of a kernel, and what it supports."""

    argv: list[str] = field(default_factory=list)  # program and fixed leading arguments (or `script`)
    # driven_by: tool: a bash script run under `bash -eu` instead of argv (placeholders shell-quoted)
    script: str | None = None
    variants: list[str] = MISSING
    devices: list[str] = field(default_factory=lambda: ["cpu"])
    dtypes: list[str] = field(default_factory=lambda: ["fp32"])
    profilers: list[str] = field(default_factory=list)  # what --profile accepts, e.g. [ncu]
    # start through the partition's launcher even at one rank (an MPI program started bare inside a
    # Slurm step takes itself for srun-launched and fails in MPI_Init); runs of several ranks always are
    launched: bool = False


@dataclass
class FigureSpec:
    """One figure of merit read from a tool-driven program's output (docs/byob.md)."""

    name: str = MISSING  # e.g. Triad, bandwidth, events_per_s
    regex: str | None = None  # last match wins; group `value`, else group 1, else the whole match
    json: str | None = None  # or: the key of a JSON object printed on one line (a dotted path: nested)
    source: str = "stdout"  # stdout | stderr | file:<path in the job folder, placeholders allowed>
    unit: str = ""  # s, ms, us, ns (a time) or a rate: GB/s, MiB/s, events/s, GFLOP/s ...
    higher_is_better: bool = False  # rates: true; times: false
    # launched programs: max | min | sum | mean of the figure over every rank's output; None: the result rank's
    reduce: str | None = None
    # a fixed-duration program's report of its set time (sysbench's `total time`): stored, never analysed
    duration: bool = False


@dataclass
class SanitySpec:
    """A pattern a program's output must (expect: match) or must not (expect: absent) contain."""

    regex: str = MISSING
    source: str = "stdout"
    expect: str = "match"  # match | absent


@dataclass
class KernelSpec:
    """A kernel family (one program per implementation), or any benchmark
    program declared here alone (`driven_by: tool`, docs/byob.md)."""

    name: str = MISSING
    description: str = ""
    impls: dict[str, ImplSpec] = field(default_factory=dict)
    # program: it follows the kernel contract (loops over n and repeats, writes the CSV);
    # tool: campaign runs impls.*.argv once per n and repeat, placeholders filled, figures read by pattern
    driven_by: str = "program"
    env: dict[str, str] = field(default_factory=dict)  # tool: the program's environment (placeholders allowed)
    # tool: input files rendered into the attempt folder before each invocation: file name -> template
    # text, or (input_templates) file name -> template file (absolute, or in a config folder)
    inputs: dict[str, str] = field(default_factory=dict)
    input_templates: dict[str, str] = field(default_factory=dict)
    figures: list[FigureSpec] = field(default_factory=list)  # tool: at least one
    # tool: the program runs for a set time (sysbench --time=5): its time measures the setting, so the
    # analysis judges it on its other figures only
    fixed_duration: bool = False
    sanity: list[SanitySpec] = field(default_factory=list)  # tool: CHECK_FAILED when one fails
    # tool: launch (each warm-up and repeat is its own invocation, its own launch for an MPI program) |
    # program (the program repeats itself: one invocation per n, {repeats} and {warmup} in its argv)
    repeat_by: str = "launch"
    result_rank: int = 0  # tool, launched: the rank whose output the figures are read from
    flops: str | None = None  # cost model: arithmetic of the swept parameters, e.g. "2*n"
    bytes: str | None = None  # e.g. "3*8*n"
    write_bytes: str | None = None  # the written part of bytes (compared with DRAM write counters)
    # dtype name -> bytes of an element: the parameter `element_bytes` of the expressions
    element_bytes: dict[str, float] = field(default_factory=dict)
    # name -> expression: a parameter derived where the run has none (block kernels' default ff)
    cost_params: dict[str, str] = field(default_factory=dict)


@dataclass
class SweepSpec:
    """One block of an experiment; see docs/contracts.md."""

    kernel: str = MISSING
    impls: list[str] = MISSING
    variants: list[str] = MISSING
    partitions: list[str] = field(default_factory=list)  # [] = the cluster's default partition per device
    devices: list[str] = field(default_factory=list)  # with no partitions: [] = cpu if an impl runs there, else cuda
    threads: list[int] = field(default_factory=lambda: [1])  # per rank (cpus per task)
    nodes: list[int] = field(default_factory=lambda: [1])  # nodes per job
    ranks_per_node: list[int] = field(default_factory=lambda: [1])  # MPI/torch ranks (tasks) per node
    # GPUs per rank: [] = none on CPU partitions, the job's one GPU on GPU partitions (single rank)
    gpus_per_rank: list[int] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=lambda: ["fp32"])
    # sizes; integers may be written 1e6 (campaign.planning.plan reads them). None (not given): a tool-driven
    # program whose templates read no {n} has no problem size; it runs once per repeat (its rows: n NULL);
    # given, for such a program, it is refused (campaign.planning.byob.sizes_of)
    n: list[Any] | None = None
    d: int | None = None  # None: 64 for contract programs (their --d); a tool-driven benchmark gets none
    args: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    profile: str | None = None  # none | ncu | perf; None: the experiment's


@dataclass
class ExperimentSpec:
    name: str = MISSING
    description: str = ""
    repeats: int = 5
    # each run submitted this many times as independent jobs (replicates), in a
    # randomized interleaved order; compare/report put their intervals over them
    replicates: int = 1
    warmup: int = 2
    check: bool = True
    walltime_min: int = 30
    mem_gb: float | None = None
    # build + preflight jobs gate the runs; false for experiments
    # whose programs fail on purpose (the failure-class tests)
    preflight: bool = True
    profile: str = "none"  # none | ncu | perf: counters of one extra call per n (docs/contracts.md)
    exclusive: bool = False  # take whole nodes (--exclusive) instead of the cores/GPUs a run needs
    cpus_per_run: int | None = None  # cores allocated to each CPU run; threads above it oversubscribe on purpose
    sweeps: list[SweepSpec] = field(default_factory=list)
    container: ContainerSpec = field(default_factory=ContainerSpec)  # every run's image, on every partition
    spack: SpackSpec = field(default_factory=SpackSpec)  # every run's Spack environment


@dataclass
class CampaignSettings:
    """Settings of this invocation that are not part of the science."""

    name: str | None = None  # default: <experiment>-<cluster>
    python: str | None = None  # interpreter on the nodes; default: this one
    kernel_bin: str | None = None  # built C/Fortran programs; default: kernels/build
    workdir: str | None = None  # job folders; default: <ledger folder>/runs
    allow_node_local: bool = False  # accept a workdir/ledger on /tmp or /dev/shm with a Slurm cluster
    max_runs: int = 100_000  # the planner refuses experiments of more runs, before building them


@dataclass
class RootConfig:
    cluster: ClusterSpec = MISSING
    experiment: ExperimentSpec = MISSING
    kernels: dict[str, KernelSpec] = field(default_factory=dict)
    campaign: CampaignSettings = field(default_factory=CampaignSettings)

    def __deepcopy__(self, memo: dict[int, Any]) -> RootConfig:
        """A copy is another configuration, changed after it: the composition
        campaign.config.load keeps for provenance (`_composed`, its YAML) would
        describe the original, so it stays behind (and copying that OmegaConf
        tree was nearly all of a copy's time)."""
        out = object.__new__(RootConfig)
        out.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items() if not k.startswith("_")})
        return out
