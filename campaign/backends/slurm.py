"""Slurm backend: job arrays, their scripts rendered by submitit's template.

Runs that share resources (partition, CPUs, GPUs, walltime, memory, account,
environment) go out as one array, chunked so that no index reaches the
cluster's MaxArraySize. Before each sbatch a manifest (array index → attempt)
(the array's one payload: every task's program, environment and folder) is
written next to the jobs, and the job name/comment name the campaign and
manifest, so jobs whose submitter died can be found and attached again.
Only this module and slurm_query know submitit's keywords and Slurm's words.
"""

from __future__ import annotations

import json
import os
import shlex
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from campaign.backends import slurm_query, slurm_steps
from campaign.backends.base import Backend, JobRef, JobRequest, JobStatus, OnSubmitted, QueryResult, Submitted
from campaign.backends.slurm_run import run_slurm
from campaign.backends.step import StepRequest, StepSubmitted
from campaign.backends.submitit_adapter import sbatch_script
from campaign.config.schema import ClusterSpec, PartitionSpec
from campaign.environment import profiler_lines, setup_lines
from campaign.errors import SchedulerError, SubmissionError, one_line
from campaign.job.array_task import task_to_json

DEFAULT_MAX_ARRAY = 1001
# Slurm's variables kept in job.json (array task, job id, CPUs actually given).
_RECORDED_ENV = ("SLURM_",)


