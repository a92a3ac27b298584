"""The line for a program that could not be started at all.

Why: in a container the first word of the command is the runtime (podman,
ch-run, apptainer), not the program. A runtime missing on a node failed the
start with "cannot start podman", under the program's name ("/opt/pb/pb
exited with 127 ...: cannot start podman"), which sends the user to the
program. When the word that could not start is the run's container runtime,
the runtime is the subject of the line, with the node and the partition it
was expected on; the exit status stays 127, as a shell's for a command not
found.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

# "<runtime command>:<partition>" of a containerised run, set by the side that wraps it in its
# container (campaign.planning.run_env.runtime_env), in the environment of what starts it
RUNTIME_ENV = "CAMPAIGN_CONTAINER_RUNTIME"
NOT_STARTED = 127  # a shell's exit status for a command it cannot find or run


def cannot_start(argv: Sequence[str], exc: OSError, env: Mapping[str, str]) -> str:
    """Why `argv` did not start: its container runtime missing on this node, else the OS's reason."""
    command, _, partition = env.get(RUNTIME_ENV, "").partition(":")
    if command and argv and argv[0] == command and isinstance(exc, FileNotFoundError):
        return (
            f"{command}: not found on node {socket.gethostname()} "
            f"(the container runtime of partition {partition}): install it there or run without the container"
        )
    return f"cannot start {argv[0] if argv else '(no program)'}: {exc}"


def runtime_missing(line: str, env: Mapping[str, str]) -> bool:
    """Whether `line` (cannot_start's, maybe behind its writer's name: `campaign.job.fom: ...`) says
    the run's container runtime is missing: the runtime, not the program, is then the subject of
    what reports it."""
    command = env.get(RUNTIME_ENV, "").partition(":")[0]
    return bool(command) and f"{command}: not found on node " in line
