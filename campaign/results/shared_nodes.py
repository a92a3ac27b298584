"""Flag scheduler attempts timed on a node that more busy CPUs shared than it
has (on a shared Slurm node the report's first lines were
artifacts, "c is 1591x slower than fortran").

The local backend's `overlap` note (campaign/results/overlap.py) names any other
timed job on the machine. A Slurm node is shared on purpose (jobs that are
not `--exclusive` get a slice of it), so sharing alone says nothing; what
spoils a timing is a node whose jobs keep more CPUs busy than it has: runs
whose threads exceed their allocation (`cpus_per_run`), or other jobs on top.
For each attempt that just finished, the jobs on its node over its
[start, end] are added up at every instant:

- this ledger's attempts (every campaign, every user of the ledger) count
  their busy CPUs, max(threads, allocated CPUs);
- the other jobs the scheduler shows on the node (other users' and
  campaigns', one sacct call per sync through the backend) count their
  allocated CPUs;

and where the peak exceeds the node's CPUs (the partition's cores x threads
per core: what Slurm calls CPUs) the attempt gets an `overlap` note naming
the peak, the capacity and the jobs. The note is the one every view reads:
`results` (column overlap), the report (warning and per-point flags),
`report --json` and `compare`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import and_, or_, select, update

from campaign.backends import get_backend
from campaign.backends.base import NodeJob
from campaign.backends.capabilities import capabilities, names_where
from campaign.config.clusters import cluster_from_yaml
from campaign.config.schema import ClusterSpec
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.plumbing.clock import as_utc, now
from campaign.results.overlap import joined_note

MAX_NAMED = 10


@dataclass(frozen=True)
class _Held:
    """One job's hold on a node: its busy CPUs from start to end (aware UTC)."""

    label: str
    mine: bool  # an attempt of this ledger (named by attempt id) or another job (by job id)
    cpus: int
    start: datetime
    end: datetime


@dataclass(frozen=True)
class _Target:
    attempt_id: int
    job_id: str
    node: str
    start: datetime
    end: datetime
    busy: int
    capacity: int


def _capacity(spec: ClusterSpec, partition: str) -> int:
    part = spec.partitions.get(partition)
    return part.cores * max(1, part.threads_per_core) if part is not None else 0


def _targets(ledger: Ledger, attempt_ids: Iterable[int]) -> dict[int, tuple[list[_Target], ClusterSpec, str | None]]:
    """The finished scheduler attempts to check, by campaign."""
    ids = sorted(set(attempt_ids))
    out: dict[int, tuple[list[_Target], ClusterSpec, str | None]] = {}
    specs: dict[int, ClusterSpec] = {}
    with ledger.session() as s:
        for i in range(0, len(ids), 10_000):
            stmt = (select(JobAttempt.id, JobAttempt.job_id, JobAttempt.node, JobAttempt.started_at,
                           JobAttempt.ended_at, JobAttempt.alloc_cpus, JobAttempt.scheduler_cluster, Run.threads,
                           Run.partition, Campaign.id, Campaign.cluster_yaml, Campaign.backend)
                    .join(Run, Run.id == JobAttempt.run_id).join(Campaign, Campaign.id == Run.campaign_id)
                    .where(JobAttempt.id.in_(ids[i:i + 10_000])))
            for aid, job, node, start, end, cpus, where, threads, part, cid, yaml, backend in s.execute(stmt):
                if not capabilities(backend).has_accounting or not (job and node and start and end) or any(c in node for c in ",["):
                    continue  # the local backend has campaign.results.overlap; a multi-node job is not timed on one
                if cid not in specs:
                    specs[cid] = cluster_from_yaml(yaml)
                cap = _capacity(specs[cid], part)
                if cap:
                    entry = out.setdefault(cid, ([], specs[cid], where))
                    entry[0].append(_Target(aid, job, node, as_utc(start) or start, as_utc(end) or end,
                                            max(threads, cpus or 0), cap))
    return out


def _ledger_holds(ledger: Ledger, nodes: set[str], since: datetime, until: datetime) -> tuple[
        dict[str, list[_Held]], set[str]]:
    """This ledger's scheduler attempts on these nodes in the window, and their job IDs."""
    holds: dict[str, list[_Held]] = defaultdict(list)
    jobs: set[str] = set()
    with ledger.session() as s:
        stmt = (select(JobAttempt.id, JobAttempt.job_id, JobAttempt.node, JobAttempt.started_at, JobAttempt.ended_at,
                       JobAttempt.alloc_cpus, Run.threads)
                .join(Run, Run.id == JobAttempt.run_id)
                .where(JobAttempt.backend.in_(names_where(has_accounting=True)), JobAttempt.node.in_(sorted(nodes)),
                       JobAttempt.started_at.is_not(None), JobAttempt.started_at < until,
                       or_(JobAttempt.ended_at.is_(None), and_(JobAttempt.ended_at > since))))
        for aid, job, node, start, end, cpus, threads in s.execute(stmt):
            began = as_utc(start)
            if node is None or began is None:
                continue
            jobs.add(str(job))
            holds[node].append(_Held(f"attempt {aid}", True, max(threads, cpus or 0), began, as_utc(end) or now()))
    return holds, jobs


