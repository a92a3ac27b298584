"""`campaign status --watch` and `submit --wait`: sync until nothing is open.

A 30-minute job must not look hung: each round syncs (one batched scheduler
query), then shows the states per campaign, every running job with its
elapsed time against its walltime and the n it has reached (rows of its
partial CSV in the job folder), and an ETA from the durations of the jobs
that finished. Into a terminal that is a live rich display; with --quiet or
into a pipe it is one line per state change, so logs stay readable.
Exit code: 0 when every job completed, 3 when one ended failed
(docs/design.md#cli).
"""

from __future__ import annotations

import csv
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from campaign.cli.chain_view import open_chain_lines
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.ledger import queries as q
from campaign.plumbing.clock import now
from campaign.plumbing.states import JobState
from campaign.results.frames import spec_label

LIVE_ROWS = 20  # running jobs listed in the live display (a 256-task array would not fit a screen)
PARTIAL_SUFFIXES = ("", ".partial", ".tmp")  # the kernel's CSV while (or after) it is written


@dataclass
class JobView:
    attempt_id: int
    job_id: str | None
    campaign: str
    label: str
    state: JobState
    started: datetime | None
    ended: datetime | None
    walltime_min: int
    n_total: int
    output: str


def _aware(t: datetime | None) -> datetime | None:
    """Ledger times as aware UTC (naive ones are local time, as Slurm prints them)."""
    if t is None:
        return None
    return t.astimezone(UTC)


def snapshot(led: Ledger, campaigns: Sequence[str]) -> list[JobView]:
    """The newest attempt of every run of these campaigns (all when empty), one query."""
    newest = select(JobAttempt.run_id, func.max(JobAttempt.attempt).label("a")).group_by(JobAttempt.run_id).subquery()
    stmt = (
        select(
            JobAttempt.id,
            JobAttempt.job_id,
            JobAttempt.state,
            JobAttempt.started_at,
            JobAttempt.ended_at,
            JobAttempt.walltime_min,
            JobAttempt.output_path,
            JobAttempt.n,
            Run.partition,
            Run.kernel,
            Run.impl,
            Run.variant,
            Run.threads,
            Run.gpus,
            Run.dtype,
            Run.spec,
            Campaign.name,
        )
        .join(newest, (JobAttempt.run_id == newest.c.run_id) & (JobAttempt.attempt == newest.c.a))
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .order_by(JobAttempt.id)
    )
    with led.session() as s:
        if campaigns:
            ids = [q.require_campaign(s, name).id for name in campaigns]
            stmt = stmt.where(Campaign.id.in_(ids))
        out = []
        for (
            aid,
            job_id,
            state,
            started,
            ended,
            wall,
            output,
            only,
            partition,
            kernel,
            impl,
            variant,
            threads,
            gpus,
            dtype,
            spec,
            name,
        ) in s.execute(stmt):
            asked = only or spec.get("n") or []  # a rerun of the missing n runs only those (attempt.n)
            label = spec_label(spec, partition, kernel, impl, variant, dtype, threads, gpus)
            out.append(
                JobView(aid, job_id, name, label, state, _aware(started), _aware(ended), wall, len(asked), output)
            )
        return out


def n_reached(output: str) -> int:
    """How many distinct n the job's CSV holds so far (0 when there is none yet)."""
    for suffix in PARTIAL_SUFFIXES:
        path = Path(output + suffix)
        try:
            with path.open(newline="") as fh:
                return len({row.get("n") for row in csv.DictReader(fh) if row.get("n")})
        except (OSError, csv.Error, UnicodeDecodeError):
            continue
    return 0


def _duration(v: JobView) -> float | None:
    if v.started is None or v.ended is None:
        return None
    return max(0.0, (v.ended - v.started).total_seconds())


