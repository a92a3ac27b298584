"""Commands that wait for jobs, and what the jobs they waited for became.

A script that runs `campaign submit` or `rerun` on the local backend (both
wait for their jobs) needs to know whether the benchmark itself failed: they
exit 3 when any job they waited for ended in a failed state (docs/design.md,
exit codes; `status --watch/--wait` and `submit --wait` do the same through
campaign.cli.watch). This module answers "which of these attempts failed".
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from campaign.ledger import JobAttempt, Ledger, Run


def failed_among(ledger: Ledger, attempt_ids: Iterable[int]) -> list[tuple[str, str]]:
    """(job ID, state) of the given attempts that finished in a failed state;
    one never sent names its run instead (the ledger's attempt numbers mean
    nothing to a user). Runs that one failed build or preflight kept back
    share its job ID and are named once."""
    ids = sorted(set(attempt_ids))
    out: dict[tuple[str, str], None] = {}
    with ledger.session() as s:
        for i in range(0, len(ids), 10_000):
            stmt = (select(JobAttempt.job_id, JobAttempt.state, Run.kernel, Run.impl, Run.variant, Run.partition)
                    .join(Run, Run.id == JobAttempt.run_id).where(JobAttempt.id.in_(ids[i:i + 10_000])))
            for job_id, state, *run in s.execute(stmt.order_by(JobAttempt.id)):
                if state.finished and not state.usable:  # PROFILE_FAILED: timings count, not a failed run
                    name = job_id or f"(run {'/'.join(run[:3])} on {run[3]}, never submitted)"
                    out[(name, state.value)] = None
    return list(out)