def _ledger_jobs(ledger: Ledger, job_ids: list[str]) -> dict[str, tuple[int, int]]:
    """Job ID -> (attempt id, busy CPUs) for those of these jobs that are this
    ledger's attempts (another campaign's, say, not yet seen running)."""
    out: dict[str, tuple[int, int]] = {}
    with ledger.session() as s:
        for i in range(0, len(job_ids), 10_000):
            stmt = (select(JobAttempt.job_id, JobAttempt.id, JobAttempt.alloc_cpus, Run.threads)
                    .join(Run, Run.id == JobAttempt.run_id)
                    .where(JobAttempt.backend.in_(names_where(has_accounting=True)), JobAttempt.job_id.in_(job_ids[i:i + 10_000])))
            for job, aid, cpus, threads in s.execute(stmt):
                out[str(job)] = (aid, max(threads, cpus or 0))
    return out


def _other_holds(jobs: list[NodeJob], nodes: set[str], mine: set[str]) -> dict[str, list[_Held]]:
    """The scheduler's jobs that are not this ledger's, per node (a job on
    several nodes holds its CPUs spread evenly over them)."""
    holds: dict[str, list[_Held]] = defaultdict(list)
    for job in jobs:
        if job.job_id in mine or not job.nodes:
            continue
        start = as_utc(job.start) or job.start
        end = as_utc(job.end) if job.end is not None else now()
        share = max(1, job.cpus // len(job.nodes))
        for node in set(job.nodes) & nodes:
            holds[node].append(_Held(f"job {job.job_id}", False, share, start, end or now()))
    return holds


class _Profile:
    """The busy CPUs of one node over time (a step function of every hold),
    with the peak over any interval in O(log n): a sync of 100,000 attempts on
    one node must not compare each with every other."""

    def __init__(self, holds: list[_Held]) -> None:
        # at one instant, ends before starts: a job that ends as another starts never overlaps it
        events = sorted([(h.start, h.cpus) for h in holds] + [(h.end, -h.cpus) for h in holds],
                        key=lambda e: (e[0], e[1]))
        self.times = [t for t, _ in events]
        busy, values = 0, []
        for _, delta in events:
            busy += delta
            values.append(busy)
        self.levels = [values]  # sparse table: levels[k][i] = max(values[i : i + 2**k])
        while 2 ** len(self.levels) <= len(values):
            prev, step = self.levels[-1], 2 ** (len(self.levels) - 1)
            self.levels.append([max(prev[i], prev[i + step]) for i in range(len(prev) - step)])
        self.holds = sorted(holds, key=lambda h: h.start)
        self.starts = [h.start for h in self.holds]

    def peak(self, start: datetime, end: datetime) -> int:
        lo = max(0, bisect_right(self.times, start) - 1)
        hi = bisect_left(self.times, end) - 1
        if hi < lo:
            return 0
        k = (hi - lo + 1).bit_length() - 1
        return max(self.levels[k][lo], self.levels[k][hi - 2 ** k + 1])

    def during(self, target: _Target) -> list[_Held]:
        """The other holds over the target's timing (for its note: few, flagged ones only)."""
        last = bisect_left(self.starts, target.end)
        return [h for h in self.holds[:last] if h.end > target.start and h.label != f"attempt {target.attempt_id}"]


def _note(target: _Target, peak: int, during: list[_Held]) -> str:
    mine = [h.label.split()[1] for h in during if h.mine]
    theirs = [h.label.split()[1] for h in during if not h.mine]
    parts = []
    if mine:
        parts.append("attempt(s) " + ", ".join(mine[:MAX_NAMED]) + (", ..." if len(mine) > MAX_NAMED else ""))
    if theirs:
        parts.append("other job(s) " + ", ".join(theirs[:MAX_NAMED]) + (", ..." if len(theirs) > MAX_NAMED else ""))
    return (f"timed on shared node {target.node}: up to {peak} busy CPUs on its {target.capacity} "
            f"(with {'; '.join(parts) or 'its own threads'})")


def flag_shared_nodes(ledger: Ledger, attempt_ids: Iterable[int]) -> tuple[int, list[str]]:
    """Check these finished attempts (of scheduler backends) and write their
    notes; returns (how many were flagged, warnings). The scheduler is asked
    outside any transaction, the notes written in one short one."""
    notes: dict[int, str] = {}
    warnings: list[str] = []
    for targets, spec, where in _targets(ledger, attempt_ids).values():
        nodes = {t.node for t in targets}
        since, until = min(t.start for t in targets), max(t.end for t in targets)
        mine, my_jobs = _ledger_holds(ledger, nodes, since, until)
        backend = get_backend(spec, Path("."))
        local = (since.astimezone().replace(tzinfo=None), until.astimezone().replace(tzinfo=None))
        found, more = backend.node_jobs(sorted(nodes), *local, cluster=where)
        warnings += more
        ours = _ledger_jobs(ledger, [j.job_id for j in found if j.job_id not in my_jobs])
        for job in found:  # this ledger's jobs the ledger has not seen start yet: its own busy count
            if job.job_id in ours and job.nodes:
                aid, busy = ours[job.job_id]
                for node in set(job.nodes) & nodes:
                    mine[node].append(_Held(f"attempt {aid}", True, busy, as_utc(job.start) or job.start,
                                            (as_utc(job.end) if job.end is not None else None) or now()))
        theirs = _other_holds(found, nodes, my_jobs | set(ours))
        profiles = {node: _Profile(mine.get(node, []) + theirs.get(node, [])) for node in nodes}
        for t in targets:
            peak = profiles[t.node].peak(t.start, t.end)
            if peak > t.capacity:
                notes[t.attempt_id] = _note(t, peak, profiles[t.node].during(t))
    if notes:
        with ledger.session.begin() as s:
            for aid, note in notes.items():
                s.execute(update(JobAttempt).where(JobAttempt.id == aid).values(overlap=joined_note(note)))
    return len(notes), warnings
