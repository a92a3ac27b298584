"""Job states from Slurm for `campaign status`: the only module that reads the
text of sacct, squeue and scontrol.

Why one module: Slurm prints states in several dialects (``CANCELLED by 0``,
``1234_[3-9%1]`` for pending array tasks, a PENDING job line whose batch step
already runs because the start record reaches slurmdbd late, OOM visible only
on a step line under srun). Keeping every quirk here lets the rest of the code
work with `SlurmJobInfo` and `JobState` only.

All queries are batched: one sacct call per chunk of job ids, one squeue call
for the fallback; never one call per job (campaigns hold 10,000s of jobs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from campaign.backends.slurm_components import join_components
from campaign.backends.slurm_fields import (
    SlurmJobInfo,
    expand_job_id,
    optional,
    parse_exit_code,
    parse_time,
    pending_reason,
    real_signal,
    slurm_time,
    validate_job_ids,
)
from campaign.backends.slurm_messages import (
    AccountingDisabledError,
    error_line,
    is_message,
    record_fields,
    sacct_failure,
    skipped_warning,
)
from campaign.backends.slurm_run import no_config_hint, run_slurm
from campaign.backends.slurm_states import from_slurm, revoked
from campaign.plumbing.clock import as_utc
from campaign.plumbing.errors import SchedulerError
from campaign.plumbing.states import JobState

SINCE_SLACK = timedelta(minutes=10)  # clocks of login node and controller may disagree by this much
SACCT_FIELDS = ("JobID", "State", "ExitCode", "NodeList", "Start", "End", "Reason")
# squeue -O fields with "|" as suffix: no padding, one separator per field.
SQUEUE_FIELDS = (
    "JobID",
    "ArrayJobID",
    "ArrayTaskID",
    "State",
    "Reason",
    "NodeList",
    "StartTime",
    "EndTime",
    "exit_code",
)
CLUSTER_HEADER = "CLUSTER: "  # squeue -M a,b: the line before each cluster's jobs
# sbatch's answer: --parsable's "ID" or "ID;cluster", or the plain "Submitted batch job ID [on cluster X]"
_PARSABLE_RE = re.compile(r"^(?P<id>[0-9]+)(?:;(?P<cluster>[^;\s]*))?$")
_SUBMITTED_RE = re.compile(r"^Submitted batch job (?P<id>[0-9]+)(?: on cluster (?P<cluster>[\w.-]+))?$")


# ---------------------------------------------------------------- sacct


@dataclass
class _Record:
    """A job line of sacct plus the states of the step lines printed under it."""

    fields: list[str]
    step_states: list[JobState]
    step_signals: list[int] = field(default_factory=list)  # of the batch step and srun's steps, in order


def _resolve(rec: _Record) -> SlurmJobInfo:
    job_id, state_text, exit_text, node, start, end, reason = rec.fields
    state = from_slurm(state_text)
    steps = rec.step_states
    if state is JobState.FAILED and JobState.OUT_OF_MEMORY in steps:
        # under srun the job line says FAILED 1:0 while step .0 says OUT_OF_MEMORY
        state = JobState.OUT_OF_MEMORY
    elif state is JobState.PENDING and JobState.RUNNING in steps:
        # the start record reached slurmdbd after the step's (recipe pitfall P9)
        state = JobState.RUNNING
    code, sig = parse_exit_code(exit_text)
    if sig == 0 and state.finished and state is not JobState.COMPLETED:
        # a step killed by signal N shows 0:N where the job line does not: srun passes it on as its own
        # exit code (job 9:0, step .0 0:9), and a cancelled job's line says 0:0 (its steps 0:15)
        inherited = next((n for n in rec.step_signals if code in (0, n)), None)
        code, sig = (0, inherited) if inherited else (code, sig)
    return SlurmJobInfo(
        job_id=job_id,
        state=state,
        exit_code=code,
        signal=sig,
        node=optional(node),
        start=parse_time(start),
        end=parse_time(end) if state.finished else None,
        reason=pending_reason(state, reason, state_text),
    )


def _run_order(rec: _Record, info: SlurmJobInfo) -> tuple[bool, datetime]:
    """Sort key among records of one id: a federation's REVOKED copy below any
    record of the job itself, then a run that has not started yet (the pending
    run after a requeue) as the newest."""
    return not revoked(rec.fields[1]), info.start if info.start is not None else datetime.max


def parse_sacct(text: str, notes: list[str] | None = None) -> dict[str, SlurmJobInfo]:
    """Parse ``sacct --parsable2 [--noheader] -o SACCT_FIELDS`` output; a
    line that is no record (slurm_messages.is_message) is read past, named in
    one warning added to `notes`.

    Step lines (``1234.batch``, ``1234_5.0``) belong to the job line printed
    just before them. When one id has several records (``-D`` after a requeue)
    the latest run wins: the latest Start, a not-yet-started run above all,
    the later line on a tie; a federation's REVOKED copy (the origin's record
    of a job a sibling cluster started) only where no other is. Pending array ranges
    are expanded into one entry per task; a task printed on its own line wins
    over the same task inside a range.
    """
    records: list[_Record] = []
    current: _Record | None = None
    skipped: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if is_message(line, "sacct"):
            skipped.append(line)
            continue
        fields = record_fields(line, len(SACCT_FIELDS))
        if len(fields) != len(SACCT_FIELDS):
            raise SchedulerError(f"unexpected sacct line (expected {len(SACCT_FIELDS)} fields): {line!r}")
        if fields[0] == SACCT_FIELDS[0]:
            continue  # header
        # a step line is ID.step; a cut array range ("1234_[0-9,1...]") has dots but is a job line
        base, dot, _step = fields[0].partition(".") if "[" not in fields[0] else (fields[0], "", "")
        if not dot:
            current = _Record(fields, [])
            records.append(current)
        elif current is not None and current.fields[0] == base:
            current.step_states.append(from_slurm(fields[1]))
            if _step == "batch" or _step.isdigit():  # (not .extern: the allocation's own, ended by Slurm)
                if (number := real_signal(parse_exit_code(fields[2])[1])) is not None:
                    current.step_signals.append(number)
    concrete: dict[str, SlurmJobInfo] = {}
    order: dict[str, tuple[bool, datetime]] = {}
    ranged: dict[str, SlurmJobInfo] = {}
    for rec in records:
        info = _resolve(rec)
        ids = expand_job_id(info.job_id)
        if ids == [info.job_id]:
            key = _run_order(rec, info)
            if info.job_id not in order or key >= order[info.job_id]:
                concrete[info.job_id], order[info.job_id] = info, key
        else:
            # the fields in order, not dataclasses.replace: a 1000-task pending range per array, 100,000 at scale
            same = (info.state, info.exit_code, info.signal, info.node, info.start, info.end, info.reason)
            for task_id in ids:
                ranged[task_id] = SlurmJobInfo(task_id, *same)
    skipped_warning("sacct", skipped, notes)
    return {**ranged, **join_components(concrete)}


def parse_sbatch(stdout: str) -> tuple[str, str | None] | None:
    """The job ID and cluster (None: sbatch named none) of sbatch's answer; None when it gave no ID.
    The last line that is an answer wins: a site's wrapper may print a banner or a notice around
    Slurm's own line, and a queued job taken for a refused one is a job nobody follows."""
    for line in reversed(stdout.splitlines()):
        match = _PARSABLE_RE.match(line.strip()) or _SUBMITTED_RE.match(line.strip())
        if match is not None:
            return match["id"], match["cluster"] or None
    return None


