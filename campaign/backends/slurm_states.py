"""Slurm's state spellings -> our JobState. Only the Slurm backend reads them."""

from __future__ import annotations

from campaign.plumbing.states import JobState

# Slurm's base states that are ours by the same name (slurm.schedmd.com/job_state_codes.html); a word
# that is neither one of them nor an alias below is a newer Slurm's (or a site's), and never one of
# the states campaign derives itself (LOST_OUTPUT, PREFLIGHT_FAILED ...), which no Slurm prints
_SLURM_BASE = frozenset(
    {"PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "CANCELLED"}
)
_SHOWN_WORD = 40  # characters of an unknown word a reason quotes: a hostile field stays one short line
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
    # a federation's origin keeps this copy of a job that a sibling cluster started: the job lives on
    # there (sacct --federation prints that record too, which wins: slurm_query.parse_sacct)
    "REVOKED": JobState.PENDING,
    # held in the queue, not finished: the job may still run (a user or an
    # admin releases it), so `status` keeps asking about it
    "SPECIAL_EXIT": JobState.PENDING,  # requeued in a special (held) state after a chosen exit code
    "RESV_DEL_HOLD": JobState.PENDING,  # held because its reservation was deleted
    "REQUEUE_CRON": JobState.PENDING,
    "EXPEDITING": JobState.PENDING,  # being requeued to run again first (expedited requeue)
    "POWER_UP_NODE": JobState.PENDING,  # allocated powered-down nodes, waiting for them to boot
    "UPDATE_DB": JobState.RUNNING,  # a passing flag while slurmctld reports to the database: ask again
    # flags of a start that failed on the node; Slurm requeues such a job (usually held), and sacct
    # shows the final base state if it is not: open until then, with the reason shown
    "LAUNCH_FAILED": JobState.PENDING,
    "RECONFIG_FAIL": JobState.PENDING,
}
# Slurm spellings whose job is pending but held or stuck (the reason tells the user why)
HELD = frozenset({"SPECIAL_EXIT", "RESV_DEL_HOLD", "REQUEUE_HOLD"})
_STUCK = {
    "LAUNCH_FAILED": "failed to launch on its node (LAUNCH_FAILED); Slurm requeues it",
    "RECONFIG_FAIL": "its node's configuration failed (RECONFIG_FAIL); Slurm requeues it",
    "REVOKED": "started on another cluster of the federation (REVOKED here)",
}


def _word(text: str) -> str:
    """The state word as Slurm printed it: ``CANCELLED by 0`` -> CANCELLED, ``RUNNING+`` -> RUNNING."""
    return text.strip().split(" ")[0].rstrip("+")


def from_slurm(text: str) -> JobState:
    """Translate a Slurm state string (sacct/squeue/scontrol) to a JobState;
    UNKNOWN (open: `status` asks again) for a word campaign does not know."""
    word = _word(text).upper()
    if word in _SLURM_BASE:
        return JobState[word]
    return _SLURM_ALIASES.get(word, JobState.UNKNOWN)


def revoked(text: str) -> bool:
    """A federation's copy of a job that runs on another cluster (never the job's own state)."""
    return _word(text).upper() == "REVOKED"


def held_reason(text: str) -> str | None:
    """A reason to show for held spellings that map onto PENDING, and for a
    word campaign does not know (kept open as UNKNOWN, the word named); else None."""
    word = _word(text).upper()
    if word in HELD:
        return f"held ({word})"
    if word not in _SLURM_BASE and word not in _SLURM_ALIASES:
        return f"Slurm state {_word(text)[:_SHOWN_WORD]!r} not known to campaign"
    return _STUCK.get(word)
