"""Flag results whose timing overlapped another timed job on the same machine
("timings contaminated without a word"), or other processes on the
CPUs the job could use.

The local backend's machine-wide lock keeps campaigns apart; what can still
overlap is what the user asked for (cluster.local_parallel_jobs > 1) or jobs a
killed submit left running while the next one started. When a local CPU
attempt finishes, every other local CPU attempt of the ledger on the same node
whose [start, end] intersects its own is named in `job_attempt.overlap`;
`results` exports that note with each row, so no median is taken from such
rows without it being visible.

Whatever the backend, the job side records the machine's state while the
kernel ran (campaign.job.machine: the other processes' CPU time on the job's
CPUs, the load average, the clock): sync stores it in `job_attempt.machine`
and, when the machine was busy, adds a note saying with what. Busy means that
other processes took more than BUSY_SHARE of a CPU per thread of the run
beyond the CPUs the run left free: on 2 CPUs, a 1-thread run beside one hog is
not flagged (each had a core), a 2-thread run beside it is. The CPU time of
the timed section is the judge, not the load average, which counts our own
threads and the minute before (so a loaded CI machine whose load is another
test's, finished before the run, does not flag it).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from campaign.backends.capabilities import capabilities, names_where
from campaign.ledger import ATTEMPT_TABLE, JobAttempt, Run
from campaign.ledger import queries as q

MAX_NAMED = 10
BUSY_SHARE = 0.25  # of a CPU per thread of the run: other processes' time beyond the free CPUs that flags it
# /proc/stat counts in clock ticks (USER_HZ, 100 on Linux): each CPU's busy time is off by up to a tick at
# each end, which over a short run is a large share; only what exceeds that counts
TICK_S = 0.01


def joined_note(note: str) -> Any:
    """The SQL value of `overlap` with `note` added after what is there
    (a finished attempt can be both timed beside another job and busy)."""
    return func.coalesce(JobAttempt.overlap + "; ", "") + note


def busy_note(machine: dict[str, Any], threads: int) -> str | None:
    """The note for an attempt run at `threads` threads whose exit record
    holds `machine` (campaign.job.machine), or None if the machine was quiet."""
    others, cpus = machine.get("others_cpus"), machine.get("cpus")
    if not isinstance(others, int | float) or not isinstance(cpus, int) or cpus < 1:
        return None
    want = min(max(int(threads), 1), cpus)  # more threads than CPUs cannot use more than the CPUs
    elapsed = machine.get("elapsed_s")
    slack = 2 * TICK_S * cpus / elapsed if isinstance(elapsed, int | float) and elapsed > 0 else float(cpus)
    if others - slack - (cpus - want) <= BUSY_SHARE * want:
        return None
    loads = [v for v in machine.get("load") or [] if isinstance(v, int | float)]
    load = f" (load average {max(loads):.1f})" if loads else ""
    return (f"busy machine: other processes kept {others:.1f} of its {cpus} CPUs busy while this "
            f"{int(threads)}-thread run was timed{load}")


def flag_busy(s: Session, finished: list[dict[str, Any]]) -> int:
    """`finished`: the updates sync just applied; those with a `machine`
    record get its note when the machine was busy. Returns how many."""
    recorded = {v["id"]: v["machine"] for v in finished if isinstance(v.get("machine"), dict)}
    notes: list[tuple[str, int]] = []
    for start in range(0, len(recorded), 10_000):
        ids = list(recorded)[start:start + 10_000]
        for aid, threads in s.execute(select(JobAttempt.id, Run.threads).join(Run, Run.id == JobAttempt.run_id)
                                      .where(JobAttempt.id.in_(ids))):
            note = busy_note(recorded[aid], threads)
            if note:
                notes.append((note, aid))
    # the first note an attempt gets (it has just finished; flag_overlaps and shared_nodes add theirs after):
    # one executemany, as a busy machine flags most of a sync's attempts
    q.update_many(s, ATTEMPT_TABLE, ["overlap"], notes)
    return len(notes)


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
                      .values(overlap=joined_note(f"timed while attempt(s) {names} ran on {node}")))
            flagged += 1
    return flagged
