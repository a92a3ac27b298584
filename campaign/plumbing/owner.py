"""Which process owns something: host + PID + the process's start time.

A PID alone is reused; with the start time (from /proc, in clock ticks since
boot, plus the boot id) a recorded owner is either this very process, still
alive, or gone for certain. Crash recovery (campaign.commands.attempts) and the
campaign claim (campaign.commands.claims) only take over what a gone process left.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    start: str


def _start_of(pid: int) -> str | None:
    """`<boot id>:<start ticks>` of a live process, None when it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if Path("/proc/self/stat").exists():
            return None
        try:  # no /proc (macOS): a signal-0 probe, without a start time
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None  # finished, not yet reaped
    return f"{_boot_id()}:{fields[19]}"


@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:36]
    except OSError:
        return "boot"


@functools.cache
def _me(pid: int) -> Owner:
    return Owner(socket.gethostname()[:200], pid, _start_of(pid) or "?")


def me() -> Owner:
    return _me(os.getpid())


def alive(host: str | None, pid: int | None, start: str | None) -> bool | None:
    """True: that process runs now; False: it is gone; None: it ran on another
    host (or was not recorded), so this machine cannot tell."""
    if host is None or pid is None:
        return None
    if host != me().host:
        return None
    now = _start_of(pid)
    if now is None:
        return False
    return start in (None, "?") or now in ("?", start)
