"""The only module that touches submitit's private API.

`--dry-run` must print the exact script `sbatch` would get, and submitit has
no public call that renders it without submitting. If a submitit upgrade
moves these names, this is the one file to change (the golden dry-run tests
in tests/slurm/ fail first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def sbatch_script(executor: Any, folder: Path, tasks: int) -> str:
    """The batch script submitit would submit for `tasks` tasks (an array when > 1)."""
    from submitit.slurm.slurm import _make_sbatch_string  # lazy: submitit only for a dry run

    text: str = _make_sbatch_string(command=executor._submitit_command_str, folder=folder,
                                    map_count=tasks if tasks > 1 else None, **executor.parameters)
    return text
