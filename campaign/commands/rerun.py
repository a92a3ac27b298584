"""`campaign rerun`: failed runs again, as new attempts linked to the old ones.

A TIMEOUT/CANCELLED/OUT_OF_MEMORY/FAILED attempt whose finished n were ingested
(campaign.results.partial) is rerun for its missing n only; the others run
their own n (the run's, or the n a rerun of the missing n was given).
`--time-factor` and `--mem-factor` apply to every attempt rerun, whatever
its failure, within the partition's limits, and the output says what changed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from campaign.backends import get_backend
from campaign.backends.base import JobRequest
from campaign.backends.capabilities import capabilities
from campaign.commands import chain
from campaign.commands.attempts import (
    Progress,
    job_request,
    new_attempt,
    orphaned,
    recover_orphans,
    refused,
    reopen_unsubmitted,
    submit_requests,
)
from campaign.commands.chain_gate import gate
from campaign.commands.claims import claimed, notice
from campaign.commands.rerun_program import without_changed_programs
from campaign.commands.rerun_superseded import without_superseded
from campaign.commands.sync import SyncReport, sync
from campaign.commands.waiting import failed_among
from campaign.config.clusters import cluster_from_yaml
from campaign.config.numbers import MEMORY_MAX_GB, WALLTIME_MAX_MIN
from campaign.config.schema import ClusterSpec, PartitionSpec
from campaign.ledger import Campaign, JobAttempt, Ledger, PreflightStep
from campaign.ledger import queries as q
from campaign.planning.resources import mem_from_site_gb, mem_site_gb, share_memory, usable_memory
from campaign.planning.run_spec import RunSpec
from campaign.plumbing import storage
from campaign.plumbing.clock import now
from campaign.plumbing.errors import BadInputError, CampaignError
from campaign.plumbing.states import FAILED_STATES, PARTIAL_STATES, JobState


@dataclass
class _Batch:
    """The new attempts of one campaign, submitted together."""

    cluster: ClusterSpec
    workdir: str
    python: str
    campaign_id: int
    requests: list[JobRequest] = field(default_factory=list)
    previous: dict[int, str | None] = field(default_factory=dict)  # new attempt id -> previous job id
    resumed: set[int] = field(default_factory=set)  # attempts a killed submit/rerun left unconfirmed
    changed: dict[int, str] = field(default_factory=dict)  # new attempt id -> what --time/--mem-factor changed


def _chained(ledger: Ledger, campaign_id: int) -> str | None:
    """The kernel folder of the campaign's last chain; None when it was submitted without one."""
    with ledger.session() as s:
        return s.scalar(
            select(PreflightStep.kernel_bin)
            .where(PreflightStep.campaign_id == campaign_id)
            .order_by(PreflightStep.id.desc())
        )


@dataclass
class RerunReport:
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (new job id, previous job id)
    changed: list[str] = field(default_factory=list)  # per submitted entry: what changed ("" for nothing)
    sync: SyncReport | None = None
    failed: list[tuple[str, str]] = field(default_factory=list)  # waited-for jobs that ended failed again
    not_taken: dict[str, int] = field(default_factory=dict)  # failed-looking states left alone (CANCELLED: 3)
    changed_program: str | None = None  # why runs whose program changed since submit were left alone
    superseded: str | None = None  # how many runs a later submit superseded were left alone
    attempts: list[int] = field(default_factory=list)  # the new attempts (what `rerun --wait` waits for)
    campaigns: list[str] = field(default_factory=list)  # the campaigns they are of


def _select(
    s: Session, campaign: str | None, job_id: str | None, states: set[JobState], before: tuple[int, datetime]
) -> list[JobAttempt]:
    """Finished attempts to rerun, as the ledger was when this rerun started
    (`before`: the newest attempt id then): a rerun that waited for another one
    of the same campaign does not rerun that one's new attempts again."""
    if job_id is not None:
        att = q.attempts_by_job_id(s, job_id)[-1]
        latest = q.lineage(s, att)[-1]
        if not _before(latest, before):
            return []  # rerun meanwhile by another command
        if orphaned(latest):
            return []  # a killed command's unconfirmed attempt: resubmitted by the recovery
        if not latest.state.finished:
            raise BadInputError(f"job {latest.job_id} is still {latest.state.value}; cancel it first")
        return [latest]
    camp_id = q.require_campaign(s, campaign).id if campaign else None
    return [a for a in q.latest_attempts(s, camp_id) if a.state in states and _before(a, before)]


