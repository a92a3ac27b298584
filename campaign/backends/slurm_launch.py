"""How a run of several ranks starts inside its Slurm job: the launcher's argv.

The batch script asks the allocation (--nodes, --ntasks-per-node,
--cpus-per-task, --gpus-per-task); submitit's srun line then starts one
campaign task on the first node (`OUTER_SRUN_ARGS`), which runs the
partition's launcher as a nested step over the whole allocation:

- `srun --mpi=<plugin>` (default pmix) with the job's shape spelled out
  (GPUs per rank as --gpus-per-task, whatever the batch script asked)
  (the outer step's SLURM_NTASKS=1 in the environment would otherwise be
  read as -n 1), `--overlap` (the outer step holds the first node's cores;
  without it the nested step waits for them forever) and
  `--kill-on-bad-exit=1` (a rank that dies ends the step, instead of the
  others hanging in a collective until the walltime);
- `mpirun` where the partition says so (Open MPI's ppr mapping, the
  variables the shim and torch need passed with -x).

Each rank runs through campaign.job.rank, which sets torch.distributed's
variables from the launcher's and records the rank's placement; the
partition's `launcher_args` (binding options) follow the launcher's own
(docs/design.md#ranks-nodes-and-launchers). Everything is an argument list.

A tool-driven benchmark's driver (campaign.job.fom) is not launched itself:
it gets the launcher and the shim as its `--launch` option and starts the
program through them once per repeat (an MPI program initialises MPI once
per launch), reading the figures from one rank's output.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Sequence
from typing import Any

from campaign.backends.step import StepRequest
from campaign.config.schema import PartitionSpec
from campaign.job.fom_launch import OPTION, Launch
from campaign.job.rank import LAUNCH_HOST_ENV
from campaign.job.task import JobTask
from campaign.planning import run_env
from campaign.planning.run_spec import RunSpec

# submitit's srun line starts one task on one node: the campaign task that launches the ranks
OUTER_SRUN_ARGS = ("--nodes=1", "--ntasks=1")
# the launcher's variables each rank reads (rank, world size, local rank, node, job)
_SRUN_VARS = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURMD_NODENAME", "SLURM_JOB_ID")
_MPIRUN_VARS = (
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "SLURMD_NODENAME",
    "SLURM_JOB_ID",
)


def multi_rank(run: RunSpec) -> bool:
    """A run that starts through the launcher: several ranks, GPUs per rank, or an MPI program."""
    return run.ranks > 1 or run.gpus_per_rank > 0 or run.launched


def rank_records(workdir: str) -> str:
    return os.path.join(workdir, "ranks")


def launcher_argv(part: PartitionSpec, run: RunSpec) -> list[str]:
    """The launcher and its options, before the per-rank shim."""
    if part.launcher == "mpirun":
        # Open MPI starts its daemons on the other nodes with srun: inside the campaign task's step
        # that srun must overlap it too (plm_slurm_args), or it waits for the first node's cores forever
        # and its slots per node come from SLURM_TASKS_PER_NODE, which that step set to its own 1 task
        argv = [
            "env",
            f"SLURM_TASKS_PER_NODE={run.ranks_per_node}(x{run.nodes})",
            "mpirun",
            "-np",
            str(run.ranks),
            "--map-by",
            f"ppr:{run.ranks_per_node}:node:PE={run.alloc_cpus}",
            "--mca",
            "plm_slurm_args",
            "--overlap",
        ]
        for name in (LAUNCH_HOST_ENV, "OMP_NUM_THREADS"):  # mpirun passes on only what -x names
            argv += ["-x", name]
        return argv + list(part.launcher_args)
    # mpi: default leaves the plugin to the site's MpiDefault (its own scripts run a bare srun)
    argv = [
        "srun",
        *([f"--mpi={part.mpi}"] if part.mpi != "default" else []),
        f"--nodes={run.nodes}",
        f"--ntasks={run.ranks}",
        f"--ntasks-per-node={run.ranks_per_node}",
        f"--cpus-per-task={run.alloc_cpus}",
    ]
    # a step gets no GPU it does not ask for: a launched single-rank GPU run asks its one GPU
    per_rank = run.gpus_per_rank or (run.gpus // run.ranks_per_node if run.gpus else 0)
    if per_rank:
        argv.append(f"--gpus-per-task={per_rank}")
    return argv + ["--overlap", "--kill-on-bad-exit=1", *part.launcher_args]


def launcher_daemons(part: PartitionSpec) -> tuple[str, ...]:
    """The commands the launcher starts its daemons with: Open MPI's mpirun starts them through srun
    and returns before that srun has ended; srun's step is over when it returns."""
    return ("srun",) if part.launcher == "mpirun" else ()


