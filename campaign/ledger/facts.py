"""What `show` prints about a job, as plain facts of the ledger: filled by
either read path (campaign.ledger.sqlite_read without SQLAlchemy, the ORM's
campaign.cli.views), rendered once (campaign.cli.show_view). Standard
library only: `show --no-sync` imports it before anything heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from campaign.plumbing.states import JobState


@dataclass(frozen=True)
class AttemptFacts:
    """One job attempt's row (campaign.ledger.models.JobAttempt's columns that `show` prints)."""

    id: int
    attempt: int
    previous_id: int | None
    job_id: str | None
    state: JobState
    reason: str | None
    scheduler_cluster: str | None
    array_job_id: str | None
    array_index: int | None
    node: str | None
    exit_code: int | None
    walltime_min: int
    mem_gb: float | None
    alloc_cpus: int | None
    alloc_gpus: int | None
    n: list[Any] | None
    missing_n: list[Any] | None
    submitted_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    workdir: str
    output_path: str
    stdout_path: str | None
    stderr_path: str | None


@dataclass(frozen=True)
class StepFacts:
    """A build or preflight job (campaign.ledger.models.BuildStep/PreflightStep)."""

    job_id: str | None
    state: JobState
    reason: str | None
    folder: str
    key: str = ""  # a build's
    info: dict[str, Any] | None = None  # a build's


@dataclass(frozen=True)
class JobFacts:
    """Everything `show` and `show --format json|csv` print about a job ID (its newest attempt)."""

    attempt: AttemptFacts
    campaign: str
    cluster: str
    backend: str
    run_key: str
    kernel: str
    impl: str
    variant: str
    partition: str
    device: str
    dtype: str
    threads: int
    gpus: int
    spec: dict[str, Any]
    lineage: list[AttemptFacts]
    preflight: StepFacts | None  # None: submitted without the build/preflight chain
    build: StepFacts | None
    # the submit's provenance environment (a rerun's attempt: its run's first attempt's), where the user's
    # programs are recorded (campaign.planning.programs); None where the ledger holds none
    environment: dict[str, Any] | None
