"""Why a pending job waits, as the controller says now.

sacct keeps the Reason slurmdbd last heard: ``Dependency`` long after the
dependency was met and the job waits on ``Resources`` or ``Priority``. A user
who reads that waits for a job that is not there. squeue asks slurmctld, so
the pending jobs sacct reported get squeue's Reason (one batched call), and
`jobs`, `status` and `status --watch` show the live one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from campaign.backends.slurm_query import SQUEUE_FIELDS, SlurmJobInfo, parse_squeue, where_clusters
from campaign.backends.slurm_run import run_slurm
from campaign.plumbing.states import JobState


def live_reasons(
    found: dict[str, SlurmJobInfo], *, chunk: int = 1000,
    env: Mapping[str, str] | None = None, timeout_s: float = 60, clusters: str | None = None,
) -> dict[str, SlurmJobInfo]:
    """sacct's pending jobs with the Reason slurmctld gives now.

    sacct keeps the Reason slurmdbd last heard (``Dependency`` long after the
    dependency was met and the job waits on ``Resources``); squeue asks the
    controller. One squeue call per `chunk` arrays of pending jobs; a job
    squeue no longer lists as pending keeps sacct's answer, and so does every
    job when squeue fails (the states are sacct's either way)."""
    pending = list(dict.fromkeys(k.split("_", 1)[0] for k, v in found.items() if v.state is JobState.PENDING))
    if not pending:
        return found
    fmt = ",".join(f"{name}:|" for name in SQUEUE_FIELDS)
    out = dict(found)
    for i in range(0, len(pending), chunk):
        proc = run_slurm(["squeue", *where_clusters(clusters), "-h", "-r", "-t", "PENDING", "-O", fmt,
                          "-j", ",".join(pending[i:i + chunk])], env, timeout_s)
        if proc.returncode != 0:
            continue  # e.g. every job of the chunk just left the queue: sacct's reason stands
        for _raw, _array, info in parse_squeue(proc.stdout):
            old = out.get(info.job_id)
            if old is not None and old.state is JobState.PENDING and info.reason:
                out[info.job_id] = replace(old, reason=info.reason)
    return out
