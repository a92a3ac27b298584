"""Rerun failed runs as new attempts linked to the old ones, and cancel jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.backends.base import JobRef, JobRequest, get_backend
from campaign.config.schema import ClusterSpec
from campaign.errors import BadInputError
from campaign.ledger import JobAttempt, Ledger
from campaign.ledger import queries as q
from campaign.plan import RunSpec
from campaign.states import JobState


@dataclass
class _Batch:
    """The new attempts of one campaign, submitted together."""

    cluster: ClusterSpec
    workdir: str
    python: str
    requests: list[JobRequest] = field(default_factory=list)
    previous: dict[int, str | None] = field(default_factory=dict)  # new attempt id -> previous job id


@dataclass
class RerunReport:
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (new job id, previous job id)
    sync: object | None = None


def _select(s: Session, campaign: str | None, job_id: str | None, states: set[JobState]) -> list[JobAttempt]:
    if job_id is not None:
        att = q.attempts_by_job_id(s, job_id)[-1]
        latest = q.lineage(s, att)[-1]
        if not latest.state.finished:
            raise BadInputError(f"job {latest.job_id} is still {latest.state.value}; cancel it first")
        return [latest]
    camp_id = q.require_campaign(s, campaign).id if campaign else None
    return [a for a in q.latest_attempts(s, camp_id) if a.state in states]


def _scaled(att: JobAttempt, spec: RunSpec, part_max: int, part_mem: float | None, part_share: float,
            time_factor: float, mem_factor: float) -> tuple[int, float | None]:
    walltime, mem = att.walltime_min, att.mem_gb
    if att.state is JobState.TIMEOUT and time_factor != 1.0:
        walltime = min(part_max, max(walltime + 1, int(round(walltime * time_factor))))
    if att.state is JobState.OUT_OF_MEMORY and mem_factor != 1.0:
        base = mem if mem is not None else (part_mem if part_mem is not None else part_share * max(1, spec.threads))
        mem = round(base * mem_factor, 3)
    return walltime, mem


def rerun(
    ledger: Ledger,
    campaign: str | None = None,
    *,
    failed: bool = False,
    job_id: str | None = None,
    states: Iterable[str] = (),
    time_factor: float = 1.0,
    mem_factor: float = 1.0,
    progress: Callable[[int, int, str], None] | None = None,
) -> RerunReport:
    from campaign.api import SubmitReport, _new_attempt, _request, _submit_requests, cluster_from_yaml, sync

    if time_factor < 1.0 or mem_factor < 1.0:
        raise BadInputError("--time-factor and --mem-factor must be >= 1")
    wanted = {JobState(s.upper()) for s in states} if states else set()
    if failed:
        wanted |= {st for st in JobState if st.rerunnable}
    if job_id is None and not wanted:
        raise BadInputError("say what to rerun: --failed, --state STATE or --job JOB_ID")
    report = RerunReport()
    batches: dict[str, _Batch] = {}
    with ledger.session.begin() as s:
        for att in _select(s, campaign, job_id, wanted):
            run = att.run
            camp = run.campaign
            if camp.name not in batches:
                batches[camp.name] = _Batch(cluster_from_yaml(camp.cluster_yaml), camp.workdir, camp.python)
            batch = batches[camp.name]
            spec = RunSpec.from_json(run.spec)
            part = batch.cluster.partitions[spec.partition]
            walltime, mem = _scaled(att, spec, part.max_walltime_min, part.mem_gb,
                                    part.memory_gb / max(1, part.cores), time_factor, mem_factor)
            aid, _, workdir = _new_attempt(s, run, spec, Path(camp.workdir), att, None, walltime, mem)
            batch.requests.append(_request(batch.cluster, camp.name, spec, aid, Path(workdir), walltime, mem))
            batch.previous[aid] = att.job_id
    for name, batch in batches.items():
        backend = get_backend(batch.cluster, Path(batch.workdir), batch.python)
        _submit_requests(ledger, backend, batch.requests, SubmitReport(name, len(batch.requests)), progress)
        with ledger.session() as s:
            rows = s.execute(select(JobAttempt.id, JobAttempt.job_id).where(JobAttempt.id.in_(list(batch.previous))))
            new_ids = {aid: job for aid, job in rows}
        for aid, old in batch.previous.items():
            report.submitted.append((new_ids.get(aid) or "?", old or "?"))
        if batch.cluster.backend == "local":
            report.sync = sync(ledger, name)
    return report


def cancel(ledger: Ledger, target: str) -> list[str]:
    """Cancel a campaign's unfinished jobs, or one job; returns the job IDs."""
    from campaign.api import cluster_from_yaml, now

    with ledger.session() as s:
        camp = q.campaign_by_name(s, target)
        if camp is not None:
            atts = [a for a in q.latest_attempts(s, camp.id) if not a.state.finished]
        else:
            atts = [a for a in q.attempts_by_job_id(s, target) if not a.state.finished]
            if not atts:
                raise BadInputError(f"job {target} has already finished; nothing to cancel")
        groups: dict[str, tuple[str, str, list[JobRef]]] = {}
        for a in atts:
            c = a.run.campaign
            groups.setdefault(c.name, (c.cluster_yaml, c.workdir, []))[2].append(
                JobRef(a.id, a.job_id or "", a.workdir, a.submitted_at, a.walltime_min))
    for cyaml, workdir, refs in groups.values():
        live = [r for r in refs if r.job_id]
        if live:
            get_backend(cluster_from_yaml(cyaml), Path(workdir)).cancel(live)
    cancelled = []
    with ledger.session.begin() as s:
        for _, _, refs in groups.values():
            for ref in refs:
                att = s.get(JobAttempt, ref.attempt_id)
                if att is not None and not att.state.finished:
                    att.state, att.reason, att.ended_at = JobState.CANCELLED, "cancelled by campaign cancel", now()
                    cancelled.append(att.job_id or f"(unsubmitted attempt {att.id})")
    return cancelled
