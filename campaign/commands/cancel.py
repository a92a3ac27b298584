"""`campaign cancel`: stop a campaign's unfinished jobs, or one job.

Each job's folder first gets `cancel.json` (a job that has not started yet
will not start its kernel), then the backend stops the jobs and returns only
once they stopped (local: the kernel's whole process group); only then are the
attempts marked CANCELLED. A job that could not be stopped keeps its state.

A campaign's build and preflight jobs (campaign.commands.chain) are its jobs too:
left alone they would run to COMPLETED and be charged with nothing behind
them, so cancelling the campaign cancels them as well (marked CANCELLED with
USER_CANCELLED as the reason, which `status` does not take for a failed
chain). A step's own job ID may also be cancelled by itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.backends import get_backend
from campaign.backends.base import JobRef
from campaign.commands.chain_sync import USER_CANCELLED
from campaign.config.clusters import cluster_from_yaml
from campaign.job.files import CANCEL_FILE
from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep
from campaign.ledger import queries as q
from campaign.plumbing.clock import now
from campaign.plumbing.errors import BadInputError, did_you_mean
from campaign.plumbing.states import JobState
from campaign.results.expected import Expected
from campaign.results.partial import complete_despite_stop, describe, read_partial
from campaign.results.store import AttemptRows, job_columns, store_attempt_files


def _leave_marker(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / CANCEL_FILE).write_text(json.dumps({"cancelled": now().isoformat()}) + "\n")


def _attempts_of(s: Any, target: str) -> list[JobAttempt]:
    """The attempts of job ID `target`; neither a campaign nor a job ID: one
    line that says both were looked for, with close campaign names."""
    try:
        return q.attempts_by_job_id(s, target)
    except BadInputError:
        names = list(s.scalars(select(Campaign.name)))
        raise BadInputError(f"no campaign or job ID named {target!r}{did_you_mean(target, names)} "
                            f"(`campaign status` lists campaigns, `campaign jobs` job IDs)") from None


@dataclass
class _Step:
    table: type[BuildStep] | type[PreflightStep]
    row_id: int
    ref: JobRef
    owner: tuple[str, str]  # its campaign's cluster YAML and job folder: the backend that cancels it


def _open_steps(s: Session, camp_id: int | None, job_id: str | None) -> list[_Step]:
    """The unfinished build/preflight jobs of a campaign, or the one with this job ID."""
    stmt = select(PreflightStep, Campaign).join(Campaign, Campaign.id == PreflightStep.campaign_id)
    stmt = stmt.where(PreflightStep.campaign_id == camp_id) if camp_id is not None else stmt
    if job_id is not None:
        builds = select(BuildStep.id).where(BuildStep.job_id == job_id)
        stmt = stmt.where((PreflightStep.job_id == job_id) | PreflightStep.build_id.in_(builds))
    found: list[_Step] = []
    seen: set[tuple[str, int]] = set()
    for step, owner in s.execute(stmt):
        build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
        for row in (step, build):
            if row is None or row.state.finished or not row.job_id or (job_id is not None and row.job_id != job_id):
                continue
            if (row.__tablename__, row.id) in seen:
                continue
            seen.add((row.__tablename__, row.id))
            spec = cluster_from_yaml(owner.cluster_yaml)
            part = spec.partitions.get(step.partition)
            where = (part.clusters if part is not None else None) or spec.clusters or None
            ref = JobRef(-1 - len(found), row.job_id, row.folder, None, 60, where)
            found.append(_Step(type(row), row.id, ref, (owner.cluster_yaml, owner.workdir)))
    return found


def _step_row(s: Session, st: _Step) -> BuildStep | PreflightStep:
    return s.get_one(BuildStep, st.row_id) if st.table is BuildStep else s.get_one(PreflightStep, st.row_id)


def _is_step(s: Session, job_id: str) -> bool:
    return any(s.scalar(select(t.id).where(t.job_id == job_id).limit(1)) is not None
               for t in (BuildStep, PreflightStep))


def cancel(ledger: Ledger, target: str) -> list[str]:
    """Cancel a campaign's unfinished jobs (its build and preflight jobs
    included), or one job; returns the job IDs."""
    with ledger.session() as s:
        camp = q.campaign_by_name(s, target)
        if camp is not None:
            atts = [a for a in q.latest_attempts(s, camp.id) if not a.state.finished]
            steps = _open_steps(s, camp.id, None)
        else:
            steps = _open_steps(s, None, target)
            try:
                atts = [a for a in _attempts_of(s, target) if not a.state.finished]
            except BadInputError:  # not a run's job: a build or preflight job's, or unknown
                if not steps and not _is_step(s, target):
                    raise
                atts = []
            if not atts and not steps:
                raise BadInputError(f"job {target} has already finished; nothing to cancel")
        groups: dict[str, tuple[str, str, list[JobRef]]] = {}
        info: dict[int, tuple[str, Expected]] = {}
        for a in atts:
            spec = a.run.spec
            info[a.id] = (a.output_path, Expected.of_spec(spec, tuple(a.n or spec["n"])))
            c = a.run.campaign
            groups.setdefault(c.name, (c.cluster_yaml, c.workdir, []))[2].append(
                JobRef(a.id, a.job_id or "", a.workdir, a.submitted_at, a.walltime_min, a.scheduler_cluster))
    for _, _, refs in groups.values():
        for ref in refs:  # before any signal: a job not yet started must not start
            _leave_marker(Path(ref.workdir))
    by_owner: dict[tuple[str, str], list[JobRef]] = {}
    with ledger.session.begin() as s:  # the intent first: a cancel killed after scancel is not a failed chain
        for st in steps:
            by_owner.setdefault(st.owner, []).append(st.ref)
            _step_row(s, st).reason = USER_CANCELLED
    for (cyaml, workdir), step_refs in by_owner.items():  # first: the arrays wait behind them
        get_backend(cluster_from_yaml(cyaml), Path(workdir)).cancel(step_refs)
    for cyaml, workdir, refs in groups.values():
        live = [r for r in refs if r.job_id]
        if live:
            get_backend(cluster_from_yaml(cyaml), Path(workdir)).cancel(live)
    partials = {aid: read_partial(Path(out), want) for aid, (out, want) in info.items()}
    done = {aid: complete_despite_stop(Path(out), want, JobState.CANCELLED) for aid, (out, want) in info.items()}
    cancelled = []
    with ledger.session.begin() as s:
        for _, _, refs in groups.values():
            for ref in refs:
                att = s.get(JobAttempt, ref.attempt_id)
                if att is not None and not att.state.finished:
                    outcome, missing = partials[att.id]
                    att.state, att.ended_at = JobState.CANCELLED, now()
                    want = info[att.id][1]
                    note = f"{outcome.reason}; " if outcome is not None and outcome.reason else ""
                    att.reason = f"cancelled by campaign cancel; {note}{describe(want.n, missing)}"
                    att.missing_n = missing
                    if (complete := done[att.id]) is not None:  # its program had written every n
                        outcome, att.state, att.reason, att.missing_n = complete, JobState.COMPLETED, complete.reason, None
                    if outcome is not None and outcome.rows:
                        run = att.run
                        table = job_columns(att.id, att.job_id or "", run.campaign.cluster, run.partition,
                                            want.extra_args, outcome.table)
                        store_attempt_files(s,
                                            [AttemptRows(att.id, run.campaign_id, run.campaign.workdir, table)])
                    cancelled.append(att.job_id or f"(run {att.run.kernel}/{att.run.impl}/{att.run.variant} on "
                                                    f"{att.run.partition}, never submitted)")
        for st in steps:
            row = _step_row(s, st)
            if not row.state.finished:
                row.state, row.reason = JobState.CANCELLED, USER_CANCELLED
                cancelled.append(f"{row.job_id} ({'build' if st.table is BuildStep else 'preflight'})")
    return cancelled
