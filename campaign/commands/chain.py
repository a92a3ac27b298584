"""The chain in front of a campaign's arrays: build, preflight, then the runs.

Per partition (and its job environment) a **build job** builds the C and
Fortran programs the runs need, on that partition, with its modules,
compilers and flags, into a folder keyed by partition + environment + source
hash; a folder whose record says it holds them already is not built again.
Then a **preflight job** runs every program once at its smallest n with
`--check` and checks what the runs will see (campaign.job.preflight). The
arrays are submitted at once behind it with `--dependency=afterok` and
`--kill-on-invalid-dep=yes` (Slurm), so a broken module, a crashing binary or
an 8 MB stack cancels them before any task runs. Without a scheduler (local)
the same steps run in order, and the runs only when both passed.
This module plans the chain (pure but for reading build records);
campaign.commands.chain_gate submits and records it.

Why a key and not `make kernels` on the submitting machine: the H200 runs of
this project built C for one ISA and Fortran for another; flags such as
`-march=native` are only right on the node that runs the programs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from campaign.backends.base import Backend, JobRequest
from campaign.backends.capabilities import capabilities
from campaign.backends.slurm_launch import multi_rank
from campaign.backends.step import StepRequest
from campaign.config.load import repo_root
from campaign.config.schema import BuildSpec, ClusterSpec, PartitionSpec
from campaign.job.build import BuildTask, is_built, run_build
from campaign.job.preflight import PreflightTask, ProgramCheck, run_preflight
from campaign.planning import run_env
from campaign.planning.charging import StepCost
from campaign.planning.resources import node_cpus, step_allocation
from campaign.planning.run_spec import RunSpec
from resultschema.partition import TOLERANCE

KEY_LENGTH = 16
NATIVE = ("c", "fortran", "mpi")  # kernels/<lang>/ sources -> <build folder>/<lang>/<kernel> (mpi: with mpicc)
BUILD_WALLTIME_MIN = 30


def kernel_sources() -> Path:
    return repo_root() / "kernels"


def source_hash(src: Path) -> str:
    """Hash of the native kernels' sources and their Makefile (a few small
    files: read each time, so an edited source is never taken for a built one)."""
    h = hashlib.sha256()
    files = [src / "Makefile", *sorted(p for lang in NATIVE for p in (src / lang).glob("*") if p.is_file())]
    for path in files:
        h.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def build_key(cluster: ClusterSpec, partition: str, src_hash: str, container: dict[str, str] | None = None) -> str:
    """Partition + environment (modules, variables, compilers, flags, the
    container or Spack environment) + sources."""
    part = cluster.partitions[partition]
    b = cluster.build
    blob = {
        "cluster": cluster.name,
        "partition": partition,
        "modules": [*cluster.modules, *part.modules],
        "module_reset": cluster.module_reset,
        "template": cluster.job_template,
        "env": {**cluster.env, **part.env},
        "build": [b.cc, b.fc, b.mpicc, b.cflags, b.fflags],
        "src": src_hash,
    }
    if container:  # left out when empty: keys of builds made before containers stay the same
        blob["container"] = container
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:KEY_LENGTH]


@lru_cache(maxsize=256)  # pure, and asked once per run of a 10,000-run plan
def native_program(argv0: str, kernel_bin: str) -> str | None:
    """`c/<kernel>` or `fortran/<kernel>` for a program of the configured kernel folder."""
    path = Path(argv0)
    if path.parent.name in NATIVE and path.parent.parent == Path(kernel_bin):
        return f"{path.parent.name}/{path.name}"
    return None


@dataclass
class Chain:
    """One partition's build (when needed), preflight, and the runs behind them."""

    partition: str
    key: str
    folder: Path  # the build folder the runs' native programs come from
    build: StepRequest | None
    preflight: StepRequest | None  # None: not run (`skipped` says why), the runs behind the build alone
    requests: list[JobRequest]
    skipped: str = ""
    folder_pre: str = ""  # the preflight's folder (its record, or where a skipped one would have run)
    programs: tuple[str, ...] = ()  # our native programs the runs start (none: the user's programs alone)


def _build_folder(
    cluster: ClusterSpec,
    backend: str,
    partition: str,
    key: str,
    builds_root: Path,
    kernel_bin: str,
    contained: bool = False,
) -> Path:
    """The keyed folder; on this machine with the default compilers, no
    modules and no container, `make kernels`' own output (an up-to-date make
    there is a no-op)."""
    part = cluster.partitions[partition]
    if (
        capabilities(backend).local
        and cluster.build == BuildSpec()
        and not (cluster.modules or part.modules)
        and not contained
    ):
        return Path(kernel_bin)
    return builds_root / f"{partition}-{key}"


def _mapped(req: JobRequest, kernel_bin: str, folder: Path) -> JobRequest:
    rel = native_program(req.task.argv[0], kernel_bin)
    if rel is None:
        return req
    return replace(req, task=replace(req.task, argv=(str(folder / rel), *req.task.argv[1:])))


