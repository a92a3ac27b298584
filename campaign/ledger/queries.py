"""Queries take a Session; the caller owns the transaction (docs/style.md#ledger-and-transactions)."""

from __future__ import annotations

from collections.abc import Sequence

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
