"""The array's manifest on disk: where it and the array's logs live, written
atomically before sbatch, and read back to find jobs that reached Slurm
although the ledger never got their IDs (the submitter died between sbatch
and the ledger write).

A manifest (array index → attempt; every task's program, environment and
folder) is the array's one payload; the job name carries its id, so the jobs
can be found by name and attached again.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaign.backends.base import JobRequest, Submitted
from campaign.backends.slurm_fields import slurm_time
from campaign.backends.slurm_query import CLUSTER_HEADER, single_cluster
from campaign.backends.slurm_run import COMMAND_TIMEOUT_S, run_slurm
from campaign.plumbing.errors import SchedulerError, one_line

# Slurm's variables kept in job.json (array task, job id, CPUs actually given).
_RECORDED_ENV = ("SLURM_",)
# compact, made once (json.dumps with arguments builds an encoder per call); no circular check on plain data
_MANIFEST_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False)


SCRIPT = "job.sbatch"  # the batch script, in the array's logs folder


def logs_folder(folder: Path, manifest: str) -> Path:
    """One folder per array (or single job), made before sbatch: Slurm
    does not create the folder of --output itself."""
    return folder / "slurm" / manifest


def manifest_path(folder: Path, manifest: str) -> Path:
    """Where the array's manifest is written (campaign.job.array_task reads it on the node)."""
    return folder / "manifests" / f"{manifest}.json"


def log_paths(folder: str, job_id: str) -> tuple[str, str]:
    """A task's stdout/stderr files (submitit's %A_%a_%t_log names, the task
    already known) as strings: pathlib per task cost seconds at 100,000."""
    stem = f"{folder}{job_id}_0_log" if not folder or folder.endswith("/") else f"{folder}/{job_id}_0_log"
    return f"{stem}.out", f"{stem}.err"  # os.path.join's result for a job ID (never absolute), without its cost


def recorded(task: dict[str, Any]) -> dict[str, Any]:
    """A task's manifest entry with Slurm's variables kept in job.json."""
    task["record_env_prefixes"] = list(_RECORDED_ENV)
    return task


def write_manifest(folder: Path, data: dict[str, Any]) -> str:
    """Write the manifest atomically (temp file, rename) and make its log folder; its new id."""
    ident = uuid.uuid4().hex[:16]
    path = manifest_path(folder, ident)
    path.parent.mkdir(parents=True, exist_ok=True)
    logs_folder(folder, ident).mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(_MANIFEST_JSON.encode(data))
    os.replace(tmp, path)
    return ident


def recover(folder: Path, requests: Sequence[JobRequest]) -> list[Submitted]:
    """Jobs that reached Slurm although the ledger never got their IDs (the
    submitter died between sbatch and the ledger write): found by the
    manifest written before sbatch and the job name that carries it."""
    wanted = {r.attempt_id for r in requests}
    found: list[Submitted] = []
    manifests = []
    for path in sorted((folder / "manifests").glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if wanted & {int(a) for a in data.get("attempts", [])}:
            manifests.append((path, data))
    _await_submissions({str(logs_folder(folder, path.stem) / SCRIPT) for path, _ in manifests})
    for path, data in manifests:
        attempts = [int(a) for a in data.get("attempts", [])]
        clusters = data.get("clusters")
        job = _find_by_name(f"{data['job_name']}:{path.stem}", path.stat().st_mtime, clusters)
        if job is None:
            continue
        base, where = job
        array = bool(data.get("array"))
        for index, aid in enumerate(attempts):
            if aid in wanted:
                # submitted after its manifest was written: sync asks sacct from then on (query_sacct)
                found.append(
                    task_submitted(
                        aid,
                        base,
                        index,
                        array,
                        str(logs_folder(folder, path.stem)),
                        cluster=where,
                        submitted_at=datetime.fromtimestamp(path.stat().st_mtime, UTC),
                    )
                )
    return found


def _await_submissions(scripts: set[str], timeout_s: float = COMMAND_TIMEOUT_S) -> None:
    """Wait while a process of this host still submits one of these batch scripts (its last
    argument): the sbatch a killed submitter started outlives it, and a look in Slurm before it
    answers finds nothing, so the job would be sent twice. A submitter is never waited for longer
    than its sbatch could take (run_slurm's timeout); another host's cannot be seen from here."""
    deadline = time.monotonic() + timeout_s
    while scripts and time.monotonic() < deadline and _submitting(scripts):
        time.sleep(0.1)


def _submitting(scripts: set[str]) -> bool:
    """A live process of this host whose last argument is one of `scripts` (Linux /proc; elsewhere none)."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        last = argv[-2] if len(argv) > 1 and argv[-1] == b"" else argv[-1]
        if os.fsdecode(last) in scripts:
            return True
    return False


def task_submitted(attempt_id: int, base: str, index: int, array: bool, folder: str, **facts: Any) -> Submitted:
    """Task `index` of the job or array `base` as submitted: its job id, array coordinates and log
    files (in `folder`), with the `facts` Submitted takes beside them."""
    job_id = f"{base}_{index}" if array else base
    out, err = log_paths(folder, job_id)
    return Submitted(attempt_id, job_id, base if array else None, index if array else None, out, err, **facts)


def _find_by_name(name: str, since: float, clusters: str | None = None) -> tuple[str, str | None] | None:
    """Base job ID of the job or array named `name`, from squeue then sacct,
    with the cluster that holds it where `clusters` names several (sbatch -M
    picked one), else `single_cluster(clusters)`. squeue is asked for every
    state (`-t all`): a job of a few seconds may have ended before the look,
    and accounting (sacct) may not have it yet, while the controller keeps it
    for MinJobAge (300 s by default) after its end."""
    start = slurm_time(datetime.fromtimestamp(since - 3600))
    where = ["-M", clusters] if clusters else []
    for argv in (
        ["squeue", *where, "-h", "-r", "-t", "all", f"--name={name}", "-o", "%i"],
        ["sacct", *where, "-X", "-n", "-P", f"--name={name}", "-S", start, "-o", "JobID,Cluster"],
    ):
        proc = run_slurm(argv)
        if proc.returncode != 0:
            raise SchedulerError(f"{argv[0]} failed while looking for orphaned jobs: {one_line(proc.stderr, 200)}")
        found = _first_job(proc.stdout)
        if found is not None:
            base, cluster = found
            return base, (cluster or None) if clusters and "," in clusters else single_cluster(clusters)
    return None


def _first_job(text: str) -> tuple[str, str] | None:
    """The first job of ``squeue -o %i`` or ``sacct -P -o JobID,Cluster`` output, as (base id, cluster):
    squeue asked about several clusters prints ``CLUSTER: <name>`` before each one's jobs, sacct the
    cluster in its second field; a line that is no job id is passed over, never taken for one."""
    cluster = ""
    for line in text.splitlines():
        if line.startswith(CLUSTER_HEADER):
            cluster = line.removeprefix(CLUSTER_HEADER).strip()
            continue
        job_id, _, named = line.strip().partition("|")
        base = job_id.split("_")[0]
        if base.isdigit():
            return base, named or cluster
    return None
