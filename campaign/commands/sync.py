"""`campaign status`: scheduler states → ledger, finished jobs' output ingested.

One backend query per backend covers every unfinished job (the Slurm backend batches them into few sacct
calls); files are read and the scheduler asked outside any transaction, then the ledger is updated in one
short one with bulk statements (a 10,000-job campaign must sync in seconds, not minutes)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from campaign.backends import get_backend
from campaign.backends.base import JobStatus
from campaign.backends.capabilities import capabilities
from campaign.commands.chain_sync import sync_steps
from campaign.commands.sync_pending import SEEN, CampaignInfo, Pending, collect, load_specs, partitions, unconfirmed
from campaign.config.clusters import cluster_from_yaml
from campaign.config.schema import ClusterSpec
from campaign.job.error_line import failure_cause
from campaign.job.files import EXIT_FILE, STDERR_FILE, counters_path, read_json
from campaign.ledger import ATTEMPT_TABLE, CounterRow, JobAttempt, Ledger, Run
from campaign.ledger import queries as q
from campaign.plumbing.clock import as_utc
from campaign.plumbing.gc_pause import gc_paused
from campaign.plumbing.pipeline import overlapped
from campaign.plumbing.states import OPEN_STATES, PARTIAL_STATES, JobState
from campaign.results.counters import read_counters
from campaign.results.overlap import flag_busy, flag_overlaps
from campaign.results.partial import complete_despite_stop, describe, read_partial
from campaign.results.reader import Expected, Outcome, classify_stream
from campaign.results.result_columns import ResultColumns, release_unused
from campaign.results.shared_nodes import flag_shared_nodes
from campaign.results.store import AttemptRows, job_columns, store_attempt_files
from campaign.results.sweep import sweep_orphans

# Result rows per write transaction (and so, with the parsed rows behind
# them, the bound on a sync's memory): ~250 MB at most.
INGEST_BATCH_ROWS = 100_000
CSV_CHARS_PER_ROW = 100  # outputs read ahead (reader.classify_stream) hold about one batch's rows
SPEC_CHUNK = 10_000  # finished attempts whose run specs are read at once


@dataclass
class SyncReport:
    campaign: str | None
    counts: dict[str, int] = field(default_factory=dict)  # latest attempt per run, by state
    changed: int = 0
    ingested_rows: int = 0
    warnings: list[str] = field(default_factory=list)
    preflight: list[str] = field(default_factory=list)  # failed build/preflight chains, with log tails
    swept: int = 0  # unreferenced result files removed (campaign.ledger.files.sweep)
    unconfirmed: set[int] = field(default_factory=set)  # attempts a stopped submit or rerun left (sync_pending)


_AT = {name: i for i, name in enumerate(SEEN)}
_OPEN = frozenset(s.value for s in OPEN_STATES)  # as stored: JobState names (== their values)
_FINISHED = frozenset(s for s in JobState if s.finished)


def _status_values(p: Pending, st: JobStatus, outcome: Outcome | None) -> dict[str, Any]:
    """The columns this status (and output) would set on the attempt (the
    others as they are: a status without a node keeps the stored node)."""
    state, reason = (outcome.state, outcome.reason) if outcome is not None else (st.state, st.reason)
    values: dict[str, Any] = {"id": p.attempt_id, "state": state, "reason": reason}
    if st.exit_code is not None:
        values["exit_code"] = st.exit_code
    if st.node is not None:
        values["node"] = st.node
    if st.started_at is not None:
        values["started_at"] = as_utc(st.started_at)
    if st.ended_at is not None:
        values["ended_at"] = as_utc(st.ended_at)
    if isinstance(st.machine, dict):
        values["machine"] = st.machine
    return values


def _diff(stored: tuple[Any, ...], values: dict[str, Any]) -> dict[str, Any]:
    """The columns of `values` that differ from the stored SEEN row: what a
    write must set (a column not in SEEN, missing_n, is stored as NULL here)."""
    out = {}
    for k, v in values.items():
        old = stored[_AT[k]] if k in _AT else None
        if old is not v and old != v and k != "id" and not q.stored_equal(old, v):
            out[k] = v
    return out


def _unchanged(p: Pending, st: JobStatus) -> bool:
    """Still open and nothing new: most attempts of a big campaign, most
    syncs. Keeps what differs (p.change) for the write."""
    if st.state in _FINISHED:
        return False
    p.change = _diff(p.seen, _status_values(p, st, None))
    return not p.change


def _counts(s: Session, camp_id: int | None) -> dict[str, int]:
    """Latest attempt per run, by state, counted by the database."""
    stmt = select(JobAttempt.state, func.count()).where(q.is_newest_attempt()).group_by(JobAttempt.state)
    if camp_id is not None:
        stmt = stmt.where(JobAttempt.run_id.in_(select(Run.id).where(Run.campaign_id == camp_id)))
    return {state.value: int(count) for state, count in s.execute(stmt)}


def sync(ledger: Ledger, campaign: str | None = None, sweep_everywhere: bool = False) -> SyncReport:
    """Scheduler states and finished jobs' rows into the ledger, then the
    orphaned result files swept (campaign.results.sweep.sweep_orphans: where
    a writer left a marker; with `sweep_everywhere`, `status`'s, in every
    campaign's folder), once every write has committed."""
    report = SyncReport(campaign)
    with gc_paused():  # 100,000s of open attempts and states live through this block
        camp_id, pending, camps, statuses, specs = _scheduler_states(ledger, campaign, report)
        pending = [p for p in pending if p.attempt_id in statuses and not _unchanged(p, statuses[p.attempt_id])]
        still_open = [p for p in pending if statuses[p.attempt_id].state not in _FINISHED]
        if still_open:
            _write(ledger, report, still_open, statuses, _Batch(), camps)
        finished = [p for p in pending if statuses[p.attempt_id].state in _FINISHED]
        del pending, still_open
    # Batch k written (its Parquet file made durable, its transaction committed) on one worker thread
    # while batch k+1's outputs are read and checked here: the two overlap on two cores, in order, two
    # batches alive at most (campaign.plumbing.pipeline). Each stage runs with the collector paused: a
    # batch's 100,000 rows' lists are alive until its INSERT, and the full collections that walked them
    # (with every finished attempt and state) cost ~1 s of CPU per 1,000,000 rows ingested. They run
    # again between batches, so a sync's memory stays bounded by its batches however long it is.
    overlapped(
        _finished_batches(ledger, finished, statuses),
        lambda batch: _write(ledger, report, batch.pending, statuses, batch, camps),
        release_unused,
    )
    # attempts timed on a node more busy CPUs shared than it has (campaign.results.shared_nodes): after
    # the writes, the scheduler asked outside any transaction
    _, shared_warnings = flag_shared_nodes(
        ledger, [p.attempt_id for p in finished if capabilities(camps[p.campaign_id].backend).has_accounting]
    )
    report.warnings += shared_warnings
    report.preflight = sync_steps(ledger, camp_id, specs)
    report.swept = len(sweep_orphans(ledger, everywhere=sweep_everywhere))  # a sync killed between rename and commit
    with ledger.session() as s:
        report.counts = _counts(s, camp_id)
        left = unconfirmed(s, camp_id)
    for name, ids in left.items():
        report.unconfirmed.update(ids)
        report.warnings.append(
            f"campaign {name}: {len(ids)} run(s) recorded by a submit or rerun that was stopped "
            f"before the scheduler answered, never confirmed submitted: the same submit again, or "
            f"`campaign rerun {name} --failed` (which reruns the failed runs too), sends them, "
            f"adopting first any job sbatch had accepted"
        )
    return report


def _scheduler_states(
    ledger: Ledger, campaign: str | None, report: SyncReport
) -> tuple[int | None, list[Pending], dict[int, CampaignInfo], dict[int, JobStatus], dict[int, ClusterSpec]]:
    """The open attempts and what their backends say of them (one query per
    backend), with each queried campaign's cluster parsed once."""
    with ledger.session() as s:
        camp_id, pending, camps = collect(s, campaign)
    by_backend: dict[str, list[Pending]] = defaultdict(list)
    for p in pending:
        by_backend[camps[p.campaign_id].backend].append(p)
    statuses: dict[int, JobStatus] = {}
    specs: dict[int, ClusterSpec] = {}  # each campaign's cluster parsed once per sync (~0.2 s each)
    for items in by_backend.values():
        info = camps[items[0].campaign_id]
        spec = specs[items[0].campaign_id] = cluster_from_yaml(info.cluster_yaml)
        result = get_backend(spec, Path(info.workdir)).query([p.ref for p in items])
        statuses.update(result.statuses)
        report.warnings += result.warnings
    return camp_id, pending, camps, statuses, specs


@dataclass
class _Batch:
    """Finished attempts whose outputs were read, written in one transaction."""

    pending: list[Pending] = field(default_factory=list)
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    counters: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    partials: dict[int, tuple[ResultColumns, list[int], str | None]] = field(default_factory=dict)
    rows: int = 0


def _finished_batches(ledger: Ledger, finished: list[Pending], statuses: dict[int, JobStatus]) -> Iterator[_Batch]:
    """Finished attempts with their outputs read, in batches of at most
    INGEST_BATCH_ROWS result rows (one attempt's rows are never split): the
    memory of a sync stays the same however many jobs finished, and each
    batch is one transaction holding its attempts' states and their rows
    together (a sync that dies part-way leaves the rest open for the next)."""
    for start in range(0, len(finished), SPEC_CHUNK):
        chunk = finished[start : start + SPEC_CHUNK]
        with ledger.session() as s:
            load_specs(s, chunk)
        batch = _Batch()
        read = classify_stream(
            (
                (p.output_path, p.expected or Expected(p.expected_n, p.check))
                for p in chunk
                if statuses[p.attempt_id].state is JobState.COMPLETED
            ),
            chars=INGEST_BATCH_ROWS * CSV_CHARS_PER_ROW,
            rows=INGEST_BATCH_ROWS,
        )
        for p in chunk:
            st = statuses[p.attempt_id]
            if st.state is JobState.COMPLETED:
                outcome = batch.outcomes[p.attempt_id] = next(read)
                batch.rows += len(outcome.table)
                if p.profiled:
                    batch.counters[p.attempt_id] = _profile(p, batch.outcomes)
                    batch.rows += len(batch.counters[p.attempt_id])
            elif st.state in PARTIAL_STATES:  # keep what it finished, remember what it did not
                want = p.expected or Expected(p.expected_n, p.check)
                if done := complete_despite_stop(p.output, want, st.state):  # it had written every n: COMPLETED
                    batch.outcomes[p.attempt_id] = done
                    batch.rows += len(done.table)
                else:
                    partial, missing = read_partial(p.output, want)
                    # a job that failed before its first n is a failure, not a partial result: its reason is
                    # the failure's, and a rerun runs it whole
                    if st.state is not JobState.FAILED or (partial is not None and len(partial.table)):
                        batch.partials[p.attempt_id] = (
                            partial.table if partial else ResultColumns(0, {}),
                            missing,
                            partial.reason if partial else None,
                        )
                        batch.rows += len(batch.partials[p.attempt_id][0])
            if not st.kernel_code:  # (the local backend's query already read the exit record)
                exit_record = read_json(os.path.join(p.ref.workdir, EXIT_FILE))
                code = exit_record.get("exit_code") if exit_record else None
                st.machine = exit_record.get("machine") if exit_record else None
                if isinstance(code, int) and not isinstance(code, bool) and -(2**31) <= code < 2**31:
                    st.exit_code = code  # the kernel's own code, not srun's (a planted 10^20 is ignored)
            if st.state is JobState.FAILED:  # the cause from the job's own records, for `jobs` and `status`
                st.reason = failure_cause(st.exit_code, os.path.join(p.ref.workdir, STDERR_FILE), st.reason)
            batch.pending.append(p)
            if batch.rows >= INGEST_BATCH_ROWS:
                yield batch
                batch = _Batch()
        if batch.pending:
            yield batch


def _write(
    ledger: Ledger,
    report: SyncReport,
    pending: list[Pending],
    statuses: dict[int, JobStatus],
    batch: _Batch,
    camps: dict[int, CampaignInfo],
) -> None:
    with ledger.session.begin() as s:
        changed, rows = _apply(s, pending, statuses, batch.outcomes, camps, batch.counters, batch.partials)
    report.changed += changed
    report.ingested_rows += rows


def _profile(p: Pending, outcomes: dict[int, Outcome]) -> list[dict[str, Any]]:
    """The counter rows of a profiled attempt; a completed one whose profile
    failed for some n becomes PROFILE_FAILED (its timings still count)."""
    found = read_counters(counters_path(p.output))
    outcome = outcomes[p.attempt_id]
    reason = found.reason(p.expected_n)
    if reason is not None and outcome.state is JobState.COMPLETED:
        outcomes[p.attempt_id] = Outcome(JobState.PROFILE_FAILED, outcome.table, reason)
    return [dict(r, attempt_id=p.attempt_id) for r in found.rows]


def _apply(
    s: Session,
    pending: list[Pending],
    statuses: dict[int, JobStatus],
    outcomes: dict[int, Outcome],
    camps: dict[int, CampaignInfo],
    counters: dict[int, list[dict[str, Any]]] | None = None,
    partials: dict[int, tuple[ResultColumns, list[int], str | None]] | None = None,
) -> tuple[int, int]:
    partials = partials or {}
    partitions(s, [p for p in pending if not p.partition and (p.attempt_id in outcomes or p.attempt_id in partials)])
    ids = [p.attempt_id for p in pending if p.attempt_id in statuses]
    # Re-read inside the write transaction: another terminal may have
    # cancelled some of these jobs since we looked.
    current = {aid: row for aid, row in q.stored_rows(s, ATTEMPT_TABLE, SEEN, ids).items() if row[0] in _OPEN}
    updates: list[dict[str, Any]] = []
    writes: list[tuple[int, dict[str, Any]]] = []  # (attempt id, the columns that change)
    rows: list[AttemptRows] = []
    counter_rows: list[dict[str, Any]] = []
    changed = 0

    def attempt_rows(p: Any, table: Any) -> AttemptRows:
        """An attempt's result rows with the ledger's columns of its job."""
        camp = camps[p.campaign_id]
        return AttemptRows(
            p.attempt_id,
            p.campaign_id,
            camp.workdir,
            job_columns(p.attempt_id, p.ref.job_id, camp.cluster, p.partition, p.extra_args, table),
        )

    for p in pending:
        st = statuses.get(p.attempt_id)
        if st is None or p.attempt_id not in current:
            continue
        outcome = outcomes.get(p.attempt_id)
        if outcome is not None:
            rows.append(attempt_rows(p, outcome.table))
            counter_rows += (counters or {}).get(p.attempt_id, [])
        values = _status_values(p, st, outcome)
        state = values["state"]
        if p.attempt_id in partials:  # TIMEOUT/CANCELLED/OOM/FAILED: the finished n's rows, the missing n
            done_rows, missing, note = partials[p.attempt_id]
            rows.append(attempt_rows(p, done_rows))
            values["missing_n"] = missing
            values["reason"] = "; ".join(filter(None, [values["reason"], note, describe(p.expected_n, missing)]))
        old = current[p.attempt_id]
        # as seen before the scheduler was asked (most rows): what differs is known
        known = p.change is not None and outcome is None and p.attempt_id not in partials and old == p.seen
        diff = p.change if known and p.change is not None else _diff(old, values)
        if not diff:
            continue  # nothing new: write nothing (the ledger file stays byte-identical)
        changed += state != old[0]
        updates.append(values)
        writes.append((p.attempt_id, diff))
    q.write_changes(s, ATTEMPT_TABLE, writes)
    store_attempt_files(s, rows)
    if counter_rows:
        s.execute(insert(CounterRow), counter_rows)
    flag_busy(s, [v for v in updates if v["state"].finished])
    flag_overlaps(s, [v for v in updates if v["state"].finished])
    return changed, sum(r.columns.length for r in rows)
