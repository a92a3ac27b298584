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
    from submitit.slurm.slurm import _make_sbatch_string

    text: str = _make_sbatch_string(command=executor._submitit_command_str, folder=folder,
                                    map_count=tasks if tasks > 1 else None, **executor.parameters)
    return text


def recording_executor(folder: Path, python: str) -> Any:
    """A SlurmExecutor that keeps what sbatch printed for each submission.

    submitit keeps only the job ID of ``Submitted batch job N on cluster X``;
    with ``-M``/``--clusters`` (or SLURM_CLUSTERS) the cluster is the other
    half of the job's identity, so the answers are kept in
    ``executor.sbatch_answers`` for the backend to parse."""
    import submitit

    class _RecordingExecutor(submitit.SlurmExecutor):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.sbatch_answers: list[str] = []

        def _get_job_id_from_submission_command(self, string: bytes | str) -> str:  # type: ignore[override]
            text = string.decode(errors="replace") if isinstance(string, bytes) else string
            self.sbatch_answers.append(text)
            job_id: str = submitit.SlurmExecutor._get_job_id_from_submission_command(text)
            return job_id

    return _RecordingExecutor(folder=folder, python=python)
