"""Job attempts: recorded before they reach the scheduler, their job IDs
recorded as soon as it answers. Submit, rerun and crash recovery all make and
send attempts through these functions, so they follow the same rules
(docs/ledger.md: a run and its attempt are committed before sbatch; each
chunk's job IDs are committed as soon as sbatch returns).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from campaign.backends.base import Backend, JobRequest, Submitted
from campaign.config.schema import ClusterSpec
from campaign.job.task import JobTask
from campaign.ledger import ATTEMPT_TABLE, JobAttempt, Ledger
from campaign.ledger import queries as q
from campaign.planning.environment import job_env
from campaign.planning.run_spec import RunSpec
from campaign.plumbing import owner
from campaign.plumbing.clock import now
from campaign.plumbing.errors import CampaignError, one_line
from campaign.plumbing.states import JobState

OUTPUT_CSV = "results.csv"
Progress = Callable[[int, int, str], None]


def attempt_folder(camp_dir: Path | str, key: str, attempt: int) -> str:
    """An attempt's folder, `<campaign folder>/<run key>/attempt-<n>`, as text without pathlib (100,000
    runs at a time)."""
    return f"{str(camp_dir).rstrip('/')}/{key}/attempt-{attempt}"


def job_request(cluster: ClusterSpec, camp: str, run: RunSpec, attempt_id: int, workdir: Path | str,
                walltime_min: int, mem_gb: float | None, n: tuple[int, ...] | None = None,
                env: dict[str, str] | None = None,
                env_items: tuple[tuple[str, str], ...] | None = None) -> JobRequest:
    """What the backend needs to submit one recorded attempt (`n`: only these
    sizes, for a rerun of what a stopped attempt left missing; `env`: the
    run's job_env when the caller already has it, `env_items` its sorted
    items, shared by the runs of one partition and thread count). Paths are joined as
    strings: pathlib per run cost seconds at 100,000 runs."""
    part = cluster.partitions[run.partition]
    env = job_env(cluster, part, run) if env is None else env
    program = replace(run, n=n) if n else run
    folder = str(workdir)
    csv = os.path.join(folder, OUTPUT_CSV)
    task = JobTask(
        argv=tuple(program.command(csv)),
        env=tuple(sorted(env.items())) if env_items is None else env_items,
        workdir=folder,
        output_csv=csv,
        stack_unlimited=cluster.stack_unlimited,
        label=run.label,
    )
    return JobRequest(attempt_id, run, task, walltime_min, mem_gb,
                      job_name=f"campaign:{camp}", comment=f"campaign={camp} run={run.key} attempt_id={attempt_id}")


def job_requests(cluster: ClusterSpec, camp: str, todo: Iterable[tuple[int, RunSpec, str]]) -> list[JobRequest]:
    """job_request of many (attempt id, run, job folder), each run's own
    walltime and memory; the environment is made once per partition and
    thread count (all job_env depends on)."""
    envs: dict[tuple[str, int], tuple[dict[str, str], tuple[tuple[str, str], ...]]] = {}
    out = []
    for aid, run, folder in todo:
        where = (run.partition, run.threads)
        if where not in envs:
            env = job_env(cluster, cluster.partitions[run.partition], run)
            envs[where] = (env, tuple(sorted(env.items())))
        env, items = envs[where]
        out.append(job_request(cluster, camp, run, aid, folder, run.walltime_min, run.mem_gb, env=env, env_items=items))
    return out


def attempt_row(run_id: int, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                prov_id: int | None, walltime_min: int, mem_gb: float | None,
                n: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Column values of a new attempt, recorded before it reaches the scheduler."""
    number = (previous.attempt + 1) if previous else 1
    return dict(zip(ATTEMPT_COLUMNS, _attempt_values(run_id, run.key, number, previous.id if previous else None,
                                                     camp_dir, prov_id, walltime_min, mem_gb, n, owner.me())))


# The columns of a new attempt, in the order of first_attempt_rows' tuples.
ATTEMPT_COLUMNS = ("run_id", "attempt", "previous_id", "backend", "state", "workdir", "output_path", "walltime_min",
                   "mem_gb", "provenance_id", "n", "owner_host", "owner_pid", "owner_start")


def first_attempt_rows(runs: Iterable[tuple[int, RunSpec]], camp_dir: Path,
                       prov_id: int | None) -> list[tuple[Any, ...]]:
    """ATTEMPT_COLUMNS values of the first attempt of each (run id, run), for
    queries.insert_many: plain tuples, no dict per row."""
    me = owner.me()
    return [_attempt_values(rid, run.key, 1, None, camp_dir, prov_id, run.walltime_min, run.mem_gb, None, me)
            for rid, run in runs]


