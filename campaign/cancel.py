"""`campaign cancel`: stop a campaign's unfinished jobs, or one job."""

from __future__ import annotations

from pathlib import Path

from campaign.backends import get_backend
from campaign.backends.base import JobRef
from campaign.clock import now
from campaign.config.clusters import cluster_from_yaml
from campaign.errors import BadInputError
from campaign.ledger import JobAttempt, Ledger
from campaign.ledger import queries as q
from campaign.states import JobState


def cancel(ledger: Ledger, target: str) -> list[str]:
    """Cancel a campaign's unfinished jobs, or one job; returns the job IDs."""
    with ledger.session() as s:
        camp = q.campaign_by_name(s, target)
        if camp is not None:
            atts = [a for a in q.latest_attempts(s, camp.id) if not a.state.finished]
        else:
            atts = [a for a in q.attempts_by_job_id(s, target) if not a.state.finished]
            if not atts:
                raise BadInputError(f"job {target} has already finished; nothing to cancel")
        groups: dict[str, tuple[str, str, list[JobRef]]] = {}
        for a in atts:
            c = a.run.campaign
            groups.setdefault(c.name, (c.cluster_yaml, c.workdir, []))[2].append(
                JobRef(a.id, a.job_id or "", a.workdir, a.submitted_at, a.walltime_min, a.scheduler_cluster))
    for cyaml, workdir, refs in groups.values():
        live = [r for r in refs if r.job_id]
        if live:
            get_backend(cluster_from_yaml(cyaml), Path(workdir)).cancel(live)
    cancelled = []
    with ledger.session.begin() as s:
        for _, _, refs in groups.values():
            for ref in refs:
                att = s.get(JobAttempt, ref.attempt_id)
                if att is not None and not att.state.finished:
                    att.state, att.reason, att.ended_at = JobState.CANCELLED, "cancelled by campaign cancel", now()
                    cancelled.append(att.job_id or f"(unsubmitted attempt {att.id})")
    return cancelled
