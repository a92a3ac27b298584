"""`campaign rerun`: failed runs again, as new attempts linked to the old ones."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign import preflight as chain
from campaign.attempts import Progress, job_request, new_attempt, submit_requests
from campaign.backends import get_backend
from campaign.backends.base import JobRequest
from campaign.config.clusters import cluster_from_yaml
from campaign.config.schema import ClusterSpec
from campaign.errors import BadInputError
from campaign.ledger import JobAttempt, Ledger, PreflightStep
from campaign.ledger import queries as q
from campaign.plan import RunSpec
from campaign.states import JobState
from campaign.sync import SyncReport, sync


@dataclass
class _Batch:
    """The new attempts of one campaign, submitted together."""

    cluster: ClusterSpec
    workdir: str
    python: str
    campaign_id: int
    requests: list[JobRequest] = field(default_factory=list)
    previous: dict[int, str | None] = field(default_factory=dict)  # new attempt id -> previous job id


def _chained(ledger: Ledger, campaign_id: int) -> str | None:
    """The kernel folder of the campaign's last chain; None when it was submitted without one."""
    with ledger.session() as s:
        return s.scalar(select(PreflightStep.kernel_bin).where(PreflightStep.campaign_id == campaign_id)
                        .order_by(PreflightStep.id.desc()))


@dataclass
class RerunReport:
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (new job id, previous job id)
    sync: SyncReport | None = None


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
    progress: Progress | None = None,
    preflight: bool = True,
) -> RerunReport:
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
                batches[camp.name] = _Batch(cluster_from_yaml(camp.cluster_yaml), camp.workdir, camp.python, camp.id)
            batch = batches[camp.name]
            spec = RunSpec.from_json(run.spec)
            part = batch.cluster.partitions[spec.partition]
            walltime, mem = _scaled(att, spec, part.max_walltime_min, part.mem_gb,
                                    part.memory_gb / max(1, part.cores), time_factor, mem_factor)
            aid, _, workdir = new_attempt(s, run.id, spec, Path(camp.workdir), att, None, walltime, mem)
            batch.requests.append(job_request(batch.cluster, camp.name, spec, aid, Path(workdir), walltime, mem))
            batch.previous[aid] = att.job_id
    for name, batch in batches.items():
        backend = get_backend(batch.cluster, Path(batch.workdir), batch.python)
        reqs = batch.requests
        kernel_bin = _chained(ledger, batch.campaign_id) if preflight else None
        if kernel_bin is not None:  # submitted with its chain: rerun resubmits the chain (issue 19)
            chains = chain.plan_chains(batch.cluster, backend.name, name, Path(batch.workdir), kernel_bin, reqs)
            reqs = chain.gate(ledger, backend, batch.cluster.name, batch.campaign_id, kernel_bin, chains)
        sent = submit_requests(ledger, backend, reqs, progress)
        new_ids = {sub.attempt_id: sub.job_id for sub in sent}
        for aid, old in batch.previous.items():
            report.submitted.append((new_ids.get(aid) or "?", old or "?"))
        if batch.cluster.backend == "local":
            report.sync = sync(ledger, name)
    return report
