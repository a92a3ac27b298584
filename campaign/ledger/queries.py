"""Queries take a Session; the caller owns the transaction (docs/style.md#ledger-and-transactions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Subquery, func, select
from sqlalchemy.orm import Session, contains_eager

from campaign.errors import BadInputError
from campaign.ledger.models import Campaign, JobAttempt, Run


def campaign_by_name(s: Session, name: str) -> Campaign | None:
    return s.scalar(select(Campaign).where(Campaign.name == name))


def require_campaign(s: Session, name: str) -> Campaign:
    camp = campaign_by_name(s, name)
    if camp is None:
        known = ", ".join(s.scalars(select(Campaign.name).order_by(Campaign.id))) or "none yet"
        raise BadInputError(f"unknown campaign {name!r}; known: {known}")
    return camp


def newest_attempts(campaign_id: int | None = None) -> Subquery:
    """(run_id, a): each run's newest attempt number; for one campaign it reads
    only that campaign's runs, never every attempt in the ledger."""
    stmt = select(JobAttempt.run_id, func.max(JobAttempt.attempt).label("a")).group_by(JobAttempt.run_id)
    if campaign_id is not None:
        stmt = stmt.where(JobAttempt.run_id.in_(select(Run.id).where(Run.campaign_id == campaign_id)))
    return stmt.subquery()


def latest_attempts(s: Session, campaign_id: int | None = None) -> list[JobAttempt]:
    """The newest attempt of every run (what the run's state is now)."""
    newest = newest_attempts(campaign_id)
    q = (
        select(JobAttempt)
        .join(newest, (JobAttempt.run_id == newest.c.run_id) & (JobAttempt.attempt == newest.c.a))
        .join(Run, Run.id == JobAttempt.run_id)
        # the views print each attempt's run and campaign: load them in the same query, not one per row
        .options(contains_eager(JobAttempt.run).joinedload(Run.campaign))
        .order_by(JobAttempt.id)
    )
    if campaign_id is not None:
        q = q.where(Run.campaign_id == campaign_id)
    return list(s.scalars(q).unique())


def attempts_by_job_id(s: Session, job_id: str) -> list[JobAttempt]:
    found = list(s.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id).order_by(JobAttempt.id)))
    if not found:
        raise BadInputError(f"unknown job ID {job_id!r}: `campaign jobs` lists the known ones")
    return found


def lineage(s: Session, attempt: JobAttempt) -> Sequence[JobAttempt]:
    return list(s.scalars(select(JobAttempt).where(JobAttempt.run_id == attempt.run_id).order_by(JobAttempt.attempt)))


def attempt_columns(s: Session, columns: Sequence[Any], campaign_id: int | None = None, *,
                    latest: bool = True, state: Any = None) -> list[tuple[Any, ...]]:
    """Columns of attempts (of JobAttempt, Run, Campaign) as plain tuples in
    attempt order: the newest attempt of each run (latest) or all of them,
    optionally of one state. `jobs` and `status` print 10,000s of rows; ORM
    objects with their runs' decoded specs cost seconds there."""
    stmt = (select(*columns).select_from(JobAttempt).join(Run, Run.id == JobAttempt.run_id)
            .join(Campaign, Campaign.id == Run.campaign_id))
    if latest:
        newest = newest_attempts(campaign_id)
        stmt = stmt.join(newest, (JobAttempt.run_id == newest.c.run_id) & (JobAttempt.attempt == newest.c.a))
    if campaign_id is not None:
        stmt = stmt.where(Run.campaign_id == campaign_id)
    if state is not None:
        stmt = stmt.where(JobAttempt.state == state)
    return [tuple(row) for row in s.execute(stmt.order_by(JobAttempt.id))]