def _driver(program: list[str]) -> bool:
    """The tool-driven benchmark driver in a program's place (campaign.planning.byob.tool_argv)."""
    return program[1:3] == ["-m", "campaign.job.fom"]


def launched(part: PartitionSpec, run: RunSpec, python: str, workdir: str, program: list[str]) -> list[str]:
    """The whole argv of a launched run: launcher, shim, program; or the
    driver of a tool-driven benchmark with the launcher and shim as its
    --launch option (it launches the program once per invocation)."""
    names = _MPIRUN_VARS if part.launcher == "mpirun" else _SRUN_VARS
    records = rank_records(workdir)
    shim = [
        python,
        "-m",
        "campaign.job.rank",
        "--records",
        records,
        "--rank-env",
        names[0],
        "--size-env",
        names[1],
        "--local-rank-env",
        names[2],
    ]
    if names[3]:
        shim += ["--node-env", names[3]]
    shim += ["--job-env", names[4]]
    if _driver(program):
        launch = Launch((*launcher_argv(part, run), *shim), records, run.ranks, launcher_daemons(part))
        return [*program, OPTION, launch.to_json()]
    # one writer per launch: rank 0's --out is the results file, the other ranks' go beside it
    return launcher_argv(part, run) + shim + ["--writer-rank", "0", "--"] + list(program)


def shape_params(part: PartitionSpec, run: RunSpec) -> dict[str, Any]:
    """submitit's parameters for the job's shape: one task of the run's cores
    (one GPU's share on GPU partitions), or the multi-rank allocation with
    the outer srun of one task."""
    if not multi_rank(run):
        if run.gpus:
            return {"gpus_per_node": run.gpus, "cpus_per_task": run.cpus or part.cpus_per_gpu * run.gpus}
        if part.whole_node and not run.cpus:  # runs planned before allocations were recorded
            return {"cpus_per_task": part.cores * part.threads_per_core}
        return {"cpus_per_task": run.alloc_cpus}
    params: dict[str, Any] = {
        "nodes": run.nodes,
        "ntasks_per_node": run.ranks_per_node,
        "cpus_per_task": run.alloc_cpus,
        "srun_args": list(OUTER_SRUN_ARGS),
    }
    if run.gpus_per_rank and part.gpu_request == "per_task":
        params["gpus_per_task"] = run.gpus_per_rank
    elif run.gpus:
        params["gpus_per_node"] = run.gpus
    return params


def node_gpus(params: dict[str, Any]) -> int:
    """The GPUs each node of a job of shape_params' `params` holds: what the
    job asked per node, or per task times its tasks per node (a partition
    whose GPUs are asked per task: `gpu_request: per_task`)."""
    if params.get("gpus_per_node"):
        return int(params["gpus_per_node"])
    return int(params.get("gpus_per_task", 0)) * int(params.get("ntasks_per_node", 1))


def launched_task(part: PartitionSpec, run: RunSpec, python: str, task: JobTask, binds: Sequence[str] = ()) -> JobTask:
    """The task as the job runs it, its final argv made here and only here:
    the program inside the run's container (campaign.planning.run_env, with
    `binds` mounted at their own paths), and a multi-rank run's behind its
    launcher and shim (the launcher outside, one container per rank)."""
    program = run_env.wrap(run.identity, binds, task.env, task.argv, task.workdir)
    env = task.env + run_env.runtime_env(run.identity, run.partition)  # outside the container: the job side's
    if not multi_rank(run):
        return task if program == list(task.argv) else dataclasses.replace(task, argv=tuple(program), env=env)
    return dataclasses.replace(
        task,
        env=env,
        argv=tuple(launched(part, run, python, task.workdir, program)),
        ranks=run.ranks,
        rank_records=rank_records(task.workdir),
        daemons=() if _driver(program) else launcher_daemons(part),  # the driver waits for them itself
    )


def launched_step(part: PartitionSpec, python: str, step: StepRequest) -> StepRequest:
    """A preflight whose launched programs start through the launcher, as their runs do, each
    with its ranks' records in a folder of its own."""
    if not step.launched:
        return step
    programs = list(step.task.programs)
    describe = list(step.describe)
    for i, run in step.launched:
        argv = launched(part, run, python, os.path.join(step.folder, f"{i}-launch"), list(programs[i].argv))
        programs[i] = dataclasses.replace(programs[i], argv=tuple(argv))
        if i < len(describe):
            describe[i] = f"{describe[i].split(': ', 1)[0]}: {programs[i].label}: {shlex.join(argv)}"
    return dataclasses.replace(step, task=dataclasses.replace(step.task, programs=tuple(programs)), describe=describe)