def where_clusters(clusters: str | None) -> list[str]:
    return ["-M", clusters] if clusters else []


def single_cluster(clusters: str | None) -> str | None:
    """The cluster a job must be on when exactly one was asked for."""
    if clusters and "," not in clusters:
        return clusters.strip()
    return None


def since_option(since: datetime | None) -> list[str]:
    """sacct's ``-S`` for jobs submitted at or after an instant, in the local
    time sacct reads, less SINCE_SLACK for the clocks of login node and
    controller. Without it sacct answers a job id with every job that ever
    had it: a controller whose state was reset, or job ids wrapped at
    MaxJobId, give an old job's record for a new job not in accounting yet."""
    if since is None:
        return []
    instant = as_utc(since)
    assert instant is not None
    return ["-S", slurm_time(instant - SINCE_SLACK)]


def query_sacct(
    job_ids: Sequence[str],
    *,
    chunk: int = 1000,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60,
    clusters: str | None = None,
    since: datetime | None = None,
    notes: list[str] | None = None,
) -> dict[str, SlurmJobInfo]:
    """States of the given jobs from accounting, one sacct call per `chunk` ids
    (a warning in `notes` for lines among them that are no record: parse_sacct).

    An array id (``1234``) returns all its tasks (``1234_0`` ...), as sacct
    does; a raw task id returns that task under its ``ArrayJobID_TaskID``
    name. Ids sacct does not know yet (just submitted) are absent. `env` is
    laid over os.environ (e.g. ``{"SLURM_CONF": ...}``). `since`: the
    earliest submission among them (since_option): jobs that ended before it
    are not theirs.
    Raises AccountingDisabledError without slurmdbd, SchedulerError when sacct fails.
    """
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    ids = validate_job_ids(job_ids)
    # A task of an array that is still pending as a whole (never started, or
    # cancelled before it started) is invisible under its own id: sacct prints
    # the range 1234_[3-9] only when asked for the array 1234. So tasks are
    # asked for through their array, and the answer is cut back to what was asked.
    tasks = {i for i in ids if "_" in i}
    widened = {t.split("_", 1)[0] for t in tasks} - set(ids)
    query = list(dict.fromkeys(i.split("_", 1)[0] for i in ids))
    found: dict[str, SlurmJobInfo] = {}
    for i in range(0, len(query), chunk):
        # --federation: in a federation, the record of the sibling cluster that runs a job (the
        # origin keeps a REVOKED copy); the same answer outside one (checked on Slurm 22.05)
        argv = [
            "sacct",
            *where_clusters(clusters),
            "--federation",
            *since_option(since),
            "-j",
            ",".join(query[i : i + chunk]),
            "--parsable2",
            "--noheader",
            "-o",
            ",".join(SACCT_FIELDS),
        ]
        proc = run_slurm(argv, env, timeout_s)
        if proc.returncode != 0:
            raise sacct_failure(proc)
        found.update(parse_sacct(proc.stdout, notes))
    return {k: v for k, v in found.items() if k in tasks or k.split("_", 1)[0] not in widened}