def _smaller(a: RunSpec, b: RunSpec) -> bool:
    """The preflight's shape for a program, its smallest: single-process runs
    by their fewest threads; launched ones by the fewest ranks in all, then
    per node, then threads (what the preflight job asks follows: docs/sites.md)."""
    if multi_rank(a) != multi_rank(b):
        return not multi_rank(a)  # a program run both ways is checked bare (cheaper)
    if multi_rank(a):
        return (a.ranks, a.ranks_per_node, a.threads) < (b.ranks, b.ranks_per_node, b.threads)
    return a.threads < b.threads


def _on_one_node(run: RunSpec, part: PartitionSpec) -> RunSpec:
    """The run's shape in the one-node preflight: every rank of it on that
    node where they fit its cores and GPUs, so the program is checked at a
    rank count the campaign runs (a point-to-point test refuses any but two:
    its 2-node x 1-rank run is checked as 1 node x 2 ranks); else one node of
    it as it runs."""
    gpus = run.gpus_per_rank * run.ranks if run.gpus_per_rank else run.gpus
    if run.ranks * run.alloc_cpus <= node_cpus(part) and gpus <= max(part.gpus, run.gpus):
        return run.evolve(nodes=1, ranks_per_node=run.ranks, gpus=gpus)
    return run.evolve(nodes=1)


def _smallest(reqs: list[JobRequest]) -> list[JobRequest]:
    """The run that stands for each program (kernel x impl) and dtype and
    device in its check (_smaller), run at its smallest n. One variant stands
    for the program: a broken module, binary, ISA or stack fails them all, and
    each check costs a process start (seconds for torch)."""
    best: dict[tuple[str, ...], JobRequest] = {}
    for req in reqs:
        r = req.run
        ident = (r.kernel, r.impl, r.dtype, r.device)
        if ident not in best or _smaller(r, best[ident].run):
            best[ident] = req
    return list(best.values())


def _program_checks(
    chosen: list[JobRequest], part: PartitionSpec, folder: Path, binds: tuple[str, ...]
) -> list[tuple[ProgramCheck, RunSpec]]:
    """One check per chosen run (_smallest): its program once, at its smallest n and on one node
    (_on_one_node; through the launcher where the run starts through it), with that run."""
    checks = []
    for i, req in enumerate(chosen):
        # the run's own check setting: with check: false it passes when the program exits 0 and its
        # output parses (an honest program leaves rel_err empty)
        run = _on_one_node(req.run, part).evolve(n=(min(req.run.n),), repeats=1, warmup=0)
        out = str(folder / f"{i}.csv")
        # in the run's container, as the run starts (campaign.planning.run_env), in the folder the
        # preflight starts it in (campaign.job.preflight)
        argv = tuple(
            run_env.wrap(run.identity, binds, req.task.env, (req.task.argv[0], *run.command(out)[1:]), str(folder))
        )
        torch = argv[0] if "-m" in argv and any(a.startswith("kernels.torch.") for a in argv) else None
        checks.append(
            (
                ProgramCheck(
                    run.label,
                    argv,
                    req.task.env + run_env.runtime_env(run.identity, run.partition),
                    out,
                    TOLERANCE.get(run.dtype, TOLERANCE["fp32"]) if run.check else None,
                    torch,
                    run.device == "cuda",
                ),
                run,
            )
        )
    return checks


def plan_chains(
    cluster: ClusterSpec, backend: str, camp_name: str, camp_dir: Path, kernel_bin: str, reqs: list[JobRequest]
) -> list[Chain]:
    """The chain of every partition the requests use (pure but for reading build records)."""
    src = kernel_sources()
    src_hash = source_hash(src)
    by_part: dict[str, list[JobRequest]] = {}
    for req in reqs:
        by_part.setdefault(req.run.partition, []).append(req)
    chains = []
    for partition, group in by_part.items():
        # the image the programs run in is the one they are built in: its digest is part of the build's key
        key = build_key(cluster, partition, src_hash, run_env.run_env_facts(group[0].run.identity))
        folder = _build_folder(
            cluster,
            backend,
            partition,
            key,
            camp_dir.parent / "builds",
            kernel_bin,
            run_env.containerised(group[0].run.identity),
        )
        mapped = [_mapped(r, kernel_bin, folder) for r in group]
        programs = tuple(sorted({p for r in group if (p := native_program(r.task.argv[0], kernel_bin))}))
        build = None
        if programs and not is_built(folder, key, programs):
            b = cluster.build
            modules = tuple([*cluster.modules, *cluster.partitions[partition].modules])
            wrap = run_env.container_head(group[0].run.identity, (str(camp_dir.parent), str(src)), group[0].task.env)
            task = BuildTask(
                key, str(src), str(folder), programs, b.cc, b.fc, b.cflags, b.fflags, modules, tuple(wrap), b.mpicc
            )
            one = step_allocation(cluster.partitions[partition], 1, 0)
            build = StepRequest(
                "build",
                partition,
                run_build,
                task,
                group[0].task.env + run_env.runtime_env(group[0].run.identity, partition),  # make runs in it
                one.cpus,
                0,
                min(BUILD_WALLTIME_MIN, cluster.partitions[partition].max_walltime_min),
                f"campaign:{camp_name}:build",
                str(folder),
                mem_gb=one.mem_gb,
                describe=[
                    f"build {key} on {partition} into {folder}: {' '.join([*wrap, 'make'])} -C <campaign>/kernels "
                    f"CC={b.cc} FC={b.fc} "
                    + (f"MPICC={b.mpicc} " if any(p.startswith("mpi/") for p in programs) else "")
                    + f"CFLAGS='{b.cflags}' FFLAGS='{b.fflags}' {' '.join(programs)}"
                ],
                activate=run_env.spack_lines(group[0].run.identity),
            )
        # named by the first attempt it gates: unique in the ledger, stable in --dry-run
        pre_dir = camp_dir / "preflight" / f"{partition}-a{min(r.attempt_id for r in group)}"
        # a program of several ranks (or an MPI one) is checked through the launcher (the backend
        # puts it in front: StepRequest.launched) at one node and its fewest ranks in all
        # (docs/design.md#ranks-nodes-and-launchers)
        checked = _program_checks(_smallest(mapped), cluster.partitions[partition], pre_dir, (str(camp_dir.parent),))
        skipped = _preflight_skipped(mapped, checked)
        preflight = None if skipped else _preflight(cluster, partition, camp_name, camp_dir, pre_dir, checked)
        chains.append(Chain(partition, key, folder, build, preflight, mapped, skipped, str(pre_dir), programs))
    return chains