def _before(att: JobAttempt, before: tuple[int, datetime]) -> bool:
    """Recorded and ended before this rerun started (a rerun that waited for
    another one must not rerun the other's fresh failures)."""
    last_id, started = before
    return att.id <= last_id and (att.ended_at is None or att.ended_at <= started)


def _scaled(
    att: JobAttempt, spec: RunSpec, part: PartitionSpec, time_factor: float, mem_factor: float
) -> tuple[int, float | None, str]:
    """The new attempt's walltime and memory: the factors the user asked for,
    whatever the failure (a job that ran out of memory may also have been
    slow, and the user said so), never past what the partition allows; and
    one line saying what changed (or that nothing did: the user asks why
    the same job should pass this time). A product past the bound submit
    holds an experiment to (docs/design.md#experiment-numbers) is refused,
    not capped: no partition allows it, so the factor is a typo."""
    walltime, mem = att.walltime_min, att.mem_gb
    said: list[str] = []
    if time_factor != 1.0:
        _within_bound("--time-factor", time_factor, att, f"{walltime} min", walltime, WALLTIME_MAX_MIN, "min")
        wanted = max(walltime + 1, math.ceil(walltime * time_factor))  # whole minutes, up
        walltime = min(part.max_walltime_min, wanted)
        capped = f" (partition {part.name}'s maximum)" if walltime < wanted else ""
        said.append(f"walltime {att.walltime_min} -> {walltime} min{capped}")
    if mem_factor != 1.0:
        base = mem if mem is not None else _site_share(part, spec)
        _within_bound("--mem-factor", mem_factor, att, f"{base * 1024:.0f} MiB", mem_site_gb(base), MEMORY_MAX_GB, "GB")
        wanted_mem = round(base * mem_factor, 3)
        mem = min(wanted_mem, usable_memory(part))  # never above what a node lets a job ask
        before = f"{base * 1024:.0f} MiB" + ("" if att.mem_gb is not None else " (the site's share)")
        capped = f" (what partition {part.name} lets a job ask)" if mem < wanted_mem else ""
        said.append(f"memory {before} -> {mem * 1024:.0f} MiB{capped}")
    if not said:
        kept = f"{mem * 1024:.0f} MiB" if mem is not None else "the site's share"
        said.append(f"unchanged: walltime {walltime} min, memory {kept}")
    return walltime, mem, "; ".join(said)


def _within_bound(
    option: str, factor: float, att: JobAttempt, said: str, value: float, bound: float, unit: str
) -> None:
    """Refuse a factor whose product with the attempt's `value` (in `unit`; `said` as the rerun line
    says it) is past `bound`."""
    if value * factor > bound:
        raise BadInputError(
            f"{option} {factor:g}: job {att.job_id or att.id}'s {said} x {factor:g} is past the "
            f"{bound:,.0f} {unit} any job may ask (docs/design.md#experiment-numbers); "
            f"use a factor of at most {math.floor(bound / value):,}"
        )


