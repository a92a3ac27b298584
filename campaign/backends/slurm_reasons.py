"""Why a pending job waits, as the controller says now.

sacct keeps the Reason slurmdbd last heard: ``Dependency`` long after the
dependency was met and the job waits on ``Resources`` or ``Priority``. A user
who reads that waits for a job that is not there. squeue asks slurmctld, so
the pending jobs sacct reported get squeue's Reason (one batched call), and
`jobs`, `status` and `status --watch` show the live one.
"""

from __future__ import annotations

from collections.abc import Mapping

from campaign.backends.slurm_fields import SlurmJobInfo, bare_reason
from campaign.backends.slurm_query import where_clusters
from campaign.backends.slurm_run import run_slurm
from campaign.plumbing.states import JobState

_NONE = frozenset({"", "None", "(null)", "N/A"})  # squeue's "no reason"


def live_reasons(
    found: dict[str, SlurmJobInfo],
    *,
    chunk: int = 1000,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60,
    clusters: str | None = None,
) -> dict[str, SlurmJobInfo]:
    """sacct's pending jobs with the Reason slurmctld gives now.

    One ``squeue -t PENDING -r -o %i|%r`` call per `chunk` arrays of pending
    jobs: two fields, split once per line (a 100,000-task pending array is
    100,000 lines). A job squeue no longer lists as pending keeps sacct's
    answer, and so does every job when squeue fails (the states are sacct's
    either way)."""
    pending = list(dict.fromkeys(k.split("_", 1)[0] for k, v in found.items() if v.state is JobState.PENDING))
    if not pending:
        return found
    out = dict(found)
    for i in range(0, len(pending), chunk):
        proc = run_slurm(
            [
                "squeue",
                *where_clusters(clusters),
                "-h",
                "-r",
                "-t",
                "PENDING",
                "-o",
                "%i|%r",
                "-j",
                ",".join(pending[i : i + chunk]),
            ],
            env,
            timeout_s,
        )
        if proc.returncode != 0:
            continue  # e.g. every job of the chunk just left the queue: sacct's reason stands
        for line in proc.stdout.splitlines():
            job_id, _, reason = line.partition("|")
            old = out.get(job_id)
            reason = bare_reason(reason) or ""
            if old is None or old.state is not JobState.PENDING or reason in _NONE or reason == old.reason:
                continue
            # the fields in order, not dataclasses.replace: 100,000 tasks of a pending array at scale
            out[job_id] = SlurmJobInfo(
                old.job_id, old.state, old.exit_code, old.signal, old.node, old.start, old.end, reason
            )
    return out