def eta_seconds(views: Sequence[JobView], at: datetime) -> float | None:
    """Time left: the mean duration of finished jobs for each pending job and
    what remains of each running one, shared among the jobs running now.
    None when there is nothing honest to go by: no job has finished yet, or a
    running job has already run longer than that mean (its end is unknown, and
    an ETA of 0:00 while jobs still run would claim they are done)."""
    done = [d for d in (_duration(v) for v in views if v.state.finished) if d is not None]
    if not done:
        return None
    mean = sum(done) / len(done)
    running = [v for v in views if v.state is JobState.RUNNING]
    pending = sum(1 for v in views if v.state in (JobState.PENDING, JobState.UNKNOWN))
    left = pending * mean
    for v in running:
        elapsed = (at - v.started).total_seconds() if v.started else 0.0
        if elapsed >= mean:
            return None
        left += mean - elapsed
    return left / max(1, len(running))


def eta_text(views: Sequence[JobView], at: datetime) -> str:
    """The ETA line: a time only when eta_seconds has one; otherwise why not,
    and the latest end the running jobs' walltimes allow."""
    eta = eta_seconds(views, at)
    if eta is not None:
        return f"ETA {clock_text(eta)}"
    running = [v for v in views if v.state is JobState.RUNNING]
    if not any(v.state.finished and _duration(v) is not None for v in views):
        why = "ETA unknown until the first job finishes"
    else:
        why = f"ETA unknown: {len(running)} running job(s), some past the finished jobs' mean duration"
    if running:
        limit = max(v.walltime_min * 60 - ((at - v.started).total_seconds() if v.started else 0.0) for v in running)
        why += f"; the running ones end within their walltime ({clock_text(max(0.0, limit))})"
    return why


