"""`campaign cancel`: stop a campaign's unfinished jobs, or one job.

Each job's folder first gets `cancel.json` (a job that has not started yet
will not start its kernel), then the backend stops the jobs and returns only
once they stopped (local: the kernel's whole process group); only then are the
attempts marked CANCELLED. A job that could not be stopped keeps its state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from campaign.backends import get_backend
from campaign.backends.base import JobRef
from campaign.clock import now
from campaign.config.clusters import cluster_from_yaml
from campaign.errors import BadInputError, did_you_mean
from campaign.job.files import CANCEL_FILE
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow
from campaign.ledger import queries as q
from campaign.partial import describe, read_partial
from campaign.results.expected import Expected
from campaign.results.store import job_rows
from campaign.states import JobState


def _leave_marker(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / CANCEL_FILE).write_text(json.dumps({"cancelled": now().isoformat()}) + "\n")


def _attempts_of(s: Any, target: str) -> list[JobAttempt]:
    """The attempts of job ID `target`; neither a campaign nor a job ID: one
    line that says both were looked for (issue 28), with close campaign names."""
    try:
        return q.attempts_by_job_id(s, target)
    except BadInputError:
        names = list(s.scalars(select(Campaign.name)))
        raise BadInputError(f"no campaign or job ID named {target!r}{did_you_mean(target, names)} "
                            f"(`campaign status` lists campaigns, `campaign jobs` job IDs)") from None


def cancel(ledger: Ledger, target: str) -> list[str]:
    """Cancel a campaign's unfinished jobs, or one job; returns the job IDs."""
    with ledger.session() as s:
        camp = q.campaign_by_name(s, target)
        if camp is not None:
            atts = [a for a in q.latest_attempts(s, camp.id) if not a.state.finished]
        else:
            atts = [a for a in _attempts_of(s, target) if not a.state.finished]
            if not atts:
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
    for cyaml, workdir, refs in groups.values():
        live = [r for r in refs if r.job_id]
        if live:
            get_backend(cluster_from_yaml(cyaml), Path(workdir)).cancel(live)
    partials = {aid: read_partial(Path(out), want) for aid, (out, want) in info.items()}
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
                    if outcome is not None and outcome.rows:
                        run = att.run
                        s.execute(insert(ResultRow), job_rows(att.id, att.job_id or "", run.campaign.cluster,
                                                              run.partition, want.extra_args, outcome.rows))
                    cancelled.append(att.job_id or f"(unsubmitted attempt {att.id})")
    return cancelled