# ---------------------------------------------------------------- squeue fallback


def parse_squeue(text: str, notes: list[str] | None = None) -> list[tuple[str, str, SlurmJobInfo]]:
    """Parse ``squeue -h -r -O <SQUEUE_FIELDS each with suffix |>``; a line
    that is no record is read past, as parse_sacct does.

    Returns (raw job id, array job id or "", info) per line; info.job_id is the
    name sacct would print (``ArrayJobID_TaskID`` for array tasks).
    exit_code is the raw wait status (768 = exit 3, 15 = signal 15).
    """
    rows: list[tuple[str, str, SlurmJobInfo]] = []
    n = len(SQUEUE_FIELDS)
    skipped: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(CLUSTER_HEADER):
            continue  # asked of several clusters (-M a,b), squeue heads each one's jobs with its name
        if is_message(line, "squeue"):
            skipped.append(line)
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < n:
            raise SchedulerError(f"unexpected squeue line (expected {n} fields): {line!r}")
        raw_id, array_id, task_id, state_text, reason, node, start, end, status = fields[:n]
        is_task = task_id.isdigit() and array_id not in ("", "N/A")
        name = f"{array_id}_{task_id}" if is_task else raw_id
        state = from_slurm(state_text)
        code: int | None = None
        sig: int | None = None
        if status.isdigit():  # Slurm < 23.02: the raw wait status
            code, sig = (int(status) >> 8) & 0xFF, int(status) & 0x7F
        elif ":" in status:  # Slurm >= 23.02 prints "exit:signal" like sacct
            code, sig = parse_exit_code(status)
        info = SlurmJobInfo(
            job_id=name,
            state=state,
            exit_code=code,
            signal=sig,
            node=optional(node),
            # squeue prints expected times for jobs that have not started/ended
            start=parse_time(start) if state is not JobState.PENDING else None,
            end=parse_time(end) if state.finished else None,
            reason=pending_reason(state, reason, state_text),
        )
        rows.append((raw_id, array_id if is_task else "", info))
    skipped_warning("squeue", skipped, notes)
    return rows


