"""Job states: Slurm's, plus the two the ledger derives from a job's output."""

from __future__ import annotations

import enum


class JobState(str, enum.Enum):
    """State of one job attempt.

    Slurm's own states keep their Slurm spelling so a user can match them with
    sacct output; LOST_OUTPUT and CHECK_FAILED are ours (see DESIGN.md).
    """

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    CANCELLED = "CANCELLED"
    LOST_OUTPUT = "LOST_OUTPUT"
    CHECK_FAILED = "CHECK_FAILED"
    UNKNOWN = "UNKNOWN"

    @property
    def finished(self) -> bool:
        """True once the scheduler will not change the state any more."""
        return self not in (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)

    @property
    def rerunnable(self) -> bool:
        """`rerun --failed` takes every finished state but COMPLETED."""
        return self.finished and self is not JobState.COMPLETED


# Slurm spellings that map onto one of ours (sacct prints "CANCELLED by 0").
_SLURM_ALIASES: dict[str, JobState] = {
    "CONFIGURING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "RESIZING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "BOOT_FAIL": JobState.NODE_FAIL,
    "DEADLINE": JobState.TIMEOUT,
    "REVOKED": JobState.CANCELLED,
    "SPECIAL_EXIT": JobState.FAILED,
}


def from_slurm(text: str) -> JobState:
    """Translate a Slurm state string (sacct/squeue/scontrol) to a JobState."""
    word = text.strip().split(" ")[0].rstrip("+").upper()
    if word in JobState.__members__:
        return JobState[word]
    return _SLURM_ALIASES.get(word, JobState.UNKNOWN)