def _attempt_values(run_id: int, key: str, number: int, previous_id: int | None, camp_dir: Path | str,
                    prov_id: int | None, walltime_min: int, mem_gb: float | None, n: tuple[int, ...] | None,
                    me: owner.Owner) -> tuple[Any, ...]:
    workdir = attempt_folder(camp_dir, key, number)
    return (run_id, number, previous_id, "", JobState.PENDING, workdir, f"{workdir}/{OUTPUT_CSV}",
            walltime_min, mem_gb, prov_id, list(n) if n else None, me.host, me.pid, me.start)


def orphaned(att: JobAttempt) -> bool:
    """Recorded, never confirmed by the scheduler, and its recording process is
    gone (or is this one): crash recovery may take it. An attempt another live
    process is still submitting is never touched (else a second submit takes
    the first one's attempts for leftovers and runs every job twice). Callers
    hold the campaign's claim (campaign.commands.claims), so an owner on another host
    cannot still be submitting it."""
    if att.job_id is not None:
        return False
    if att.state is JobState.NOT_SUBMITTED:  # refused by the scheduler: send it again (reopen_unsubmitted)
        return True
    if att.state.finished:
        return False
    mine = (att.owner_host, att.owner_pid, att.owner_start) == (owner.me().host, owner.me().pid, owner.me().start)
    return mine or owner.alive(att.owner_host, att.owner_pid, att.owner_start) is not True


def reopen_unsubmitted(att: JobAttempt) -> None:
    """An attempt the scheduler refused goes back to PENDING (owned by this
    process) before it is sent again: recorded before acting, as at first."""
    if att.state is JobState.NOT_SUBMITTED:
        me = owner.me()
        att.state, att.reason = JobState.PENDING, None
        att.owner_host, att.owner_pid, att.owner_start = me.host, me.pid, me.start


def mark_not_submitted(ledger: Ledger, attempt_ids: Iterable[int], error: str, again: str) -> int:
    """The attempts of a submission the scheduler refused (still PENDING
    without a job ID) become NOT_SUBMITTED with its error and how to send
    them again; returns how many. Never waits on the scheduler."""
    ids = sorted(set(attempt_ids))
    reason = f"not submitted: {error[:400]}; {again}"
    marked = 0
    with ledger.session.begin() as s:
        for i in range(0, len(ids), 10_000):
            stmt = (update(JobAttempt).where(JobAttempt.id.in_(ids[i:i + 10_000]), JobAttempt.job_id.is_(None),
                                             JobAttempt.state == JobState.PENDING)
                    .values(state=JobState.NOT_SUBMITTED, reason=reason))
            result: Any = s.execute(stmt)  # a CursorResult (an UPDATE's row count)
            marked += result.rowcount or 0
    return marked


AGAIN = ("fix that, then run the same `campaign submit` (or `campaign rerun CAMPAIGN --failed`) again: "
         "it sends these runs, after a look in the scheduler so that none runs twice")


def refused(ledger: Ledger, attempt_ids: Iterable[int], exc: Exception) -> Exception:
    """After a submission failed part-way: its attempts still without a job
    ID become NOT_SUBMITTED (mark_not_submitted), and the error to raise
    says how many and how to send them again (same class: same exit code)."""
    marked = mark_not_submitted(ledger, attempt_ids, one_line(exc), AGAIN)
    if not marked or not isinstance(exc, CampaignError):
        return exc
    return type(exc)(f"{one_line(exc)}; {marked} run(s) recorded as NOT_SUBMITTED: {AGAIN}")


def new_attempt(s: Session, run_id: int, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                prov_id: int | None, walltime_min: int, mem_gb: float | None,
                n: tuple[int, ...] | None = None) -> tuple[int, RunSpec, str]:
    """Insert one attempt; returns (attempt id, run, job folder)."""
    values = attempt_row(run_id, run, camp_dir, previous, prov_id, walltime_min, mem_gb, n)
    attempt_id = s.execute(insert(JobAttempt).returning(JobAttempt.id), values).scalar_one()
    return attempt_id, run, values["workdir"]


def record_submitted(ledger: Ledger, backend: Backend, chunk: list[Submitted]) -> None:
    """One short transaction per sbatch answer: the job IDs are safe on disk
    before the next chunk is submitted (one driver executemany, not an ORM
    bulk update: up to MaxArraySize rows per answer)."""
    stamp = now()
    name = backend.name
    with ledger.session.begin() as s:
        q.update_many(s, ATTEMPT_TABLE, _SUBMITTED_COLUMNS, [
            (sub.job_id, sub.array_job_id, sub.array_index, sub.stdout_path, sub.stderr_path, name,
             sub.submitted_at or stamp,
             sub.cluster, sub.cpus, sub.gpus, sub.attempt_id)
            for sub in chunk
        ])


_SUBMITTED_COLUMNS = ("job_id", "array_job_id", "array_index", "stdout_path", "stderr_path", "backend",
                      "submitted_at", "scheduler_cluster", "alloc_cpus", "alloc_gpus")


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