def clock_text(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def open_jobs(views: Sequence[JobView]) -> int:
    return sum(1 for v in views if not v.state.finished)


def failed(views: Sequence[JobView]) -> list[JobView]:
    """Finished without a usable result (NOT_SUBMITTED too: it never ran)."""
    return [v for v in views if v.state.finished and not v.state.usable]


def _render(views: Sequence[JobView], at: datetime, chains: Sequence[str] = ()) -> Any:
    from rich.console import Group  # lazy: start-up time (docs/style.md#structure)
    from rich.table import Table
    from rich.text import Text

    states = sorted({v.state.value for v in views})
    per = Table(title="states per campaign")
    per.add_column("campaign")
    for st in states:
        per.add_column(st, justify="right")
    by_camp: dict[str, Counter[str]] = {}
    for v in views:
        by_camp.setdefault(v.campaign, Counter())[v.state.value] += 1
    for name, counts in by_camp.items():
        per.add_row(name, *(str(counts.get(st, 0)) for st in states))
    run = Table(title="running")
    for col in ("job_id", "campaign", "run", "elapsed / walltime", "n reached"):
        run.add_column(col)
    running = [v for v in views if v.state is JobState.RUNNING]
    for v in running[:LIVE_ROWS]:
        elapsed = (at - v.started).total_seconds() if v.started else 0.0
        run.add_row(
            v.job_id or "-",
            v.campaign,
            v.label,
            f"{clock_text(elapsed)} / {clock_text(v.walltime_min * 60)}",
            f"{n_reached(v.output)}/{v.n_total}",
        )
    if len(running) > LIVE_ROWS:
        run.add_row("…", "", f"{len(running) - LIVE_ROWS} more running", "", "")
    return Group(
        per,
        *(Text(line) for line in chains),
        run,  # Text: a name or reason is not markup
        f"{open_jobs(views)} open, {len(failed(views))} failed; {eta_text(views, at)}",
    )


def _summary_lines(views: Sequence[JobView]) -> list[str]:
    by_camp: dict[str, Counter[str]] = {}
    for v in views:
        by_camp.setdefault(v.campaign, Counter())[v.state.value] += 1
    return [
        f"campaign {name}: {sum(c.values())} runs: {', '.join(f'{k} {n}' for k, n in sorted(c.items()))}"
        for name, c in by_camp.items()
    ]


def _change_lines(
    before: dict[int, JobState], reached: dict[int, int], views: Sequence[JobView], at: datetime
) -> list[str]:
    """One line per state change, and one per n a running job reached
    (`reached` is updated in place), so a long job shows life in a log."""
    stamp = at.astimezone().strftime("%H:%M:%S")
    lines = []
    for v in views:
        old = before.get(v.attempt_id)
        if old is not v.state:  # first the state change, then how far the job got (never `n 4/4` before RUNNING)
            what = f"{old.value} -> {v.state.value}" if old is not None else v.state.value
            extra = ""
            if v.state.finished and _duration(v) is not None:
                extra = f" after {clock_text(_duration(v) or 0.0)}"
            lines.append(f"{stamp} {v.campaign} job {v.job_id or '-'} {v.label}: {what}{extra}")
        if v.state is JobState.RUNNING:
            got = n_reached(v.output)
            if got != reached.get(v.attempt_id, 0):
                reached[v.attempt_id] = got
                elapsed = (at - v.started).total_seconds() if v.started else 0.0
                lines.append(
                    f"{stamp} {v.campaign} job {v.job_id or '-'} {v.label}: n {got}/{v.n_total} reached, "
                    f"{clock_text(elapsed)} of {clock_text(v.walltime_min * 60)}"
                )
    return lines


def _say_failed_chains(lines: Sequence[str], told: set[str], say: Callable[[str], None]) -> None:
    """A failed build/preflight with its cause and log tail, as `status`
    prints it (campaign.commands.chain_sync), once: the runs' PREFLIGHT_FAILED
    alone does not say why."""
    block: list[str] = []
    for line in [*lines, ""]:
        if block and not line.startswith("    "):
            if block[0] not in told:
                told.add(block[0])
                for kept in block:
                    say(kept)
            block = []
        if line:
            block.append(line)


def watch(
    led: Ledger,
    campaigns: Sequence[str],
    *,
    sync: Callable[[Ledger, str | None], Any],
    interval: float,
    live: bool,
    say: Callable[[str], None] = print,
    warn: Callable[[str], None] | None = None,
) -> list[tuple[str, str]]:
    """Sync every `interval` seconds until no job of `campaigns` is open, but for the runs a
    stopped submit or rerun left unconfirmed (SyncReport.unconfirmed: no sync settles them; the
    sync's warning says how to send them). Progress goes to `say`, scheduler warnings to `warn`
    (default: `say`). Returns (job ID, state) of the jobs that ended failed and of those runs
    (never submitted), for the caller's stderr line and exit code 3."""
    warn = warn or say
    names = list(campaigns)
    before: dict[int, JobState] = {}
    reached: dict[int, int] = {}
    first = True
    warned: set[str] = set()
    told: set[str] = set()  # chain lines already said (each once)
    stranded: set[int] = set()  # attempts a stopped submit or rerun left: no sync settles them
    display = None
    if live:
        from rich.live import Live  # lazy: start-up time

        display = Live(refresh_per_second=2, transient=False)
        display.start()
    try:
        while True:
            targets: list[str | None] = list(names) or [None]
            stranded = set()
            for name in targets:
                report = sync(led, name)
                stranded |= set(getattr(report, "unconfirmed", ()))
                for w in getattr(report, "warnings", []):
                    if w not in warned:  # once, not every round
                        warned.add(w)
                        warn(f"warning: {w}")
                _say_failed_chains(getattr(report, "preflight", []), told, say)
            views = snapshot(led, names)
            chains = open_chain_lines(led, names)
            at = now()
            if display is not None:
                display.update(_render(views, at, chains))
            else:
                if first:  # where things stand, per campaign; then only what changes
                    for line in _summary_lines(views):
                        say(line)
                    before = {v.attempt_id: v.state for v in views if v.state is not JobState.RUNNING}
                stamp = at.astimezone().strftime("%H:%M:%S")
                for line in chains:
                    if line not in told:  # a chain's step changed state or reason
                        told.add(line)
                        say(f"{stamp} {line}")
                for line in _change_lines(before, reached, views, at):
                    say(line)
            first = False
            before = {v.attempt_id: v.state for v in views}
            if not open_jobs([v for v in views if v.attempt_id not in stranded]):
                break
            time.sleep(interval)
    finally:
        if display is not None:
            display.stop()
    counts = Counter(v.state.value for v in views)
    say(f"done: {', '.join(f'{k} {c}' for k, c in sorted(counts.items())) or 'no jobs'}")
    # runs one failed build/preflight kept back share its job ID: named once
    ended = failed(views) + [v for v in views if v.attempt_id in stranded]
    return list(dict.fromkeys((v.job_id or f"(run {v.label}, never submitted)", v.state.value) for v in ended))