def _preflight_skipped(runs: list[JobRequest], checked: list[tuple[ProgramCheck, RunSpec]]) -> str:
    """Why a partition's preflight job is not run ("" when it is): one that checks no program would
    hold the arrays for nothing, and the one run of a chain is its own check (a preflight would run
    that program again at its smallest n and double a one-run campaign's cost)."""
    if not checked:
        return "no program to check"
    if len(runs) == 1:
        return "the partition's one run is its own check"
    return ""


def _preflight(
    cluster: ClusterSpec,
    partition: str,
    camp_name: str,
    camp_dir: Path,
    pre_dir: Path,
    checked: list[tuple[ProgramCheck, RunSpec]],
) -> StepRequest:
    """The preflight job: what its checks run, at their smallest shape, asks (the cores of the widest
    check: its threads, times its ranks on the one node; the GPUs of those ranks, or one GPU's share
    where a program runs bare), for minutes, not the runs' walltime."""
    part = cluster.partitions[partition]
    checks = [c for c, _ in checked]
    widest = max((r for _, r in checked), key=lambda r: (r.gpus, r.threads))
    alloc = step_allocation(
        part,
        max(r.ranks_per_node * r.alloc_cpus if multi_rank(r) else r.threads for _, r in checked),
        max(r.gpus if multi_rank(r) else min(r.gpus, 1) for _, r in checked),
    )
    pre_task = PreflightTask(str(pre_dir), str(camp_dir), cluster.stack_unlimited, tuple(checks))
    env = next(c.env for c, r in checked if r is widest)
    return StepRequest(
        "preflight",
        partition,
        run_preflight,
        pre_task,
        env,
        alloc.cpus,
        alloc.gpus,
        min(part.max_walltime_min, cluster.preflight_walltime_min),
        f"campaign:{camp_name}:preflight",
        str(pre_dir),
        mem_gb=alloc.mem_gb,
        describe=[f"preflight on {partition}: {c.label}: {' '.join(c.argv)}" for c in checks],
        activate=run_env.spack_lines(widest.identity),
        launched=tuple((i, r) for i, (_, r) in enumerate(checked) if multi_rank(r)),
    )


def step_costs(chains: list[Chain]) -> list[StepCost]:
    """The build and preflight jobs of these chains as the dry run's estimate charges them."""
    steps = [step for ch in chains for step in (ch.build, ch.preflight) if step is not None]
    return [StepCost(st.kind, st.partition, st.cpus, st.gpus, st.mem_gb, st.walltime_min) for st in steps]


def render(backend: Backend, chains: list[Chain]) -> list[str]:
    """--dry-run: each partition's build and preflight scripts, then its arrays
    with the dependency flags (job IDs not known yet: placeholders)."""
    scripts: list[str] = []
    for ch in chains:
        if ch.build is not None:
            scripts.append(backend.render_step(ch.build))
        dep = f"<build:{ch.partition}>" if ch.build is not None else None
        if ch.preflight is not None:
            scripts.append(backend.render_step(replace(ch.preflight, depends_on=dep)))
            dep = f"<preflight:{ch.partition}>"
        arrays = backend.render([replace(r, depends_on=dep) for r in ch.requests])
        if ch.preflight is None and arrays:  # said where the preflight would be: under the runs it would hold
            arrays[0] += f"# preflight on {ch.partition}: not run ({ch.skipped})\n"
        scripts += arrays
    return scripts
