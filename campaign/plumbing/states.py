"""Job states: Slurm's, plus those the ledger derives (from a job's output, its
build/preflight chain, or a refused submission)."""

from __future__ import annotations

import enum


class JobState(str, enum.Enum):
    """State of one job attempt.

    Slurm's own states keep their Slurm spelling so a user can match them with
    sacct output; LOST_OUTPUT, CHECK_FAILED, PROFILE_FAILED and PREFLIGHT_FAILED are ours
    (docs/design.md#job-states).
    How a scheduler's own spellings map onto these is the backend's business
    (backends/slurm_states.py).
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
    PREFLIGHT_FAILED = "PREFLIGHT_FAILED"  # ours: the partition's build or preflight failed; the job never ran
    PROFILE_FAILED = "PROFILE_FAILED"  # timings ingested and counted; counters missing (reason says why)
    # ours: the scheduler refused the submission (its error in the reason); no job exists.
    # The same `submit` (or any `rerun` of the campaign) sends it again, after a look in the
    # scheduler by job name, so a submission that did reach it is recorded, not repeated.
    NOT_SUBMITTED = "NOT_SUBMITTED"
    UNKNOWN = "UNKNOWN"

    @property
    def finished(self) -> bool:
        """True once the scheduler will not change the state any more."""
        return self not in (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)

    @property
    def usable(self) -> bool:
        """Its timings count in analysis: COMPLETED, or PROFILE_FAILED (only
        the counters are missing)."""
        return self in (JobState.COMPLETED, JobState.PROFILE_FAILED)

    @property
    def rerunnable(self) -> bool:
        """`rerun --failed` takes every finished state but COMPLETED (and
        NOT_SUBMITTED: never ran; submit or rerun sends that same attempt)."""
        return self.finished and self not in (JobState.COMPLETED, JobState.NOT_SUBMITTED)


# Finished without a result, but possibly with the rows of some n: the finished n of a job stopped by
# its walltime, a cancel or its memory limit, or failed at a later n, are measurements too
# (campaign.results.partial reads them; rerun runs only the missing n).
PARTIAL_STATES: frozenset[JobState] = frozenset({JobState.TIMEOUT, JobState.CANCELLED, JobState.OUT_OF_MEMORY,
                                                  JobState.FAILED})

# What `rerun --failed` takes and `jobs --failed` lists: every failed state but
# CANCELLED (stopped on purpose; ask for it with --state CANCELLED).
FAILED_STATES: tuple[JobState, ...] = tuple(st for st in JobState if st.rerunnable and st is not JobState.CANCELLED)

# States the scheduler may still change: what `status` asks it about.
OPEN_STATES: tuple[JobState, ...] = (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)
