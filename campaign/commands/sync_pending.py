"""What a sync asks the scheduler about: the ledger's open attempts, read in
one query without the runs' specs, and, once an attempt has finished, the few
fields of its run that judging its output needs.

The writes that follow are campaign.commands.sync's; the scheduler is asked
between the two, outside any transaction.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import select, type_coerce
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from campaign.backends.base import JobRef
from campaign.commands.sync_specs import expected_for
from campaign.ledger import ATTEMPT_TABLE, Campaign, JobAttempt, Run
from campaign.ledger import queries as q
from campaign.plumbing import owner
from campaign.plumbing.states import OPEN_STATES
from campaign.results.reader import Expected


@dataclass(slots=True)
class Pending:
    """An unfinished attempt as the ledger has it, read in one query. The run's
    spec (expected n, check, extra arguments) is read only once the attempt
    has finished: a 100,000-job sync must not decode 100,000 JSON specs."""

    attempt_id: int
    run_id: int
    campaign_id: int
    ref: JobRef
    output_path: str  # a str, not a Path per open attempt (a 100,000-job sync holds them all); `output` makes one
    seen: tuple[Any, ...]  # the SEEN columns as the driver returned them (q.stored_rows)
    partition: str = ""  # the run's, read by `partitions` for attempts whose rows are stored
    change: dict[str, Any] | None = None  # an open status's columns that differ from `seen` (sync's _unchanged)
    expected_n: tuple[int, ...] = ()
    check: bool = False
    extra_args: tuple[tuple[str, str], ...] = ()
    expected: Expected | None = None  # the run's own coordinates: output of another is LOST_OUTPUT

    @property
    def output(self) -> Path:
        return Path(self.output_path)

    @property
    def profiled(self) -> bool:
        return any(k == "profile" and v != "none" for k, v in self.extra_args)


@dataclass(frozen=True)
class CampaignInfo:
    """What a sync needs of an open attempt's campaign: its backend, cluster and folder."""

    backend: str
    cluster_yaml: str
    workdir: str
    cluster: str


# What a sync compares before it writes, read without result processors: 100,000
# open attempts' states and times decoded by SQLAlchemy cost ~2 s of a sync.
SEEN = ("state", "reason", "exit_code", "node", "started_at", "ended_at")


def _raw(name: str) -> Any:
    return type_coerce(ATTEMPT_TABLE.c[name], NullType())


def collect(s: Session, campaign: str | None) -> tuple[int | None, list[Pending], dict[int, CampaignInfo]]:
    """The campaign's id (None: every campaign), its attempts with a job ID still open, and their campaigns."""
    camp_id = q.require_campaign(s, campaign).id if campaign else None
    # No join with run (its rows hold the specs: reading them cost ~0.5 s per
    # 100,000 open attempts); the campaign's run ids come from its covering
    # index, a run's partition only once its rows are stored (`partitions`).
    stmt = select(
        JobAttempt.id,
        JobAttempt.run_id,
        JobAttempt.job_id,
        JobAttempt.workdir,
        _raw("submitted_at"),
        JobAttempt.walltime_min,
        JobAttempt.output_path,
        JobAttempt.scheduler_cluster,
        *map(_raw, SEEN),
    ).where(JobAttempt.job_id.is_not(None), JobAttempt.state.in_(OPEN_STATES))
    conn = s.connection()
    if camp_id is not None:
        stmt = stmt.where(JobAttempt.run_id.in_(select(Run.id).where(Run.campaign_id == camp_id)))
        campaign_of: dict[int, int] = defaultdict(lambda: camp_id)
    else:
        campaign_of = {rid: cid for rid, cid in conn.execute(select(Run.id, Run.campaign_id))}
    instants: dict[Any, Any] = {}  # submitted_at: one stamp per sbatch answer, converted once
    out = []
    for row in sorted(conn.execute(stmt).all(), key=itemgetter(0)):  # attempt order (ORDER BY: a temporary B-tree)
        aid, run_id, job_id, workdir, submitted, walltime, output, where = row[:8]
        if submitted not in instants:
            instants[submitted] = q.stored_instant(submitted)
        # the scheduler cluster holding the job (multi-cluster sites) travels with its ID
        ref = JobRef(aid, str(job_id), workdir, instants[submitted], walltime, where)
        out.append(Pending(aid, run_id, campaign_of[run_id], ref, output, tuple(row[8:])))
    camps = {
        cid: CampaignInfo(*info)
        for cid, *info in s.execute(
            select(Campaign.id, Campaign.backend, Campaign.cluster_yaml, Campaign.workdir, Campaign.cluster).where(
                Campaign.id.in_({p.campaign_id for p in out})
            )
        )
    }
    return camp_id, out, camps


def unconfirmed(s: Session, camp_id: int | None) -> dict[str, list[int]]:
    """The open attempts without a job ID whose recording process (a submit or rerun) is gone from
    this host, by campaign name: stopped between recording them and the scheduler's answer, they wait
    for the same submit again or a `campaign rerun` of the campaign, which look in the scheduler for
    the jobs sbatch accepted before they send the rest (campaign.commands.attempts.recover_orphans). No sync can settle them, so a wait must not
    wait for them. One recorded on another host is not judged: this host cannot tell it is gone."""
    stmt = (
        select(JobAttempt.id, Campaign.name, JobAttempt.owner_host, JobAttempt.owner_pid, JobAttempt.owner_start)
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(JobAttempt.job_id.is_(None), JobAttempt.state.in_(OPEN_STATES))
    )
    if camp_id is not None:
        stmt = stmt.where(Run.campaign_id == camp_id)
    out: dict[str, list[int]] = {}
    for aid, name, host, pid, start in s.execute(stmt.order_by(JobAttempt.id)):
        if owner.alive(host, pid, start) is False:
            out.setdefault(name, []).append(aid)
    return out


def partitions(s: Session, items: list[Pending]) -> None:
    """Each attempt's run partition (what its result rows record)."""
    ids = sorted({p.run_id for p in items})
    found: dict[int, str] = {}
    for i in range(0, len(ids), 10_000):
        found.update(
            (rid, part) for rid, part in s.execute(select(Run.id, Run.partition).where(Run.id.in_(ids[i : i + 10_000])))
        )
    for p in items:
        p.partition = found[p.run_id]


def load_specs(s: Session, items: list[Pending]) -> None:
    """What ingesting a finished attempt's output needs from its run."""
    found = expected_for(s, [(p.attempt_id, p.run_id) for p in items])
    for p in items:
        want = found[p.attempt_id]
        p.expected_n, p.check, p.extra_args, p.expected = want.n, want.check, want.extra_args, want
