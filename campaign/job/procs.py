"""Process trees of kernels: how what a job started is found and stopped.

The runner starts every kernel in its own session, so its process group id is
the kernel's PID and every process the kernel starts belongs to it. Stopping
a job is then one `killpg`, and "no process left" is checkable by scanning
/proc for members of that group (a zombie has already stopped).

A process that calls `setsid` (a daemon, `setsid server &`) leaves that group,
and one whose parent ended is handed to init: the job runner
(campaign.job.runner) and the tool-driven driver (campaign.job.fom), which runs a
program many times and times each run, make themselves their reaper
(`become_subreaper`), so whatever a program leaves running stays their
descendant, found through /proc's parent links and stopped after each run
(`stop_new_descendants`) and when the job is stopped (`end_descendants`; the
driver's `answer_for_descendants`).
Standard library only: this runs on compute nodes (docs/design.md#layering).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from collections.abc import Collection
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # prctl options of <linux/prctl.h>
PR_SET_PDEATHSIG = 1


def _processes() -> dict[int, tuple[str, int, int]]:
    """Every process /proc shows: pid -> (state, parent pid, process group)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2:
            found[int(entry.name)] = (fields[0], int(fields[1]), int(fields[2]))
    return found


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    return [pid for pid, (state, _, pgrp) in _processes().items() if state != "Z" and pgrp == pgid]


def descendants(root: int) -> dict[int, bool]:
    """Every descendant of `root` (children, theirs, ...), to whether it is live (not a zombie)."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, bool] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != root:
                found[child] = table[child][0] != "Z"
                todo.append(child)
    return found


def become_subreaper() -> bool:
    """Have the descendants this process orphans (a double fork, a parent that exits before its
    child) handed to it instead of init (Linux's PR_SET_CHILD_SUBREAPER), so `descendants` still
    finds them; False where the kernel refuses (then they escape as before)."""
    libc = load_libc()
    try:
        return libc is not None and int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except AttributeError:
        return False


def load_libc() -> ctypes.CDLL | None:
    """The C library, for prctl (None where there is none)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def end_with_parent(parent: int, libc: ctypes.CDLL | None, sig: int = signal.SIGTERM) -> None:
    """In a child between fork and exec: `sig` when `parent` dies (Linux's PR_SET_PDEATHSIG, kept
    across exec), at once if it died already. A runner killed outright (SIGKILL, the OOM killer)
    cannot stop its kernel: without this the kernel, in a session of its own, measured on, orphaned,
    beside the next jobs, while the ledger said the job had failed. `libc` is loaded before the
    fork (no dynamic loading in a forked child)."""
    if libc is None or int(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) != 0:
        return
    if os.getppid() != parent:  # it died before the prctl
        os.kill(os.getpid(), sig)


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


def stop_new_descendants(before: Collection[int], timeout_s: float = 5.0, poll_s: float = 0.02) -> list[int]:
    """SIGKILL every live descendant of this process that is not in `before` (its descendants
    before it started a program: what that program left running, `daemon &`, a forked child, one
    in a session of its own where this process is a subreaper), again for the ones their ends hand
    to it, until none is live or `timeout_s` passed; reap those that end as its children (their
    exit status is no one else's). Their pids, in the order found; [] where nothing was left."""
    me = os.getpid()
    stopped: list[int] = []
    deadline = time.monotonic() + timeout_s
    while True:
        found = {pid: live for pid, live in descendants(me).items() if pid not in before}
        for pid, live in found.items():
            if live:
                stopped += [] if pid in stopped else [pid]
                _signal(pid, signal.SIGKILL)
            else:
                _reap(pid)
        if not any(found.values()) or time.monotonic() >= deadline:
            return stopped
        time.sleep(poll_s)


# how long a program has to end on SIGTERM when the job is stopped: within the local backend's wait before
# its SIGKILL of the group (campaign.backends.local) and Slurm's KillWait
END_GRACE_S = 3.0


def answer_for_descendants() -> None:
    """Make this process answer for all that the programs it runs start: their subreaper
    (`become_subreaper`), and on SIGTERM (a cancel, a walltime: docs/design.md#job-states) the end
    of its descendants before its own, those that left its process group included."""
    become_subreaper()
    signal.signal(signal.SIGTERM, _end_with_descendants)


def _end_with_descendants(signum: int, _frame: object) -> None:
    signal.signal(signum, signal.SIG_IGN)  # the runner passes the scheduler's on: one clean-up is enough
    end_descendants(END_GRACE_S)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # ended by the signal, as it would have been


def end_descendants(grace_s: float, before: Collection[int] = ()) -> None:
    """SIGTERM every live descendant of this process not in `before` (one that left its process
    group did not get the group's signal), SIGKILL what is left after `grace_s` (`stop_new_descendants`)."""
    me = os.getpid()

    def live() -> list[int]:
        return [p for p, alive in descendants(me).items() if alive and p not in before]

    for pid in live():
        _signal(pid, signal.SIGTERM)
    wait_gone(live, grace_s)
    stop_new_descendants(before)


SETTLE_S = 30.0  # how long a launcher's daemons may take to end after it returned (then they are stopped)


def command_of(pid: int) -> str:
    """The file name of the program `pid` runs (its argv[0]'s last part); "" once it has ended."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return ""
    return os.path.basename(argv0.decode(errors="replace"))


def wait_commands_end(before: Collection[int], commands: Collection[str], timeout_s: float) -> bool:
    """Wait until no live descendant of this process outside `before` runs one of `commands`
    (a launcher's daemons ending after it returned); False where some still ran at `timeout_s`."""
    me = os.getpid()

    def running() -> list[int]:
        return [p for p, live in descendants(me).items() if live and p not in before and command_of(p) in commands]

    return wait_gone(running, timeout_s)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # a zombie whose parent is not this process: its parent reaps it
        pass


def unlimit_stack() -> None:
    """In a kernel's child before exec: the paper's 8 MB stack crash; raise the
    soft stack limit as far as the hard one allows."""
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))
    except (ValueError, OSError):
        pass