def _site_share(part: PartitionSpec, spec: RunSpec) -> float:
    """The memory a run got without asking (GiB): the partition's rule for its
    cores or GPU, else its fixed mem_gb, else the node's memory per core
    (per node: a multi-rank run's node holds ranks_per_node ranks)."""
    cores = spec.alloc_cpus * spec.ranks_per_node
    share = share_memory(part, cores, spec.gpus)
    if share is not None:
        return share
    if part.mem_gb is not None:
        return part.mem_gb
    return mem_from_site_gb(part.memory_gb / max(1, part.cores) * max(1, cores))


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
    all_campaigns: bool = False,
    preflight: bool = True,
) -> RerunReport:
    for option, factor in (("--time-factor", time_factor), ("--mem-factor", mem_factor)):
        if not (math.isfinite(factor) and factor >= 1.0):
            raise BadInputError(f"{option} {factor:g}: must be a finite number >= 1 (1 keeps the old value)")
    wanted = {JobState(s.upper()) for s in states} if states else set()
    if failed:  # CANCELLED was stopped on purpose: rerun it only when asked (--state CANCELLED)
        wanted |= set(FAILED_STATES)
    if job_id is None and not wanted:
        raise BadInputError("say what to rerun: --failed, --state STATE or --job JOB_ID")
    if campaign is not None and not campaign.strip():  # not "every campaign": that is --all
        raise BadInputError("name the campaign to rerun: got an empty name")
    if job_id is None and campaign is None and not all_campaigns:
        raise BadInputError(
            "name the campaign to rerun (campaign rerun CAMPAIGN ...), or pass --all for every campaign in the ledger"
        )
    report = RerunReport()
    started = now()  # aware UTC, as the ledger stores ended_at (campaign.ledger.types)
    with ledger.session() as s:
        camp_ids = _campaign_ids(s, campaign, job_id, wanted)
        before = (s.scalar(select(func.max(JobAttempt.id))) or 0, started)
        if (time_factor, mem_factor) != (1.0, 1.0):  # a factor past its bound: refused before any claim is taken
            _scale_all(_select(s, campaign, job_id, wanted, before), time_factor, mem_factor)
    # Serialised with submits and other reruns of the same campaigns (campaign.commands.claims).
    with claimed(ledger, camp_ids, "rerun", notice):
        _rerun_claimed(
            ledger, report, camp_ids, campaign, job_id, wanted, time_factor, mem_factor, progress, before, preflight
        )
    if job_id is None:
        report.not_taken = _not_taken(ledger, camp_ids, wanted)
    return report


def _scale_all(atts: list[JobAttempt], time_factor: float, mem_factor: float) -> None:
    """Scale every attempt as the rerun will (`_scaled`), for its refusals only."""
    clusters: dict[int, ClusterSpec] = {}
    for att in atts:
        camp = att.run.campaign
        cluster = clusters.setdefault(camp.id, cluster_from_yaml(camp.cluster_yaml))
        spec = RunSpec.from_json(att.run.spec)
        _scaled(att, spec, cluster.partitions[spec.partition], time_factor, mem_factor)


def _not_taken(ledger: Ledger, camp_ids: list[int], wanted: set[JobState]) -> dict[str, int]:
    """Runs whose newest attempt ended without a usable result in a state this
    rerun did not ask for (CANCELLED under --failed): the CLI names them, so
    "0 run(s) resubmitted" is not a mystery."""
    out: dict[str, int] = {}
    with ledger.session() as s:
        for camp_id in camp_ids:  # plain columns: a 100,000-run campaign loads no ORM objects here
            for (st,) in q.attempt_columns(s, (JobAttempt.state,), camp_id, latest=True):
                if st.rerunnable and not st.usable and st not in wanted:
                    out[st.value] = out.get(st.value, 0) + 1
    return dict(sorted(out.items()))


def _campaign_ids(s: Session, campaign: str | None, job_id: str | None, wanted: set[JobState]) -> list[int]:
    """The campaigns whose claims this rerun takes: without a campaign named,
    only those with something to rerun or recover (an unrelated long submit
    elsewhere in the ledger must not hold `rerun --failed` up)."""
    if job_id is not None:
        return [q.attempts_by_job_id(s, job_id)[-1].run.campaign_id]
    if campaign:
        return [q.require_campaign(s, campaign).id]
    return sorted(
        {
            a.run.campaign_id
            for a in q.latest_attempts(s)
            if a.state in wanted or (a.job_id is None and (not a.state.finished or a.state is JobState.NOT_SUBMITTED))
        }
    )


def _batch(batches: dict[str, _Batch], camp: Campaign) -> _Batch:
    if camp.name not in batches:
        batches[camp.name] = _Batch(cluster_from_yaml(camp.cluster_yaml), camp.workdir, camp.python, camp.id)
    return batches[camp.name]


def _only_n(att: JobAttempt) -> tuple[int, ...] | None:
    """The n a rerun of `att` runs (None: the run's whole sweep). A rerun of the
    missing n that failed before finishing one of them ingests nothing and
    records no missing n: its own n are still the missing ones, and the n an
    earlier attempt measured must not be measured again (their rows would
    count twice in every median)."""
    if att.state in PARTIAL_STATES and att.missing_n:
        return tuple(att.missing_n)
    return tuple(att.n) if att.n else None


