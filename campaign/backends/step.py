"""Build and preflight jobs as a backend sees them.

A step is one job that is not a run: the build job or the preflight job of a
partition. Backends submit it like a run (same partition, account, job
environment), with the job environment's module lines made fatal, and hold
the arrays behind it through `JobRequest.depends_on`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from campaign.plumbing.states import JobState


@dataclass
class StepRequest:
    kind: str  # "build" or "preflight"
    partition: str
    fn: Callable[[Any], Any]  # the job-side entry point (campaign.job.build / campaign.job.preflight)
    task: Any  # its picklable argument
    env: tuple[tuple[str, str], ...]  # the job environment's variables
    cpus: int
    gpus: int
    walltime_min: int
    job_name: str
    folder: str  # where the step's own files go
    depends_on: str | None = None  # job ID that must end COMPLETED first
    mem_gb: float | None = None  # --mem in GiB (campaign.planning.resources.step_allocation); None: the site's default
    describe: list[str] = field(default_factory=list)  # comment lines for --dry-run
    activate: list[str] = field(default_factory=list)  # the runs' Spack activation (campaign.planning.run_env)
    # preflight: (index of a program check, its run at the check's shape) of the programs that start
    # through the partition's launcher; the backend puts the launcher in front of their argv
    launched: tuple[tuple[int, Any], ...] = ()


@dataclass
class StepSubmitted:
    job_id: str
    stdout_path: str | None = None
    stderr_path: str | None = None
    state: JobState | None = None  # set when the backend ran the step to its end (local)
    reason: str | None = None
