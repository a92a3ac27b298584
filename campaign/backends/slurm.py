"""Slurm backend: job arrays, their scripts rendered by submitit's template.

Runs that share resources (partition, CPUs, GPUs, walltime, memory, account,
environment) go out as one array, chunked so that no index reaches the
cluster's MaxArraySize. Before each sbatch a manifest (array index → attempt)
(the array's one payload: every task's program, environment and folder) is
written next to the jobs, and the job name/comment name the campaign and
manifest, so jobs whose submitter died can be found and attached again.
Only this module and its slurm_* helpers know submitit's keywords and Slurm's words.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from campaign.backends import (
    slurm_cancel,
    slurm_launch,
    slurm_nodes,
    slurm_query,
    slurm_reasons,
    slurm_steps,
)
from campaign.backends.base import (
    Backend,
    JobRef,
    JobRequest,
    JobStatus,
    NodeJob,
    OnSubmitted,
    QueryResult,
    Submitted,
)
from campaign.backends.slurm_fields import exit_status
from campaign.backends.slurm_manifest import (
    SCRIPT,
    logs_folder,
    manifest_path,
    recorded,
    task_submitted,
    write_manifest,
)
from campaign.backends.slurm_manifest import recover as recover_from_manifests
from campaign.backends.slurm_run import failure_text, run_slurm
from campaign.backends.step import StepRequest, StepSubmitted
from campaign.backends.submitit_adapter import sbatch_script
from campaign.config.schema import ClusterSpec, PartitionSpec
from campaign.job import fom
from campaign.job.array_task import task_to_json
from campaign.job.task import JobTask
from campaign.planning import run_env
from campaign.planning.environment import profiler_lines, setup_lines
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import SchedulerError, SubmissionError, one_line

DEFAULT_MAX_ARRAY = 1001
SIGNAL_DELAY_S = 90  # submitit's default: its USR2 this many seconds before the walltime


class SlurmBackend(Backend):
    name = "slurm"
    cancel_wait_s: float = 120.0  # how long cancel waits for scancelled jobs to leave squeue

    def __init__(self, cluster: ClusterSpec, folder: Path, python: str | None = None) -> None:
        super().__init__(cluster, folder, python)
        # job environment lines, rendered once per (partition, environment)
        self._setup_cache: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}

    def _params(self, req: JobRequest) -> dict[str, Any]:
        cluster = self.cluster
        part: PartitionSpec = cluster.partitions[req.run.partition]
        profiled = _profiled(req.run)
        params: dict[str, Any] = {
            "partition": part.name,
            "time": req.walltime_min,
            # submitit asks for USR2 this long before the limit (--signal=USR2@90; the job ignores it,
            # campaign.job.runner). Asked for more than the walltime it comes at the start, and a task
            # whose Python has not yet set that aside dies of it (signal 12 at once, FAILED): a short
            # job gets it halfway
            "signal_delay_s": min(SIGNAL_DELAY_S, req.walltime_min * 30),
            "nodes": 1,
            "ntasks_per_node": 1,
            "job_name": req.job_name,
            # the run's Spack environment after the modules (campaign.planning.run_env)
            "setup": self._setup(part, req.task.env, profiled) + run_env.spack_lines(req.run.identity),
            "array_parallelism": cluster.array_parallelism,
            "stderr_to_stdout": False,
        }
        # The allocation was decided by the plan (campaign.planning.resources, campaign.planning.ranks).
        params.update(slurm_launch.shape_params(part, req.run))
        params.update(slurm_steps.billing_params(cluster, part, req.mem_gb))
        # --no-requeue: after NODE_FAIL or preemption Slurm would run the job
        # again under the same ID behind the ledger's back; the ledger decides
        # reruns (`campaign rerun`), as new attempts with their own job IDs.
        extra: dict[str, Any] = {"no-requeue": True}
        if req.run.exclusive:
            extra["exclusive"] = True
        clusters = part.clusters or cluster.clusters
        if clusters:
            extra["clusters"] = clusters
        params["additional_parameters"] = {**extra, **dict(part.sbatch_extra)}
        if req.depends_on:  # behind the partition's preflight job
            params["additional_parameters"].update(slurm_steps.dependency_flags(req.depends_on))
        if profiled and part.profiler.enabled:  # e.g. a constraint for nodes with counters enabled
            params["additional_parameters"].update(dict(part.profiler.sbatch_extra))
        return params

    def _setup(self, part: PartitionSpec, env: tuple[tuple[str, str], ...], profiled: bool = False) -> list[str]:
        """Rendered once per (partition, environment, profiled), not once per run."""
        key = (f"{part.name}{'+profiler' if profiled else ''}", env)
        if key not in self._setup_cache:
            lines = setup_lines(self.cluster, part, dict(env))
            if profiled:
                where = f"cluster.partitions.{part.name}"
                lines += profiler_lines(part.profiler, where)
            self._setup_cache[key] = lines
        return list(self._setup_cache[key])

    def _max_array(self) -> int:
        if self.cluster.max_array_size is not None:
            return self.cluster.max_array_size
        return slurm_query.max_array_size()

    def _groups(self, requests: Sequence[JobRequest], max_array: int) -> list[tuple[dict[str, Any], list[JobRequest]]]:
        by_sig: dict[str, tuple[dict[str, Any], list[JobRequest]]] = {}
        # _params reads only these fields of a request: made (and its JSON
        # signature) once per distinct tuple, not once per run
        sigs: dict[tuple[Any, ...], str] = {}
        for req in requests:
            run = req.run
            what = (
                run.partition,
                _profiled(run),
                run.gpus,
                run.cpus,
                run.threads,
                run.exclusive,
                run.nodes,
                run.ranks_per_node,
                run.gpus_per_rank,
                req.walltime_min,
                req.mem_gb,
                req.job_name,
                req.task.env,
                req.depends_on,
                id(run.identity),
            )
            sig = sigs.get(what)
            if sig is None:
                params = self._params(req)
                sig = sigs[what] = json.dumps(params, sort_keys=True, default=str)
                by_sig.setdefault(sig, (params, []))
            by_sig[sig][1].append(req)
        out = []
        # MaxArraySize N allows indexes 0..N-1, so at most N tasks per array.
        size = max(1, max_array)
        for params, reqs in by_sig.values():
            for i in range(0, len(reqs), size):
                out.append((params, reqs[i : i + size]))
        return out

    def _script(self, params: dict[str, Any], group: list[JobRequest], manifest: str) -> str:
        # The manifest id in the job name lets a later submit find jobs whose
        # IDs never reached the ledger (sacct keeps names, not comments, by default).
        # Name and comment say what runs (kernel, impl, variant, threads), so
        # squeue/sacct tell runs apart; each array task prints its run label.
        named = {
            **params,
            "job_name": f"{job_name(params['job_name'], group)}:{manifest}",
            "comment": f"{job_comment(params['job_name'], group)} manifest={manifest}",
        }
        command = [self.python, "-u", "-m", "campaign.job.array_task", str(manifest_path(self.folder, manifest))]
        if len(group) > 1:
            command += ["--index-env", "SLURM_ARRAY_TASK_ID"]
        return sbatch_script(named, shlex.join(command), logs_folder(self.folder, manifest), len(group))

    def batches(self, requests: Sequence[JobRequest]) -> list[list[JobRequest]]:
        return [group for _, group in self._groups(requests, self._planned_max_array())]

    def _planned_max_array(self) -> int:
        """The configured MaxArraySize as submit takes it (0, arrays off: one job per run), else
        DEFAULT_MAX_ARRAY: a dry run asks no scheduler."""
        configured = self.cluster.max_array_size
        return DEFAULT_MAX_ARRAY if configured is None else configured

    def _clusters(self, partition: str) -> str | None:
        part = self.cluster.partitions.get(partition)
        return (part.clusters if part is not None else None) or self.cluster.clusters

    def render(self, requests: Sequence[JobRequest]) -> list[str]:
        scripts = []
        for params, group in self._groups(requests, self._planned_max_array()):
            text = self._script(params, group, "<manifest>")
            runs = "\n".join(
                f"#   [{i}] {r.run.label}: {shlex.join(argv)}"
                + "".join(f"\n#       {line}" for line in fom.preview(argv))
                for i, r in enumerate(group)
                for argv in [self._task(r).argv]
            )
            scripts.append(text + f"# runs in this {'array' if len(group) > 1 else 'job'}:\n{runs}\n")
        return scripts

    def render_step(self, step: StepRequest) -> str:
        return slurm_steps.render_step(self.cluster, self.folder, self.python, self._step(step))

    def submit_step(self, step: StepRequest) -> StepSubmitted:
        return slurm_steps.submit_step(self.cluster, self.folder, self.python, self._step(step))

    def _step(self, step: StepRequest) -> StepRequest:
        return slurm_launch.launched_step(self.cluster.partitions[step.partition], self.python, step)

    def _task(self, req: JobRequest) -> JobTask:
        # the job folders (runs, builds) bound into a container at their own paths
        return slurm_launch.launched_task(
            self.cluster.partitions[req.run.partition], req.run, self.python, req.task, (str(self.folder.parent),)
        )

    def _write_manifest(self, group: list[JobRequest]) -> str:
        """The array's one payload: every task's JobTask, and the attempts they
        belong to (crash recovery reads it), written atomically before sbatch."""
        data = {
            "attempts": [r.attempt_id for r in group],
            "runs": [r.run.key for r in group],
            "array": len(group) > 1,
            "job_name": job_name(group[0].job_name, group),
            "clusters": self._clusters(group[0].run.partition),
            "tasks": [recorded(task_to_json(self._task(r))) for r in group],
        }
        return write_manifest(self.folder, data)

    def submit(self, requests: Sequence[JobRequest], on_submitted: OnSubmitted) -> None:
        for params, group in self._groups(requests, self._max_array()):
            manifest = self._write_manifest(group)
            script = logs_folder(self.folder, manifest) / SCRIPT
            script.write_text(self._script(params, group, manifest))
            clusters = self._clusters(group[0].run.partition)  # on the command line: over SLURM_CLUSTERS
            proc = run_slurm(["sbatch", "--parsable", *slurm_query.where_clusters(clusters), str(script)])
            if proc.returncode != 0:
                raise SubmissionError(
                    f"sbatch refused {len(group)} job(s) on {params['partition']}: {failure_text(proc)}"
                )
            base, where = _parse_sbatch(proc.stdout)
            where = where or slurm_query.single_cluster(clusters)
            on_submitted(self._submitted(group, manifest, base, where, params))

    def _submitted(
        self,
        group: list[JobRequest],
        manifest: str,
        base: str,
        where: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> list[Submitted]:
        array = len(group) > 1
        cpus = params["cpus_per_task"] if params else None
        gpus = slurm_launch.node_gpus(params) if params else None
        folder = str(logs_folder(self.folder, manifest))
        return [
            task_submitted(req.attempt_id, base, index, array, folder, cluster=where, cpus=cpus, gpus=gpus)
            for index, req in enumerate(group)
        ]

    def query(self, refs: Sequence[JobRef]) -> QueryResult:
        """One batched query per Slurm cluster holding jobs (-M for any but the local one)."""
        statuses: dict[int, JobStatus] = {}
        warnings: list[str] = []
        for where, group in _by_cluster(refs).items():
            # the earliest submission bounds sacct's answer: an older job with a reused id is not ours
            times = [r.submitted_at for r in group]
            since = None if None in times else min(t for t in times if t is not None)
            infos, more = slurm_query.query_states([r.job_id for r in group], clusters=where, since=since)
            infos = slurm_reasons.live_reasons(infos, clusters=where)  # sacct's pending Reason is stale
            warnings += more
            for ref in group:
                info = infos.get(ref.job_id)
                if info is None:
                    continue  # not in accounting yet: keep the last known state
                statuses[ref.attempt_id] = JobStatus(
                    info.state, exit_status(info.exit_code, info.signal), info.node, info.start, info.end, info.reason
                )
        return QueryResult(statuses, warnings)

    def node_jobs(
        self, nodes: Sequence[str], since: datetime, until: datetime, cluster: str | None = None
    ) -> tuple[list[NodeJob], list[str]]:
        """One sacct call (all users) for the shared-node check; without
        accounting, none, with a warning (the ledger's own jobs still count)."""
        try:
            return slurm_nodes.query_node_jobs(nodes, since, until, clusters=cluster), []
        except SchedulerError as exc:
            return [], [f"shared-node check saw only this ledger's jobs: {one_line(exc)}"]

    def cancel(self, refs: Sequence[JobRef]) -> None:
        slurm_cancel.cancel_and_wait(_by_cluster([r for r in refs if r.job_id]), self.cancel_wait_s)

    def recover(self, requests: Sequence[JobRequest]) -> list[Submitted]:
        return recover_from_manifests(self.folder, requests)


def _profiled(run: RunSpec) -> bool:
    return dict(run.extra_args).get("profile", "none") != "none"


def _parse_sbatch(stdout: str) -> tuple[str, str | None]:
    answer = slurm_query.parse_sbatch(stdout)
    if answer is None:
        raise SubmissionError(f"sbatch answered without a job ID: {one_line(stdout) or '(nothing)'}")
    return answer


def _by_cluster(refs: Sequence[JobRef]) -> dict[str | None, list[JobRef]]:
    out: dict[str | None, list[JobRef]] = {}
    for ref in refs:
        out.setdefault(ref.cluster or None, []).append(ref)
    return out


def _one(values: Sequence[str]) -> str:
    distinct = sorted(set(values))
    return distinct[0] if len(distinct) == 1 else "*"


def job_name(base: str, group: Sequence[JobRequest]) -> str:
    """``campaign:<camp>:<kernel>/<impl>/<variant>:<threads>t``; a field that differs
    between the tasks of an array is ``*`` (each task prints its own run label)."""
    runs = [r.run for r in group]
    what = "/".join(_one([getattr(r, f) for r in runs]) for f in ("kernel", "impl", "variant"))
    return f"{base}:{what}:{_one([str(r.threads) for r in runs])}t"


def job_comment(base: str, group: Sequence[JobRequest]) -> str:
    runs = [r.run for r in group]
    fields = " ".join(
        f"{f}={_one([str(getattr(r, f)) for r in runs])}" for f in ("kernel", "impl", "variant", "threads")
    )
    return f"{base} {fields}"
