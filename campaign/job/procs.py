"""Process groups of kernels: how a job's whole process tree is found and stopped.

The runner starts every kernel in its own session, so its process group id is
the kernel's PID and every process the kernel starts belongs to it. Stopping
a job is then one `killpg`, and "no process left" is checkable by scanning
/proc for members of that group (a zombie has already stopped). Standard
library only: this runs on compute nodes (docs/design.md#layering).
"""

from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(check: object, timeout_s: float, poll_s: float = 0.05) -> bool:
    """Poll `check()` (True while something is alive) until False or timeout."""
    deadline = time.monotonic() + timeout_s
    while check():  # type: ignore[operator]
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def stop_group(pgid: int, grace_s: float = 5.0) -> bool:
    """SIGTERM the group, SIGKILL what is left after `grace_s`; True once no
    member is left."""
    if not group_members(pgid):
        return True
    signal_group(pgid, signal.SIGTERM)
    if wait_gone(lambda: group_members(pgid), grace_s):
        return True
    signal_group(pgid, signal.SIGKILL)
    return wait_gone(lambda: group_members(pgid), grace_s)


def stop_the_rest_of_my_group() -> list[int]:
    """Where this process leads its group (as a kernel the runner started does), SIGKILL every other
    live member: what a program this process ran and waited for left behind (`daemon &`, a forked
    child). Their pids; [] where this process leads no group (whose other members are not its own)."""
    me = os.getpid()
    if os.getpgid(0) != me:
        return []
    left = [pid for pid in group_members(me) if pid != me]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    wait_gone(lambda: [pid for pid in group_members(me) if pid != me], 5.0)
    return left


def unlimit_stack() -> None:
    """In a kernel's child before exec: the paper's 8 MB stack crash; raise the
    soft stack limit as far as the hard one allows."""
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))
    except (ValueError, OSError):
        pass
