"""Job attempts: recorded before they reach the scheduler, their job IDs
recorded as soon as it answers. Submit, rerun and crash recovery all make and
send attempts through these functions, so they follow the same rules
(docs/ledger.md: a run and its attempt are committed before sbatch; each
chunk's job IDs are committed as soon as sbatch returns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from campaign import owner
from campaign.backends.base import Backend, JobRequest, Submitted
from campaign.clock import now
from campaign.config.schema import ClusterSpec
from campaign.environment import job_env
from campaign.job.task import JobTask
from campaign.ledger import JobAttempt, Ledger
from campaign.plan import RunSpec
from campaign.states import JobState

OUTPUT_CSV = "results.csv"
Progress = Callable[[int, int, str], None]


def attempt_dir(camp_dir: Path, run: RunSpec, attempt: int) -> Path:
    return camp_dir / run.key / f"attempt-{attempt}"


def job_request(cluster: ClusterSpec, camp: str, run: RunSpec, attempt_id: int, workdir: Path,
                walltime_min: int, mem_gb: float | None, n: tuple[int, ...] | None = None) -> JobRequest:
    """What the backend needs to submit one recorded attempt (`n`: only these
    sizes, for a rerun of what a stopped attempt left missing)."""
    part = cluster.partitions[run.partition]
    env = job_env(cluster, part, run)
    program = replace(run, n=n) if n else run
    task = JobTask(
        argv=tuple(program.command(str(workdir / OUTPUT_CSV))),
        env=tuple(sorted(env.items())),
        workdir=str(workdir),
        output_csv=str(workdir / OUTPUT_CSV),
        stack_unlimited=cluster.stack_unlimited,
        label=run.label,
    )
    return JobRequest(attempt_id, run, task, walltime_min, mem_gb,
                      job_name=f"campaign:{camp}", comment=f"campaign={camp} run={run.key} attempt_id={attempt_id}")


def attempt_row(run_id: int, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                prov_id: int | None, walltime_min: int, mem_gb: float | None,
                n: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Column values of a new attempt, recorded before it reaches the scheduler."""
    number = (previous.attempt + 1) if previous else 1
    workdir = attempt_dir(camp_dir, run, number)
    me = owner.me()
    return {"run_id": run_id, "attempt": number, "previous_id": previous.id if previous else None,
            "backend": "", "state": JobState.PENDING, "workdir": str(workdir),
            "output_path": str(workdir / OUTPUT_CSV), "walltime_min": walltime_min, "mem_gb": mem_gb,
            "provenance_id": prov_id, "n": list(n) if n else None, "owner_host": me.host, "owner_pid": me.pid, "owner_start": me.start}


def orphaned(att: JobAttempt) -> bool:
    """Recorded, never confirmed by the scheduler, and its recording process is
    gone (or is this one): crash recovery may take it. An attempt another live
    process is still submitting is never touched (issue 11: a second submit took
    the first one's attempts for leftovers and ran every job twice). Callers
    hold the campaign's claim (campaign.claims), so an owner on another host
    cannot still be submitting it."""
    if att.job_id is not None or att.state.finished:
        return False
    mine = (att.owner_host, att.owner_pid, att.owner_start) == (owner.me().host, owner.me().pid, owner.me().start)
    return mine or owner.alive(att.owner_host, att.owner_pid, att.owner_start) is not True


def new_attempt(s: Session, run_id: int, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                prov_id: int | None, walltime_min: int, mem_gb: float | None,
                n: tuple[int, ...] | None = None) -> tuple[int, RunSpec, str]:
    """Insert one attempt; returns (attempt id, run, job folder)."""
    values = attempt_row(run_id, run, camp_dir, previous, prov_id, walltime_min, mem_gb, n)
    attempt_id = s.execute(insert(JobAttempt).returning(JobAttempt.id), values).scalar_one()
    return attempt_id, run, values["workdir"]


def record_submitted(ledger: Ledger, backend: Backend, chunk: list[Submitted]) -> None:
    """One short transaction per sbatch answer: the job IDs are safe on disk
    before the next chunk is submitted."""
    stamp = now()
    with ledger.session.begin() as s:
        s.execute(update(JobAttempt), [
            {"id": sub.attempt_id, "job_id": sub.job_id, "array_job_id": sub.array_job_id,
             "array_index": sub.array_index, "stdout_path": sub.stdout_path, "stderr_path": sub.stderr_path,
             "backend": backend.name, "submitted_at": stamp, "scheduler_cluster": sub.cluster,
             "alloc_cpus": sub.cpus, "alloc_gpus": sub.gpus}
            for sub in chunk
        ])


def submit_requests(ledger: Ledger, backend: Backend, reqs: list[JobRequest],
                    progress: Progress | None = None) -> list[Submitted]:
    """Send recorded attempts to the backend; every answer is recorded at once."""
    sent: list[Submitted] = []

    def record(chunk: list[Submitted]) -> None:
        record_submitted(ledger, backend, chunk)
        sent.extend(chunk)

    backend.progress = progress
    backend.submit(reqs, record)
    return sent


def recover_orphans(ledger: Ledger, backend: Backend, reqs: list[JobRequest],
                    resumed: set[int]) -> tuple[list[JobRequest], list[Submitted]]:
    """Attach jobs an interrupted submit left in the scheduler; returns the
    requests still to submit and the jobs found."""
    candidates = [r for r in reqs if r.attempt_id in resumed]
    if not candidates:
        return reqs, []
    found = backend.recover(candidates)
    if found:
        record_submitted(ledger, backend, found)
    done = {f.attempt_id for f in found}
    return [r for r in reqs if r.attempt_id not in done], found
