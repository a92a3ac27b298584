"""Cancelling Slurm jobs: scancel (with -M for jobs on another cluster),
then wait until squeue no longer lists them.

Why wait: the ledger says CANCELLED only once the jobs stopped (Slurm
signals every process of the job, the kernel's own process group included),
so a cancel that returns has left nothing running that could still write.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from campaign.backends.base import JobRef
from campaign.backends.slurm_messages import error_line
from campaign.backends.slurm_run import run_slurm
from campaign.plumbing.errors import SchedulerError, one_line

_ALL_GONE = "Invalid job id specified"  # squeue's answer when none of the ids is known to the controller


def cancel_and_wait(groups: Mapping[str | None, Sequence[JobRef]], wait_s: float) -> None:
    """Cancel the jobs of each cluster (None: the local one), then wait at most `wait_s` for all to leave squeue."""
    for where, group in groups.items():
        ids = [r.job_id for r in group]
        flag = ["-M", where] if where else []
        for i in range(0, len(ids), 1000):
            proc = run_slurm(["scancel", *flag, *ids[i : i + 1000]])
            if proc.returncode != 0:
                raise SchedulerError(f"scancel failed: {one_line(proc.stderr)}")
    deadline = time.monotonic() + wait_s
    for where, group in groups.items():
        left = [r.job_id for r in group]
        while left:
            try:
                left = [j for i in range(0, len(left), 1000) for j in _listed(left[i : i + 1000], where)]
                unanswered = None
            except SchedulerError as exc:  # a busy controller's timeout may pass: asked again until the deadline
                unanswered = str(exc)
            if not left:
                break
            if time.monotonic() > deadline:
                why = f"squeue could not say whether they stopped ({unanswered})" if unanswered else "still stopping"
                raise SchedulerError(
                    f"scancel sent, but {len(left)} job(s) {why} after "
                    f"{wait_s:.0f} s (e.g. {left[0]}); `campaign status` "
                    f"records them later"
                )
            time.sleep(1.0)


def _listed(ids: list[str], where: str | None = None) -> list[str]:
    """The IDs squeue still lists (in any state but gone). SchedulerError when
    squeue fails for another reason than knowing none of them: its silence
    then says nothing of whether they stopped."""
    flag = ["-M", where] if where else []
    proc = run_slurm(["squeue", *flag, "-h", "-r", "-o", "%i", "-j", ",".join(ids)])
    if proc.returncode != 0:
        if _ALL_GONE in proc.stderr + proc.stdout:
            return []  # the controller knows none of them any more
        raise SchedulerError(one_line(error_line(proc), 200))
    shown = set(proc.stdout.split())
    return [j for j in ids if j in shown]
