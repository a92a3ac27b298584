"""The only module that touches submitit's private API.

The batch script is rendered by submitit's own template (its #SBATCH lines,
signal handling and srun line), with our command in place of submitit's
pickle runner; `--dry-run` prints the same text that `sbatch` gets. If a
submitit upgrade moves this name, this is the one file to change (the
golden dry-run tests in tests/slurm/ fail first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def sbatch_script(params: dict[str, Any], command: str, log_folder: Path, tasks: int) -> str:
    """The batch script for `tasks` tasks (an array when > 1); logs go to
    `log_folder` as <job>_<task>_log.out/err (array: <array>_<index>_...)."""
    from submitit.slurm.slurm import _make_sbatch_string  # lazy: submitit only to render a script

    # submitit writes `--wckey=submitit` unless told otherwise: a site's accounting would
    # file every job under submitit's name, and a site that enforces WCKeys refuses a key
    # it does not know. No wckey; the job name names the campaign.
    text: str = _make_sbatch_string(command=command, folder=log_folder,
                                    map_count=tasks if tasks > 1 else None, **{"wckey": None, **params})
    return text