class SlurmBackend(Backend):
    name = "slurm"

    def __init__(self, cluster: ClusterSpec, folder: Path, python: str | None = None) -> None:
        super().__init__(cluster, folder, python)
        # job environment lines, rendered once per (partition, environment)
        self._setup_cache: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}

    def _params(self, req: JobRequest) -> dict[str, Any]:
        cluster = self.cluster
        part: PartitionSpec = cluster.partitions[req.run.partition]
        profiled = dict(req.run.extra_args).get("profile", "none") != "none"
        params: dict[str, Any] = {
            "partition": part.name,
            "time": req.walltime_min,
            "nodes": 1,
            "ntasks_per_node": 1,
            "job_name": req.job_name,
            "setup": self._setup(part, req.task.env, profiled),
            "array_parallelism": cluster.array_parallelism,
            "stderr_to_stdout": False,
        }
        if req.run.gpus:
            params["gpus_per_node"] = req.run.gpus
            params["cpus_per_task"] = part.cpus_per_gpu * req.run.gpus
        else:
            # Whole-node partitions (Anvil wholenode) take all cores whatever
            # the thread count; OMP_NUM_THREADS still sets the threads used.
            params["cpus_per_task"] = part.cores * part.threads_per_core if part.whole_node else req.run.threads
        if req.mem_gb is not None:
            params["mem"] = f"{int(round(req.mem_gb * 1024))}M"
        account = part.account or cluster.account
        if account:
            params["account"] = account
        qos = part.qos or cluster.qos
        if qos:
            params["qos"] = qos
        # --no-requeue: after NODE_FAIL or preemption Slurm would run the job
        # again under the same ID behind the ledger's back; the ledger decides
        # reruns (`campaign rerun`), as new attempts with their own job IDs.
        params["additional_parameters"] = {"no-requeue": True, **dict(part.sbatch_extra)}
        if req.depends_on:  # behind the partition's preflight job (issue 19)
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
        for req in requests:
            params = self._params(req)
            sig = json.dumps(params, sort_keys=True, default=str)
            by_sig.setdefault(sig, (params, []))[1].append(req)
        out = []
        # MaxArraySize N allows indexes 0..N-1, so at most N tasks per array.
        size = max(1, max_array)
        for params, reqs in by_sig.values():
            for i in range(0, len(reqs), size):
                out.append((params, reqs[i:i + size]))
        return out

    def _logs(self, manifest: str) -> Path:
        """One folder per array (or single job), made before sbatch: Slurm
        does not create the folder of --output itself."""
        return self.folder / "slurm" / manifest

    def _manifest_path(self, manifest: str) -> Path:
        return self.folder / "manifests" / f"{manifest}.json"

    def _script(self, params: dict[str, Any], group: list[JobRequest], manifest: str) -> str:
        # The manifest id in the job name lets a later submit find jobs whose
        # IDs never reached the ledger (sacct keeps names, not comments, by default).
        named = {**params, "job_name": f"{params['job_name']}:{manifest}",
                 "comment": f"{params['job_name']} manifest={manifest}"}
        command = [self.python, "-u", "-m", "campaign.job.array_task", str(self._manifest_path(manifest))]
        if len(group) > 1:
            command += ["--index-env", "SLURM_ARRAY_TASK_ID"]
        return sbatch_script(named, shlex.join(command), self._logs(manifest), len(group))

    def render(self, requests: Sequence[JobRequest]) -> list[str]:
        max_array = self.cluster.max_array_size or DEFAULT_MAX_ARRAY
        scripts = []
        for params, group in self._groups(requests, max_array):
            text = self._script(params, group, "<manifest>")
            runs = "\n".join(f"#   [{i}] {r.run.label}: {shlex.join(r.task.argv)}" for i, r in enumerate(group))
            scripts.append(text + f"# runs in this {'array' if len(group) > 1 else 'job'}:\n{runs}\n")
        return scripts

    def render_step(self, step: StepRequest) -> str:
        return slurm_steps.render_step(self.cluster, self.folder, self.python, step)

    def submit_step(self, step: StepRequest) -> StepSubmitted:
        return slurm_steps.submit_step(self.cluster, self.folder, self.python, step)

    def _write_manifest(self, group: list[JobRequest]) -> str:
        """The array's one payload: every task's JobTask, and the attempts they
        belong to (crash recovery reads it), written atomically before sbatch."""
        ident = uuid.uuid4().hex[:16]
        path = self._manifest_path(ident)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._logs(ident).mkdir(parents=True, exist_ok=True)
        data = {"attempts": [r.attempt_id for r in group], "runs": [r.run.key for r in group],
                "array": len(group) > 1, "job_name": group[0].job_name,
                "tasks": [task_to_json(replace(r.task, record_env_prefixes=_RECORDED_ENV)) for r in group]}
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, path)
        return ident

    def submit(self, requests: Sequence[JobRequest], on_submitted: OnSubmitted) -> None:
        for params, group in self._groups(requests, self._max_array()):
            manifest = self._write_manifest(group)
            script = self._logs(manifest) / "job.sbatch"
            script.write_text(self._script(params, group, manifest))
            proc = run_slurm(["sbatch", "--parsable", str(script)])
            if proc.returncode != 0:
                raise SubmissionError(f"sbatch refused {len(group)} job(s) on {params['partition']}: "
                                      f"{one_line(proc.stderr or proc.stdout)}")
            base = _parse_sbatch(proc.stdout)
            on_submitted(self._submitted(group, manifest, base))

    def _submitted(self, group: list[JobRequest], manifest: str, base: str) -> list[Submitted]:
        array = len(group) > 1
        subs = []
        for index, req in enumerate(group):
            job_id = f"{base}_{index}" if array else base
            out, err = self._paths(manifest, job_id)
            subs.append(Submitted(req.attempt_id, job_id, base if array else None, index if array else None, out, err))
        return subs

    def _paths(self, manifest: str, job_id: str) -> tuple[str, str]:
        folder = self._logs(manifest)
        return str(folder / f"{job_id}_0_log.out"), str(folder / f"{job_id}_0_log.err")

    def _find_by_name(self, name: str, since: float) -> str | None:
        """Base job ID of the job or array named `name`, from squeue then sacct."""
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 3600))
        for argv in (["squeue", "-h", "-r", f"--name={name}", "-o", "%i"],
                     ["sacct", "-X", "-n", "-P", f"--name={name}", "-S", start, "-o", "JobID"]):
            proc = run_slurm(argv)
            if proc.returncode != 0:
                raise SchedulerError(f"{argv[0]} failed while looking for orphaned jobs: "
                                     f"{one_line(proc.stderr, 200)}")
            for line in proc.stdout.split():
                return line.split("_")[0]
        return None

    def recover(self, requests: Sequence[JobRequest]) -> list[Submitted]:
        """Jobs that reached Slurm although the ledger never got their IDs (the
        submitter died between sbatch and the ledger write): found by the
        manifest written before sbatch and the job name that carries it."""
        wanted = {r.attempt_id for r in requests}
        found: list[Submitted] = []
        for path in sorted((self.folder / "manifests").glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            attempts = [int(a) for a in data.get("attempts", [])]
            if not wanted & set(attempts):
                continue
            base = self._find_by_name(f"{data['job_name']}:{path.stem}", path.stat().st_mtime)
            if base is None:
                continue
            array = bool(data.get("array"))
            for index, aid in enumerate(attempts):
                if aid in wanted:
                    job_id = f"{base}_{index}" if array else base
                    out, err = self._paths(path.stem, job_id)
                    found.append(Submitted(aid, job_id, base if array else None, index if array else None, out, err))
        return found

    def query(self, refs: Sequence[JobRef]) -> QueryResult:
        infos, warnings = slurm_query.query_states([r.job_id for r in refs])
        statuses: dict[int, JobStatus] = {}
        for ref in refs:
            info = infos.get(ref.job_id)
            if info is None:
                continue  # not in accounting yet: keep the last known state
            statuses[ref.attempt_id] = JobStatus(info.state, info.exit_code, info.node, info.start, info.end,
                                                 info.reason)
        return QueryResult(statuses, warnings)

    def cancel(self, refs: Sequence[JobRef]) -> None:
        ids = [r.job_id for r in refs if r.job_id]
        for i in range(0, len(ids), 1000):
            proc = run_slurm(["scancel", *ids[i:i + 1000]])
            if proc.returncode != 0:
                raise SchedulerError(f"scancel failed: {one_line(proc.stderr)}")


def _parse_sbatch(stdout: str) -> str:
    """The job ID from `sbatch --parsable` ("123" or "123;cluster")."""
    first = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = first.split(";")[0].strip()
    if not job_id.isdigit():
        raise SubmissionError(f"sbatch answered without a job ID: {one_line(stdout) or '(nothing)'}")
    return job_id
