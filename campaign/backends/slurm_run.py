"""The one way campaign runs a Slurm command (sbatch excepted: submitit runs it).

Every squeue, sacct, scancel and scontrol call goes through `run_slurm`, so a
missing binary or a controller that does not answer is one SchedulerError
line (exit 1), never an internal error.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from campaign.errors import SchedulerError


def run_slurm(argv: Sequence[str], env: Mapping[str, str] | None = None,
              timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """Run one Slurm command as an argument list; the caller reads returncode."""
    environ = None if env is None else {**os.environ, **env}
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, env=environ, timeout=timeout_s,
                              check=False)
    except FileNotFoundError as exc:
        raise SchedulerError(f"{argv[0]} not found on PATH: is Slurm installed on this machine?") from exc
    except subprocess.TimeoutExpired as exc:
        raise SchedulerError(
            f"{argv[0]} did not answer within {timeout_s:g} s: is the Slurm controller/slurmdbd up?") from exc