def _rerun_claimed(
    ledger: Ledger,
    report: RerunReport,
    camp_ids: list[int],
    campaign: str | None,
    job_id: str | None,
    wanted: set[JobState],
    time_factor: float,
    mem_factor: float,
    progress: Progress | None,
    before: tuple[int, datetime],
    preflight: bool = True,
) -> None:
    batches: dict[str, _Batch] = {}
    with ledger.session.begin() as s:
        # Crash recovery first: attempts a killed submit or rerun recorded but
        # never confirmed are sent again (after a look in the scheduler), so
        # none stays "(not submitted)".
        for att in q.latest_attempts(s):
            if att.run.campaign_id in camp_ids and orphaned(att):
                reopen_unsubmitted(att)
                batch = _batch(batches, att.run.campaign)
                spec = RunSpec.from_json(att.run.spec)
                batch.requests.append(
                    job_request(
                        batch.cluster,
                        att.run.campaign.name,
                        spec,
                        att.id,
                        Path(att.workdir),
                        att.walltime_min,
                        att.mem_gb,
                        tuple(att.n) if att.n else None,
                    )
                )
                batch.resumed.add(att.id)
                batch.changed[att.id] = "sent as recorded (a killed submit or rerun left it unconfirmed)"
                previous = s.get(JobAttempt, att.previous_id) if att.previous_id else None
                batch.previous[att.id] = previous.job_id if previous else None
        # a run whose user program changed since submit is left out, said why (all of them: refused before
        # anything is recorded): a rerun never runs another program under the old run's identity
        selected = _select(s, campaign, job_id, wanted, before)
        if job_id is None:  # by state: a later submit's runs are what the views read, not these
            selected, report.superseded = without_superseded(s, selected)
        selected, report.changed_program = without_changed_programs(selected)
        for att in selected:
            run = att.run
            camp = run.campaign
            batch = _batch(batches, camp)
            spec = RunSpec.from_json(run.spec)
            part = batch.cluster.partitions[spec.partition]
            walltime, mem, changed = _scaled(att, spec, part, time_factor, mem_factor)
            only = _only_n(att)
            aid, _, workdir = new_attempt(s, run.id, spec, Path(camp.workdir), att, None, walltime, mem, only)
            batch.requests.append(job_request(batch.cluster, camp.name, spec, aid, Path(workdir), walltime, mem, only))
            batch.previous[aid] = att.job_id
            if only:
                changed += f"; only the missing n {', '.join(str(n) for n in only)}"
            batch.changed[aid] = changed
    for name, batch in batches.items():
        backend = get_backend(batch.cluster, Path(batch.workdir), batch.python)
        asked = [r.attempt_id for r in batch.requests]  # a run its failed build/preflight kept back counts too
        try:
            with storage.writing(batch.workdir):  # job folders, scripts: a full disk names the campaign's folder
                reqs, found = recover_orphans(ledger, backend, batch.requests, batch.resumed)
                kernel_bin = _chained(ledger, batch.campaign_id) if preflight else None
                if kernel_bin is not None and reqs:  # submitted with its chain: rerun resubmits the chain
                    chains = chain.plan_chains(batch.cluster, backend.name, name, Path(batch.workdir), kernel_bin, reqs)
                    reqs = gate(ledger, backend, batch.cluster.name, batch.campaign_id, kernel_bin, chains)
                sent = [*found, *submit_requests(ledger, backend, reqs, progress)]
        except CampaignError as exc:  # sbatch refused: the ledger says so (attempts.refused)
            raise refused(ledger, asked, exc) from None
        new_ids = {sub.attempt_id: sub.job_id for sub in sent}
        report.attempts += asked
        report.campaigns.append(name)
        for aid, old in batch.previous.items():
            report.submitted.append((new_ids.get(aid) or "?", old or "?"))
            report.changed.append(batch.changed.get(aid, ""))
        if capabilities(batch.cluster.backend).local:
            report.sync = sync(ledger, name)
            report.failed += failed_among(ledger, asked)