def query_squeue_fallback(
    job_ids: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60,
    clusters: str | None = None,
    notes: list[str] | None = None,
) -> dict[str, SlurmJobInfo]:
    """States from slurmctld's memory when accounting is off: one
    ``squeue -t all -r`` call for every job, filtered here.

    Only jobs that ended less than MinJobAge seconds ago (300 s on the test
    cluster) are still there; older ones are absent from the result.
    """
    ids = validate_job_ids(job_ids)
    fmt = ",".join(f"{name}:|" for name in SQUEUE_FIELDS)
    proc = run_slurm(["squeue", *where_clusters(clusters), "-t", "all", "-h", "-r", "-O", fmt], env, timeout_s)
    if proc.returncode != 0:
        raise SchedulerError(
            f"squeue failed (exit {proc.returncode}): {error_line(proc)}; "
            "check that slurmctld is running and SLURM_CONF names this cluster"
        )
    wanted = set(ids)
    found: dict[str, SlurmJobInfo] = {}
    for raw_id, array_id, info in parse_squeue(proc.stdout, notes):
        if info.job_id in wanted or raw_id in wanted or array_id in wanted or raw_id.partition("+")[0] in wanted:
            found[info.job_id] = info  # (LEADER+K: a heterogeneous job's component)
    return join_components(found)


def query_states(
    job_ids: Sequence[str],
    *,
    chunk: int = 1000,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60,
    clusters: str | None = None,
    since: datetime | None = None,
) -> tuple[dict[str, SlurmJobInfo], list[str]]:
    """States from sacct (of jobs submitted since `since`: query_sacct);
    without accounting, from squeue with a warning.

    Returns (states by job id, warnings for the user). SchedulerError when
    Slurm cannot be reached at all.
    """
    notes: list[str] = []  # lines Slurm printed among the records (the same in every chunk: named once)
    try:
        found = query_sacct(
            job_ids, chunk=chunk, env=env, timeout_s=timeout_s, clusters=clusters, since=since, notes=notes
        )
        return found, list(dict.fromkeys(notes))
    except AccountingDisabledError as exc:
        try:
            found = query_squeue_fallback(job_ids, env=env, timeout_s=timeout_s, clusters=clusters, notes=notes)
        except SchedulerError as squeue_exc:
            raise SchedulerError(
                f"Slurm unreachable: {exc} (is slurmdbd up?), and the squeue fallback failed too: {squeue_exc}"
            ) from None
        warning = (
            f"{exc}: job states come from squeue, which forgets jobs MinJobAge "
            "seconds after they end; older jobs keep their last known state"
        )
        return found, [warning, *dict.fromkeys(notes)]


# ---------------------------------------------------------------- config


def parse_max_array_size(text: str) -> int:
    """MaxArraySize from ``scontrol show config`` text."""
    match = re.search(r"^MaxArraySize\s*=\s*(\d+)", text, re.MULTILINE)
    if match is None:
        raise SchedulerError("scontrol show config printed no MaxArraySize")
    return int(match[1])


def max_array_size(env: Mapping[str, str] | None = None, timeout_s: float = 30) -> int:
    """The cluster's MaxArraySize: array indexes must stay below it, so arrays
    are chunked to at most this many tasks (indexes 0..MaxArraySize-1)."""
    proc = run_slurm(["scontrol", "show", "config"], env, timeout_s)
    if proc.returncode != 0:
        hint = no_config_hint(proc.stderr + proc.stdout)
        if hint:
            raise SchedulerError(hint)
        raise SchedulerError(
            f"scontrol show config failed (exit {proc.returncode}): {error_line(proc)}; is slurmctld running?"
        )
    return parse_max_array_size(proc.stdout)
