"""What a job needs on the node, and nothing else: picklable, no config objects."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobTask:
    """One kernel program invocation with its environment and folder.

    `record_env_prefixes` names the scheduler's own variables worth keeping in
    job.json (the Slurm backend sets it); the job side knows no scheduler.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    workdir: str
    output_csv: str
    stack_unlimited: bool
    record_env_prefixes: tuple[str, ...] = ()
    label: str = ""  # the run label, printed first in the job's own output (array tasks share one name)
    # ranks the launcher starts (campaign.job.rank); > 1: each must leave an exit record in `rank_records`
    ranks: int = 1
    rank_records: str = ""
    # the commands the launcher starts its own daemons with, which may end just after it returned
    # (Open MPI's srun of its orted): not left running by the program (campaign.job.runner)
    daemons: tuple[str, ...] = ()
