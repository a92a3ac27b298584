"""Build and preflight jobs on Slurm, and the dependency that gates the arrays.

The arrays of a partition are submitted at once behind its preflight job
with `--dependency=afterok:<preflight>` and `--kill-on-invalid-dep=yes`: the
user does not wait, and when the build or the preflight fails Slurm cancels
the arrays before any task starts. The preflight waits on the
build the same way.

A module that does not exist must fail the step, not only print an error:
Lmod's `module load` returns non-zero for an unknown module, but a batch
script goes on after a failing line. In a step's script every `module` line
therefore ends in `|| exit 1`. The same holds where the `module` command
itself is missing (exit 127), which is how the test cluster, whose node has
no module command, fails a campaign that names a module.
"""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path
from typing import Any

from campaign.backends.slurm_query import parse_sbatch, where_clusters
from campaign.backends.slurm_run import failure_text, run_slurm
from campaign.backends.step import StepRequest, StepSubmitted
from campaign.backends.submitit_adapter import sbatch_script
from campaign.config.schema import ClusterSpec, PartitionSpec
from campaign.job.step_task import step_to_json
from campaign.planning.environment import setup_lines
from campaign.plumbing.errors import SubmissionError


def dependency_flags(job_id: str) -> dict[str, str]:
    """sbatch options that hold a job until `job_id` ended COMPLETED, and let
    Slurm cancel it when that can no longer happen."""
    return {"dependency": f"afterok:{job_id}", "kill-on-invalid-dep": "yes"}


def fatal_module_lines(lines: list[str]) -> list[str]:
    """Setup lines where a failing `module ...` line ends the job (exit 1)."""
    out = []
    for line in lines:
        if line.split(maxsplit=1)[:1] == ["module"]:
            line = f"{line} || {{ printf 'campaign: job environment line failed: %s\\n' {shlex.quote(line)} >&2; exit 1; }}"
        out.append(line)
    return out


def billing_params(cluster: ClusterSpec, part: PartitionSpec, mem_gb: float | None) -> dict[str, str]:
    """Memory, account and QoS of a job on this partition: the same for the
    runs' arrays and for the build/preflight steps in front of them."""
    params: dict[str, str] = {}
    if mem_gb is not None:
        params["mem"] = f"{int(round(mem_gb * 1024))}M"
    account = part.account or cluster.account
    if account:
        params["account"] = account
    qos = part.qos or cluster.qos
    if qos:
        params["qos"] = qos
    return params


def step_params(cluster: ClusterSpec, step: StepRequest) -> dict[str, Any]:
    part = cluster.partitions[step.partition]
    params: dict[str, Any] = {
        "partition": part.name,
        "time": step.walltime_min,
        "nodes": 1,
        "ntasks_per_node": 1,
        "job_name": step.job_name,
        "cpus_per_task": max(1, step.cpus),
        "stderr_to_stdout": False,
        "setup": fatal_module_lines(setup_lines(cluster, part, dict(step.env))) + list(step.activate),
    }
    if step.gpus:
        params["gpus_per_node"] = step.gpus
    params.update(billing_params(cluster, part, step.mem_gb))
    extra: dict[str, Any] = {"no-requeue": True, **dict(part.sbatch_extra)}
    clusters = part.clusters or cluster.clusters  # the step runs where the partition's arrays run
    if clusters:
        extra["clusters"] = clusters
    if step.depends_on:
        extra.update(dependency_flags(step.depends_on))
    params["additional_parameters"] = extra
    return params


def _logs(folder: Path, step: StepRequest, ident: str) -> Path:
    return folder / "slurm" / f"{step.kind}-{step.partition}-{ident}"


def _script(cluster: ClusterSpec, folder: Path, python: str, step: StepRequest, ident: str) -> str:
    params = {**step_params(cluster, step), "comment": f"{step.job_name} {step.kind}={step.partition}"}
    logs = _logs(folder, step, ident)
    command = [python, "-u", "-m", "campaign.job.step_task", str(logs / "step.json")]
    return sbatch_script(params, shlex.join(command), logs, 1)


def render_step(cluster: ClusterSpec, folder: Path, python: str, step: StepRequest) -> str:
    text = _script(cluster, folder, python, step, "<step>")
    return text + "".join(f"# {line}\n" for line in step.describe)


def submit_step(cluster: ClusterSpec, folder: Path, python: str, step: StepRequest) -> StepSubmitted:
    """Payload and script into the step's own log folder, then sbatch."""
    ident = uuid.uuid4().hex[:12]
    logs = _logs(folder, step, ident)
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "step.json").write_text(json.dumps(step_to_json(step.kind, step.task)))
    script = logs / "job.sbatch"
    script.write_text(_script(cluster, folder, python, step, ident))
    part = cluster.partitions[step.partition]
    where = where_clusters(part.clusters or cluster.clusters)  # on the command line: over SLURM_CLUSTERS
    proc = run_slurm(["sbatch", "--parsable", *where, str(script)])
    answer = parse_sbatch(proc.stdout) if proc.returncode == 0 else None
    if answer is None:
        raise SubmissionError(
            f"sbatch refused the {step.kind} job on {step.partition}: "
            f"{failure_text(proc) if proc.stderr or proc.stdout else '(no answer)'}"
        )
    job_id = answer[0]
    return StepSubmitted(job_id, str(logs / f"{job_id}_0_log.out"), str(logs / f"{job_id}_0_log.err"))
