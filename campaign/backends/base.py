"""The one interface every backend fills (local processes, Slurm).

Backends speak our types at their edges: they take `JobRequest`s and return
`Submitted` / `JobStatus` records; only the backend module itself knows
submitit's keyword arguments and the scheduler's words.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from campaign.backends.step import StepRequest, StepSubmitted
from campaign.config.schema import ClusterSpec
from campaign.job.task import JobTask
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.states import JobState


@dataclass
class JobRequest:
    """One attempt to submit (already recorded in the ledger)."""

    attempt_id: int
    run: RunSpec
    task: JobTask
    walltime_min: int
    mem_gb: float | None
    job_name: str
    comment: str
    depends_on: str | None = None  # a job ID (the partition's preflight) that must end COMPLETED first


@dataclass
class Submitted:
    attempt_id: int
    job_id: str
    array_job_id: str | None = None
    array_index: int | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    cluster: str | None = None  # the scheduler's cluster that holds the job (None: the local one)
    cpus: int | None = None  # the allocation the job asked for, recorded with the attempt
    gpus: int | None = None
    # when it was submitted, where that was before its record (a job found again after the submitter
    # died: its manifest's time); None: now, as it is recorded
    submitted_at: datetime | None = None


@dataclass
class JobRef:
    """What a backend needs to find a job's state again."""

    attempt_id: int
    job_id: str
    workdir: str
    submitted_at: datetime | None
    walltime_min: int
    cluster: str | None = None  # the scheduler's cluster that holds the job


@dataclass
class JobStatus:
    state: JobState
    exit_code: int | None = None
    node: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    reason: str | None = None
    # exit_code is already the kernel's own, from the job's exit record: a backend that read
    # that record to know the state says so, and sync does not read it a second time.
    kernel_code: bool = False
    machine: dict[str, Any] | None = None  # the exit record's state of the machine (campaign.job.machine)


@dataclass
class QueryResult:
    statuses: dict[int, JobStatus]  # by attempt id
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NodeJob:
    """A job that held CPUs of some nodes for a while (any user's, as far as
    the scheduler shows them): what a shared-node check adds up."""

    job_id: str
    nodes: tuple[str, ...]
    cpus: int  # CPUs allocated over all its nodes
    start: datetime  # as the scheduler printed it (naive local time)
    end: datetime | None  # None while it runs


OnSubmitted = Callable[[list[Submitted]], None]
ProgressHook = Callable[[int, int, str], None]  # done, total, label of the job just finished


class Backend(abc.ABC):
    """Submit, query, cancel. `submit` reports each chunk through `on_submitted`
    as soon as the scheduler answered, so the ledger never misses a job ID."""

    name: str
    progress: ProgressHook | None = None  # called by backends whose submit waits for the jobs

    def __init__(self, cluster: ClusterSpec, folder: Path, python: str | None = None) -> None:
        self.cluster = cluster
        self.folder = folder
        self.python = python or sys.executable  # interpreter the job side runs under

    @abc.abstractmethod
    def render(self, requests: Sequence[JobRequest]) -> list[str]:
        """The exact job scripts `submit` would use (for --dry-run)."""

    def batches(self, requests: Sequence[JobRequest]) -> list[list[JobRequest]]:
        """How `submit` would group the requests into submissions (arrays);
        by default each request is its own job."""
        return [[r] for r in requests]

    @abc.abstractmethod
    def submit(self, requests: Sequence[JobRequest], on_submitted: OnSubmitted) -> None: ...

    def recover(self, requests: Sequence[JobRequest]) -> list[Submitted]:
        """Jobs of these (recorded, never confirmed) attempts that the scheduler
        has anyway; by default none can exist."""
        return []

    @abc.abstractmethod
    def query(self, refs: Sequence[JobRef]) -> QueryResult: ...

    @abc.abstractmethod
    def cancel(self, refs: Sequence[JobRef]) -> None: ...

    def node_jobs(self, nodes: Sequence[str], since: datetime, until: datetime,
                  cluster: str | None = None) -> tuple[list[NodeJob], list[str]]:
        """Jobs (of every user the scheduler lets us see) that ran on these
        nodes between `since` and `until` (naive local times), and warnings;
        by default the backend knows of none (the local backend's own jobs
        are all in the ledger)."""
        return [], []

    def render_step(self, step: StepRequest) -> str:
        """The job script of a build or preflight step (for --dry-run)."""
        raise NotImplementedError(f"backend {self.name} has no build/preflight steps")

    def submit_step(self, step: StepRequest) -> StepSubmitted:
        """Submit (or, without a scheduler, run) one build or preflight step."""
        raise NotImplementedError(f"backend {self.name} has no build/preflight steps")
