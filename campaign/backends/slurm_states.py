"""Slurm's state spellings -> our JobState. Only the Slurm backend reads them."""

from __future__ import annotations

from campaign.states import JobState

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
