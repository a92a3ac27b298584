"""`campaign status`: scheduler states → ledger, finished jobs' output ingested.

One backend query per backend covers every unfinished job (the Slurm backend
batches them into few sacct calls); files are read and the scheduler asked
outside any transaction, and the ledger is then updated in one short one with
bulk statements (a 10,000-job campaign must sync in seconds, not minutes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from campaign.backends.base import JobRef, JobStatus, get_backend
from campaign.ingest import Outcome, classify_output
from campaign.jobrun import EXIT_FILE, read_json
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.ledger import queries as q
from campaign.states import JobState

_OPEN = (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)


@dataclass
class SyncReport:
    campaign: str | None
    counts: dict[str, int] = field(default_factory=dict)  # latest attempt per run, by state
    changed: int = 0
    ingested_rows: int = 0
    warnings: list[str] = field(default_factory=list)


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
        .where(JobAttempt.job_id.is_not(None), JobAttempt.state.in_(_OPEN))
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
    from campaign.api import cluster_from_yaml

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
        stmt = select(*cols).where(JobAttempt.id.in_(ids[i:i + 10_000]), JobAttempt.state.in_(_OPEN))
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
            rows += _result_rows(p, outcome)
        values: dict[str, Any] = {"id": p.attempt_id, "state": state, "reason": reason}
        for key, value in (("exit_code", st.exit_code), ("node", st.node), ("started_at", _naive(st.started_at)),
                           ("ended_at", _naive(st.ended_at))):
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


def _params(extra_args: tuple[tuple[str, str], ...], row: dict[str, Any]) -> str:
    """A configuration's extra arguments, as this row ran them: an argument
    given as a list (one process sweeping it, e.g. `--a 20,32,40`) takes the
    row's own value from its column of that name."""
    parts = []
    for key, value in extra_args:
        column = key.replace("-", "_")
        own = row.get(key, row.get(column))
        parts.append(f"{key}={own if own not in (None, '') else value}")
    return ",".join(parts)


def _naive(t: datetime | None) -> datetime | None:
    """Times are stored as naive local time, as Slurm prints them."""
    return t.astimezone().replace(tzinfo=None) if t is not None and t.tzinfo is not None else t


def _result_rows(p: _Pending, outcome: Outcome) -> list[dict[str, Any]]:
    out = []
    for r in outcome.rows:
        extra = dict(r.get("extra") or {})
        params = _params(p.extra_args, extra)
        if params:
            extra["params"] = params
        out.append({
            "attempt_id": p.attempt_id, "source": "job", "cluster": p.cluster,
            "partition": p.partition, "kernel": r["kernel"], "impl": r["impl"],
            "variant": r["variant"], "device": r["device"], "dtype": r.get("dtype"),
            "threads": r["threads"], "n": r["n"], "d": r.get("d"), "repeat": r["repeat"],
            "time_s": r["time_s"], "job_id": p.ref.job_id, "gpu_model": r.get("gpu_model"),
            "flops": r.get("flops"), "bytes": r.get("bytes"), "rel_err": r.get("rel_err"),
            "extra": extra or None,
        })
    return out
