"""The build and preflight behind jobs, for `show` and `status --watch`.

The compilers and flags a native kernel was built with on that partition are
part of what the job measured, so `show` prints them next to the job. While
a chain is still open, its runs are only PENDING behind it: `status --watch`
names the step they wait for, its state and Slurm's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.cli.show_view import StepFacts
from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep
from campaign.ledger import queries as q
from campaign.ledger.models import StepJob


def _step_text(kind: str, step: StepJob) -> str:
    why = f" ({step.reason})" if step.reason and not step.state.finished else ""  # a finished one's is history
    return f"{kind} job {step.job_id or '-'} {step.state.value}{why}"


def open_chain_lines(led: Ledger, campaigns: Sequence[str]) -> list[str]:
    """One line per partition whose latest build/preflight chain is still
    open: the step its runs wait on, its state and reason (all campaigns when
    `campaigns` is empty)."""
    stmt = select(PreflightStep, Campaign.name).join(Campaign, Campaign.id == PreflightStep.campaign_id)
    out: list[str] = []
    with led.session() as s:
        if campaigns:
            stmt = stmt.where(PreflightStep.campaign_id.in_([q.require_campaign(s, n).id for n in campaigns]))
        latest: dict[tuple[str, str], PreflightStep] = {}
        for step, name in s.execute(stmt.order_by(PreflightStep.id)):
            latest[(name, step.partition)] = step
        for (name, partition), step in latest.items():
            build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
            build_open = build is not None and not build.state.finished
            if step.state.finished and not build_open:
                continue
            parts = [_step_text("build", build)] if build is not None else []
            parts.append(_step_text("preflight", step))
            out.append(f"{name} partition {partition}: {' -> '.join(parts)}; "
                       f"{len(step.attempt_ids)} run(s) wait on it")
    return out


def _step(step: StepJob, key: str = "", info: dict[str, Any] | None = None) -> StepFacts:
    return StepFacts(job_id=step.job_id, state=step.state, reason=step.reason, folder=step.folder, key=key, info=info)


def chain_steps(s: Session, att: JobAttempt) -> tuple[StepFacts | None, StepFacts | None]:
    """The preflight step that gated the attempt and its build (None where there is none), for `show`."""
    run = att.run
    steps = s.scalars(select(PreflightStep).where(PreflightStep.campaign_id == run.campaign_id,
                                                   PreflightStep.partition == run.partition)
                      .order_by(PreflightStep.id.desc()))
    step = next((p for p in steps if att.id in p.attempt_ids), None)
    if step is None:
        return None, None
    build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
    return _step(step), (_step(build, build.key, build.info) if build is not None else None)
