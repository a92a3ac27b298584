"""`campaign status`: scheduler states → ledger, finished jobs' output ingested.

One backend query per backend covers every unfinished job (the Slurm backend
batches them into few sacct calls); files are read and the scheduler asked
outside any transaction, and the ledger is then updated in one short one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from campaign.backends.base import JobRef, JobStatus, get_backend
from campaign.ingest import Outcome, classify_output
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.ledger import queries as q
from campaign.states import JobState


@dataclass
class SyncReport:
    campaign: str | None
    counts: dict[str, int] = field(default_factory=dict)  # latest attempt per run, by state
    changed: int = 0
    ingested_rows: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    attempt_id: int
    ref: JobRef
    expected_n: tuple[int, ...]
    check: bool
    output: Path
    backend: str
    cluster_yaml: str
    camp_workdir: str


def _collect(s: Session, campaign: str | None) -> tuple[int | None, list[_Pending]]:
    camp_id = q.require_campaign(s, campaign).id if campaign else None
    out = []
    for att in q.unfinished(s, camp_id):
        run: Run = att.run
        camp: Campaign = run.campaign
        spec = run.spec
        out.append(_Pending(
            att.id, JobRef(att.id, att.job_id or "", att.workdir, att.submitted_at, att.walltime_min),
            tuple(spec["n"]), bool(spec["check"]), Path(att.output_path), camp.backend,
            camp.cluster_yaml, camp.workdir,
        ))
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
    for p in pending:
        st = statuses.get(p.attempt_id)
        if st is not None and st.state is JobState.COMPLETED:
            outcomes[p.attempt_id] = classify_output(p.output, p.expected_n, p.check)
    with ledger.session.begin() as s:
        report.changed, report.ingested_rows = _apply(s, statuses, outcomes)
    with ledger.session() as s:
        report.counts = dict(Counter(a.state.value for a in q.latest_attempts(s, camp_id)))
    return report


def _apply(s: Session, statuses: dict[int, JobStatus], outcomes: dict[int, Outcome]) -> tuple[int, int]:
    changed = 0
    rows: list[dict[str, Any]] = []
    for attempt_id, st in statuses.items():
        att = s.get(JobAttempt, attempt_id)
        if att is None or att.state.finished:
            continue  # finished meanwhile (e.g. cancelled from another terminal)
        state, reason = st.state, st.reason
        outcome = outcomes.get(attempt_id)
        if outcome is not None:
            state, reason = outcome.state, outcome.reason
            rows += _result_rows(att, outcome)
        if state is not att.state:
            changed += 1
        att.state, att.reason = state, reason
        att.exit_code = st.exit_code if st.exit_code is not None else att.exit_code
        att.node = st.node or att.node
        att.started_at = st.started_at or att.started_at
        att.ended_at = st.ended_at or att.ended_at
    if rows:
        s.execute(insert(ResultRow), rows)
    return changed, len(rows)


def _result_rows(att: JobAttempt, outcome: Outcome) -> list[dict[str, Any]]:
    run: Run = att.run
    params = ",".join(f"{k}={v}" for k, v in run.spec.get("extra_args") or [])
    out = []
    for r in outcome.rows:
        extra = dict(r.get("extra") or {})
        if params:
            extra["params"] = params
        out.append({
            "attempt_id": att.id, "source": "job", "cluster": run.campaign.cluster,
            "partition": run.partition, "kernel": r["kernel"], "impl": r["impl"],
            "variant": r["variant"], "device": r["device"], "dtype": r.get("dtype"),
            "threads": r["threads"], "n": r["n"], "d": r.get("d"), "repeat": r["repeat"],
            "time_s": r["time_s"], "job_id": att.job_id, "gpu_model": r.get("gpu_model"),
            "flops": r.get("flops"), "bytes": r.get("bytes"), "rel_err": r.get("rel_err"),
            "extra": extra or None,
        })
    return out
