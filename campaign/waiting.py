"""Commands that wait for jobs, and what the jobs they waited for became.

A script that runs `campaign submit` on the local backend, `campaign status
--wait` or a local `rerun` needs to know whether the benchmark itself failed:
those commands exit 3 when any job they waited for ended in a failed state
(docs/design.md, exit codes). This module answers "which of these attempts
failed" and does the waiting for `status --wait`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import select

from campaign.ledger import JobAttempt, Ledger, Run
from campaign.ledger import queries as q
from campaign.states import OPEN_STATES, JobState
from campaign.sync import SyncReport, sync


def failed_among(ledger: Ledger, attempt_ids: Iterable[int]) -> list[tuple[str, str]]:
    """(job ID, state) of the given attempts that finished in a failed state."""
    ids = sorted(set(attempt_ids))
    out: list[tuple[str, str]] = []
    with ledger.session() as s:
        for i in range(0, len(ids), 10_000):
            stmt = select(JobAttempt.id, JobAttempt.job_id, JobAttempt.state).where(JobAttempt.id.in_(ids[i:i + 10_000]))
            for aid, job_id, state in s.execute(stmt.order_by(JobAttempt.id)):
                if state.finished and state is not JobState.COMPLETED:
                    out.append((job_id or f"(attempt {aid})", state.value))
    return out


def _open_ids(ledger: Ledger, campaign: str | None) -> list[int]:
    with ledger.session() as s:
        stmt = select(JobAttempt.id).join(Run, Run.id == JobAttempt.run_id).where(JobAttempt.state.in_(OPEN_STATES))
        if campaign:
            stmt = stmt.where(Run.campaign_id == q.require_campaign(s, campaign).id)
        return list(s.scalars(stmt))


def wait(ledger: Ledger, campaign: str | None, poll_s: float = 2.0) -> tuple[SyncReport, list[tuple[str, str]]]:
    """Sync until every job unfinished at the start has finished; returns the
    last sync and the waited-for jobs that ended failed."""
    waited = _open_ids(ledger, campaign)
    while True:
        report = sync(ledger, campaign)
        still = set(waited) & set(_open_ids(ledger, campaign))
        if not still:
            return report, failed_among(ledger, waited)
        time.sleep(poll_s)
