"""One field of Slurm's text as our value: timestamps, exit codes, array
specs and job IDs, a pending job's reason, and SlurmJobInfo, the job as
Slurm last reported it, that sacct, squeue and the node query fill alike.

Slurm spells "no value" several ways (``Unknown``, ``None``, ``(null)``,
``N/A``); every reader of its text goes through these parsers, so each
spelling is known in one place.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from campaign.backends.slurm_states import held_reason
from campaign.plumbing.errors import BadInputError, SchedulerError
from campaign.plumbing.states import JobState

_JOB_ID_RE = re.compile(r"^\d+(?:_\d+)?$")
# a pending array's tasks; SLURM_BITSTR_LEN may cut the list short with "..." (and the bracket)
_ARRAY_RANGE_RE = re.compile(r"^(?P<base>\d+)_\[(?P<spec>[^\]]*)\]?$")
# one element of an array spec: an index, a range, a stepped range (ASCII digits only, as Slurm prints)
_SPEC_PART_RE = re.compile(r"^(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+)(?::(?P<step>[0-9]+))?)?$")
# MaxArraySize is at most 4,000,001 (slurm.conf(5)): no task index is above this
_MAX_TASK_INDEX = 4_000_000
_EMPTY = {"", "None", "none", "Unknown", "N/A", "(null)", "None assigned"}


@dataclass(frozen=True)
class SlurmJobInfo:
    """One job (or array task) as Slurm last reported it."""

    job_id: str  # "1234", or "1234_5" for an array task (ArrayJobID_TaskID, as sacct prints)
    state: JobState  # OOM seen on a step wins over FAILED on the job line
    exit_code: int | None  # exit status of the batch script; None when Slurm gave none
    signal: int | None  # signal number of "exit:signal" (0 = none); Slurm uses 125 for OOM
    node: str | None  # NodeList, None before the job got a node
    start: datetime | None  # local time, as Slurm prints it (naive)
    end: datetime | None  # None while the job has not ended
    reason: str | None  # Slurm's Reason while PENDING (e.g. JobHeldUser, Dependency), else None


def optional(text: str) -> str | None:
    """A field's text, or None for any of Slurm's spellings of no value."""
    text = text.strip()
    return None if text in _EMPTY else text


def parse_time(text: str) -> datetime | None:
    """Slurm's ISO timestamps; ``Unknown``/``None``/empty give None."""
    value = optional(text)
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def slurm_time(instant: datetime) -> str:
    """A time as sacct's -S/-E read it: local wall-clock time to the second (an aware
    instant is turned into local time first; a naive one is taken as local already)."""
    local = instant.astimezone() if instant.tzinfo is not None else instant
    return local.strftime("%Y-%m-%dT%H:%M:%S")


def parse_exit_code(text: str) -> tuple[int | None, int | None]:
    """``"3:0"`` -> (3, 0). Anything else -> (None, None)."""
    code, sep, sig = text.strip().partition(":")
    if not sep or not code.isdigit() or not sig.isdigit():
        return None, None
    return int(code), int(sig)


def real_signal(number: int | None) -> int | None:
    """The signal of an ``exit:signal`` where it is one: Slurm's 125 (its mark of
    an OOM kill) and 0 (none) are not."""
    return number if number and number in signal.valid_signals() else None


def exit_status(code: int | None, number: int | None) -> int | None:
    """A job's end as the ledger stores it, the way the job's own exit record
    gives its program's (Python's returncode): -N where signal N ended it
    (sacct's ``0:9``), else its exit code."""
    sig = real_signal(number)
    return -sig if sig else code


def expand_array_spec(spec: str) -> list[int]:
    """Task indexes of an array spec as Slurm prints it: ``3-9``, ``1,4-6``,
    ``0-9:2`` (step) and ``1-3%1`` (throttle, ignored). ValueError for a part
    Slurm never prints (``9-3``, ``0-9:0``, ``1-0x``) or an index past the
    largest array Slurm allows."""
    spec = spec.split("%", 1)[0]
    parts = [p for p in spec.split(",") if p]
    if spec.endswith("..."):
        # cut by SLURM_BITSTR_LEN: the last element may be cut mid-number; keep
        # only the tasks listed in full (the others keep their last known state)
        parts = parts[:-1]
    out: list[int] = []
    for part in parts:
        match = _SPEC_PART_RE.match(part)
        if match is None:
            raise ValueError(f"{part!r} is no task index, range or stepped range")
        lo = int(match["lo"])
        hi = int(match["hi"] or lo)
        step = int(match["step"] or 1)
        if hi < lo or step == 0 or hi > _MAX_TASK_INDEX:
            raise ValueError(f"{part!r} is no range Slurm prints (indexes 0 to {_MAX_TASK_INDEX}, low to high)")
        out.extend(range(lo, hi + 1, step))
    return out


def expand_job_id(job_id: str) -> list[str]:
    """``"9_[0-2]"`` -> ``["9_0", "9_1", "9_2"]``; any other id -> ``[job_id]``.
    SchedulerError naming the id for a range that cannot be read."""
    match = _ARRAY_RANGE_RE.match(job_id)
    if match is None:
        return [job_id]
    try:
        tasks = expand_array_spec(match["spec"])
    except ValueError as exc:
        raise SchedulerError(f"Slurm printed an array job id campaign cannot read: {job_id[:80]!r}: {exc}") from None
    return [f"{match['base']}_{i}" for i in tasks]


def validate_job_ids(job_ids: Iterable[str]) -> list[str]:
    """Deduplicated ids in first-seen order; a malformed id is bad input (sacct
    would reject the whole batch with ``Bad job/step specified``)."""
    seen: dict[str, None] = {}
    for raw in job_ids:
        job_id = str(raw).strip()
        if not _JOB_ID_RE.match(job_id):
            raise BadInputError(f"not a Slurm job id: {raw!r} (expected 1234 or 1234_5)")
        seen.setdefault(job_id, None)
    return list(seen)


def pending_reason(state: JobState, reason: str, state_text: str) -> str | None:
    """Slurm's Reason is why a job waits; sacct keeps printing the last one
    (``Dependency``) after the job ran and ended, so it is passed on only
    while the job is pending (``OUT_OF_MEMORY (Dependency)``). A state word
    campaign does not know (UNKNOWN) is the reason itself."""
    if state is JobState.UNKNOWN:
        return held_reason(state_text)
    if state is not JobState.PENDING:
        return None
    return bare_reason(reason) or held_reason(state_text)


def bare_reason(text: str) -> str | None:
    """A Reason as squeue's %r prints it: ``Resources``, where squeue's
    NODELIST(REASON) column and some sites' sacct print ``(Resources)``."""
    value = optional(text)
    if value is not None and value.startswith("(") and value.endswith(")"):
        value = optional(value[1:-1])
    return value
