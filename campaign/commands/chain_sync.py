"""`campaign status` for the build and preflight jobs.

Their states come from the backend like the runs' states; a finished build's
`build.json` becomes the partition's build provenance in the ledger, a
finished preflight's `preflight.json` its result. The runs a failed build or
preflight gated (cancelled by Slurm before they started, through
`--kill-on-invalid-dep=yes`) become PREFLIGHT_FAILED, and the failure is
reported with the preflight's log tail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from campaign.backends import get_backend
from campaign.backends.base import JobRef, JobStatus
from campaign.config.clusters import cluster_from_yaml
from campaign.config.schema import ClusterSpec
from campaign.job.build import read_record
from campaign.job.files import read_json
from campaign.job.preflight import RECORD
from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep
from campaign.plumbing.states import OPEN_STATES, JobState

TAIL_LINES = 12
# The reason `campaign cancel` gives the build/preflight jobs it cancels: a chain stopped on
# purpose, not a failed one (its runs stay CANCELLED, never PREFLIGHT_FAILED).
USER_CANCELLED = "cancelled by campaign cancel"
# What a gated run may still show when its chain failed: Slurm cancelled it, or has not yet.
# (Never on a node: Slurm gives a cancelled pending job a start time, but no node.)
_GATED = (JobState.CANCELLED, *OPEN_STATES)


def _tail(path: str | None, lines: int = TAIL_LINES) -> list[str]:
    if not path:
        return []
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in text if line.strip()][-lines:]


def _spec(specs: dict[int, ClusterSpec], camp: Campaign) -> ClusterSpec:
    if camp.id not in specs:
        specs[camp.id] = cluster_from_yaml(camp.cluster_yaml)
    return specs[camp.id]


def _query(s: Session, camp_id: int | None, specs: dict[int, ClusterSpec]) -> dict[tuple[str, int], JobStatus]:
    """Scheduler statuses of the open steps of these campaigns, by (table, row id)."""
    pre = select(PreflightStep, Campaign).join(Campaign, Campaign.id == PreflightStep.campaign_id)
    if camp_id is not None:
        pre = pre.where(PreflightStep.campaign_id == camp_id)
    refs: dict[str, tuple[Any, list[tuple[tuple[str, int], JobRef]]]] = {}
    count = 0
    for step, camp in s.execute(pre):
        todo: list[tuple[tuple[str, int], Any]] = []
        if step.state in OPEN_STATES and step.job_id:
            todo.append((("preflight", step.id), step))
        if step.build_id is not None:
            build = s.get(BuildStep, step.build_id)
            if build is not None and build.state in OPEN_STATES and build.job_id:
                todo.append((("build", build.id), build))
        if not todo:  # finished: nothing to ask, so its stored cluster is not parsed (most of a `status`'s CPU)
            continue
        spec = _spec(specs, camp)
        part = spec.partitions.get(step.partition)
        where = (part.clusters if part is not None else None) or spec.clusters or None  # multi-cluster: -M
        entry = refs.setdefault(camp.backend, (camp, []))
        for ident, row in todo:
            count += 1  # JobRef wants an id: a running number, mapped back below
            entry[1].append((ident, JobRef(count, str(row.job_id), row.folder, None, 60, where)))
    states: dict[tuple[str, int], JobStatus] = {}
    for camp, items in refs.values():
        backend = get_backend(_spec(specs, camp), Path(camp.workdir))
        found = backend.query([ref for _, ref in items]).statuses
        for ident, ref in items:
            if ref.attempt_id in found:
                states[ident] = found[ref.attempt_id]
    return states


def sync_steps(ledger: Ledger, camp_id: int | None, specs: dict[int, ClusterSpec] | None = None) -> list[str]:
    """Update build/preflight states; gate the runs of failed chains. Returns
    one block of lines per partition whose chain failed (latest preflight).
    `specs`: campaign id -> its parsed cluster, as sync already parsed them
    (a campaign's stored YAML is parsed once per sync, not once per step)."""
    specs = {} if specs is None else specs
    with ledger.session() as s:
        states = _query(s, camp_id, specs)
    with ledger.session.begin() as s:
        for (table, row_id), status in states.items():
            row: Any = s.get(BuildStep if table == "build" else PreflightStep, row_id)
            state = status.state
            if row is not None and not state.finished:  # why it waits (Slurm's reason), for `status --watch`
                reason = status.reason if state is JobState.PENDING else None
                row.reason = reason[:500] if reason else None
            if row is None or row.state is state:
                continue
            row.state = state
            if table == "build" and state.finished:
                row.info = read_record(row.folder)
            elif state.finished:
                row.result = read_json(Path(row.folder) / RECORD)
        return _gate_failed(s, camp_id)


def _why(s: Session, step: PreflightStep) -> tuple[str, list[str]]:
    """The failure's one line and the log tail, without the tail lines that
    only repeat that line's problem (the preflight logs it twice)."""
    build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
    if build is not None and build.state.finished and build.state is not JobState.COMPLETED:
        info = build.info or {}
        return (
            f"build job {build.job_id} {build.state.value}",
            list(info.get("log_tail") or []) or _tail(build.stderr_path),
        )
    problems = [str(p) for p in (step.result or {}).get("problems") or []]
    if step.state is JobState.TIMEOUT:  # it asks minutes (campaign.commands.chain), not the runs' walltime
        problems.insert(0, "it ran past its walltime: raise cluster.preflight_walltime_min")
    tail = [line for line in _tail(step.stderr_path) if not (problems and problems[0] in line)]
    return (f"preflight job {step.job_id} {step.state.value}" + (f": {problems[0]}" if problems else ""), tail)


def _still_gated(s: Session, step: PreflightStep) -> bool:
    """Is any run this failed chain gated still in that state, its latest
    attempt PREFLIGHT_FAILED? Once every run was submitted again (a fixed
    config, --no-preflight, a rerun) the failure is history: `status` shows
    the current state only, `show` keeps the attempts' history."""
    ids = [int(i) for i in step.attempt_ids]
    for i in range(0, len(ids), 10_000):
        gated = select(JobAttempt.run_id).where(
            JobAttempt.id.in_(ids[i : i + 10_000]), JobAttempt.state == JobState.PREFLIGHT_FAILED
        )
        newest = (
            select(JobAttempt.run_id, func.max(JobAttempt.attempt).label("a"))
            .where(JobAttempt.run_id.in_(gated))
            .group_by(JobAttempt.run_id)
            .subquery()
        )
        hit = s.execute(
            select(JobAttempt.id)
            .join(newest, (JobAttempt.run_id == newest.c.run_id) & (JobAttempt.attempt == newest.c.a))
            .where(JobAttempt.state == JobState.PREFLIGHT_FAILED)
            .limit(1)
        ).first()
        if hit is not None:
            return True
    return False


def _failed(s: Session, step: PreflightStep) -> bool:
    """The chain failed: its preflight job, or the build a preflight not run left the runs behind."""
    if step.state.finished and step.state is not JobState.COMPLETED:
        return True
    build = s.get(BuildStep, step.build_id) if step.job_id is None and step.build_id is not None else None
    return build is not None and build.state.finished and build.state is not JobState.COMPLETED


def _cancelled(step: PreflightStep) -> bool:
    return step.state is JobState.CANCELLED and step.reason == USER_CANCELLED


def _gate_failed(s: Session, camp_id: int | None) -> list[str]:
    stmt = select(PreflightStep, Campaign.name).join(Campaign, Campaign.id == PreflightStep.campaign_id)
    if camp_id is not None:
        stmt = stmt.where(PreflightStep.campaign_id == camp_id)
    latest: dict[tuple[str, str], PreflightStep] = {}
    for step, name in s.execute(stmt.order_by(PreflightStep.id)):
        latest[(name, step.partition)] = step
        if not _failed(s, step):
            continue
        if _cancelled(step):  # stopped by the user: runs still open behind it were stopped with it
            new, gated = JobState.CANCELLED, OPEN_STATES
            why = f"{USER_CANCELLED} (the {step.partition} preflight job {step.job_id} gating it)"
        else:
            new, gated, (why, _) = JobState.PREFLIGHT_FAILED, _GATED, _why(s, step)
        ids = [int(i) for i in step.attempt_ids]
        for i in range(0, len(ids), 10_000):
            s.execute(
                update(JobAttempt)
                .where(JobAttempt.id.in_(ids[i : i + 10_000]), JobAttempt.state.in_(gated), JobAttempt.node.is_(None))
                .values(state=new, reason=why[:500])
            )
    lines = []
    for (name, partition), step in latest.items():
        if _failed(s, step) and not _cancelled(step) and _still_gated(s, step):
            why, tail = _why(s, step)
            lines.append(f"PREFLIGHT_FAILED {name} partition {partition}: {why}")
            lines += [f"    {line}" for line in tail]
    return lines
