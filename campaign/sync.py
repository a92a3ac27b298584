"""`campaign status`: scheduler states → ledger, finished jobs' output ingested.

One backend query per backend covers every unfinished job (the Slurm backend
batches them into few sacct calls); files are read and the scheduler asked
outside any transaction, and the ledger is then updated in one short one with
bulk statements (a 10,000-job campaign must sync in seconds, not minutes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from campaign.backends import get_backend
from campaign.backends.base import JobRef, JobStatus
from campaign.clock import as_naive_local
from campaign.config.clusters import cluster_from_yaml
from campaign.job.files import EXIT_FILE, read_json
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.ledger import queries as q
from campaign.preflight_sync import sync_steps
from campaign.results.reader import Outcome, classify_output
from campaign.results.store import job_rows
from campaign.states import OPEN_STATES, JobState


@dataclass
class SyncReport:
    campaign: str | None
    counts: dict[str, int] = field(default_factory=dict)  # latest attempt per run, by state
    changed: int = 0
    ingested_rows: int = 0
    warnings: list[str] = field(default_factory=list)
    preflight: list[str] = field(default_factory=list)  # failed build/preflight chains, with log tails


@dataclass
class _Pending:
    """An unfinished attempt with what is needed to sync it, read in one query."""

    attempt_id: int
    ref: JobRef
    expected_n: tuple[int, ...]
    check: bool
    output: Path
    backend: str
    cluster_yaml: str
    camp_workdir: str
    cluster: str
    partition: str
    extra_args: tuple[tuple[str, str], ...]
    state: JobState


def _collect(s: Session, campaign: str | None) -> tuple[int | None, list[_Pending]]:
    camp_id = q.require_campaign(s, campaign).id if campaign else None
    stmt = (
        select(JobAttempt.id, JobAttempt.job_id, JobAttempt.workdir, JobAttempt.submitted_at,
               JobAttempt.walltime_min, JobAttempt.output_path, JobAttempt.state, Run.spec, Run.partition,
               Campaign.backend, Campaign.cluster_yaml, Campaign.workdir, Campaign.cluster)
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(JobAttempt.job_id.is_not(None), JobAttempt.state.in_(OPEN_STATES))
        .order_by(JobAttempt.id)
    )
    if camp_id is not None:
        stmt = stmt.where(Run.campaign_id == camp_id)
    out = []
    for (aid, job_id, workdir, submitted, walltime, output, state, spec, partition, backend, cyaml, cwork,
         cluster) in s.execute(stmt):
        extra_args = tuple((str(k), str(v)) for k, v in spec.get("extra_args") or [])
        out.append(_Pending(aid, JobRef(aid, job_id, workdir, submitted, walltime), tuple(spec["n"]),
                            bool(spec["check"]), Path(output), backend, cyaml, cwork, cluster, partition,
                            extra_args, state))
    return camp_id, out


def sync(ledger: Ledger, campaign: str | None = None) -> SyncReport:
    report = SyncReport(campaign)
    with ledger.session() as s:
        camp_id, pending = _collect(s, campaign)
    by_backend: dict[str, list[_Pending]] = defaultdict(list)
    for p in pending:
        by_backend[p.backend].append(p)
    statuses: dict[int, JobStatus] = {}
    for items in by_backend.values():
        backend = get_backend(cluster_from_yaml(items[0].cluster_yaml), Path(items[0].camp_workdir))
        result = backend.query([p.ref for p in items])
        statuses.update(result.statuses)
        report.warnings += result.warnings
    outcomes: dict[int, Outcome] = {}
    finished = {p.attempt_id: p for p in pending if p.attempt_id in statuses and statuses[p.attempt_id].state.finished}
    for aid, p in finished.items():
        st = statuses[aid]
        if st.state is JobState.COMPLETED:
            outcomes[aid] = classify_output(p.output, p.expected_n, p.check)
        exit_record = read_json(Path(p.ref.workdir) / EXIT_FILE)
        if exit_record and isinstance(exit_record.get("exit_code"), int):
            st.exit_code = exit_record["exit_code"]  # the kernel's own code, not srun's
    if statuses:
        with ledger.session.begin() as s:
            report.changed, report.ingested_rows = _apply(s, pending, statuses, outcomes)
    report.preflight = sync_steps(ledger, camp_id)
    with ledger.session() as s:
        report.counts = dict(Counter(a.state.value for a in q.latest_attempts(s, camp_id)))
    return report


def _apply(s: Session, pending: list[_Pending], statuses: dict[int, JobStatus],
           outcomes: dict[int, Outcome]) -> tuple[int, int]:
    ids = [p.attempt_id for p in pending if p.attempt_id in statuses]
    # Re-read inside the write transaction: another terminal may have
    # cancelled some of these jobs since we looked.
    current: dict[int, dict[str, Any]] = {}
    cols = (JobAttempt.id, JobAttempt.state, JobAttempt.reason, JobAttempt.exit_code, JobAttempt.node,
            JobAttempt.started_at, JobAttempt.ended_at)
    for i in range(0, len(ids), 10_000):
        stmt = select(*cols).where(JobAttempt.id.in_(ids[i:i + 10_000]), JobAttempt.state.in_(OPEN_STATES))
        for row in s.execute(stmt):
            current[row.id] = dict(row._mapping)
    updates: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    changed = 0
    for p in pending:
        st = statuses.get(p.attempt_id)
        if st is None or p.attempt_id not in current:
            continue
        state, reason = st.state, st.reason
        outcome = outcomes.get(p.attempt_id)
        if outcome is not None:
            state, reason = outcome.state, outcome.reason
            rows += job_rows(p.attempt_id, p.ref.job_id, p.cluster, p.partition, p.extra_args, outcome.rows)
        values: dict[str, Any] = {"id": p.attempt_id, "state": state, "reason": reason}
        for key, value in (("exit_code", st.exit_code), ("node", st.node), ("started_at", as_naive_local(st.started_at)),
                           ("ended_at", as_naive_local(st.ended_at))):
            if value is not None:
                values[key] = value
        old = current[p.attempt_id]
        if all(old.get(k) == v for k, v in values.items()):
            continue  # nothing new: write nothing (the ledger file stays byte-identical)
        changed += state is not old["state"]
        updates.append(values)
    # Bulk UPDATE by primary key, grouped by the set of columns each row sets.
    by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for values in updates:
        by_keys[tuple(sorted(values))].append(values)
    for group in by_keys.values():
        s.execute(update(JobAttempt), group)
    if rows:
        s.execute(insert(ResultRow), rows)
    return changed, len(rows)
