"""Flag results whose timing overlapped another timed job on the same machine
(issue 11: "timings contaminated without a word").

The local backend's machine-wide lock keeps campaigns apart; what can still
overlap is what the user asked for (cluster.local_parallel_jobs > 1) or jobs a
killed submit left running while the next one started. When a local CPU
attempt finishes, every other local CPU attempt of the ledger on the same node
whose [start, end] intersects its own is named in `job_attempt.overlap`;
`results` exports that note with each row, so no median is taken from such
rows without it being visible.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from campaign.backends.capabilities import capabilities, names_where
from campaign.ledger import JobAttempt, Run

MAX_NAMED = 10


def flag_overlaps(s: Session, finished: list[dict[str, Any]]) -> int:
    """`finished`: the updates sync just applied (id, started_at, ended_at, node).
    Returns how many attempts were flagged."""
    flagged = 0
    for values in finished:
        start, end, node = values.get("started_at"), values.get("ended_at"), values.get("node")
        if start is None or end is None or node is None:
            continue
        me = s.execute(select(JobAttempt.backend, Run.gpus).join(Run, Run.id == JobAttempt.run_id)
                       .where(JobAttempt.id == values["id"])).first()
        if me is None or not capabilities(me.backend).local or me.gpus:
            continue
        others = list(s.scalars(
            select(JobAttempt.id).join(Run, Run.id == JobAttempt.run_id)
            .where(JobAttempt.id != values["id"], JobAttempt.backend.in_(names_where(local=True)), Run.gpus == 0,
                   JobAttempt.node == node, JobAttempt.started_at.is_not(None), JobAttempt.started_at < end,
                   or_(JobAttempt.ended_at.is_(None), and_(JobAttempt.ended_at > start)))
            .order_by(JobAttempt.id).limit(MAX_NAMED + 1)))
        if others:
            names = ", ".join(str(i) for i in others[:MAX_NAMED]) + (", ..." if len(others) > MAX_NAMED else "")
            s.execute(update(JobAttempt).where(JobAttempt.id == values["id"])
                      .values(overlap=f"timed while attempt(s) {names} ran on {node}"))
            flagged += 1
    return flagged
