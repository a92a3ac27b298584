"""The machine-wide lock of timed CPU work on the local backend (without it,
two local submits at once overlapped and both campaigns' medians came out 2x
slower, without a word).

An advisory `flock` on one file per machine (`$CAMPAIGN_LOCAL_LOCK`, default
/tmp/campaign-local-timed.lock): the kernel drops it when its holder dies, so
a SIGKILLed submit never leaves it held. A second submit waits and says so.
Results that overlapped anyway (parallel jobs the user asked for, or jobs a
killed submit left running) are flagged in the ledger by campaign.results.overlap.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_ENV = "CAMPAIGN_LOCAL_LOCK"
DEFAULT_LOCK = "/tmp/campaign-local-timed.lock"


def lock_path() -> Path:
    return Path(os.environ.get(LOCK_ENV) or DEFAULT_LOCK)


@contextmanager
def timed_cpu_lock(what: str) -> Iterator[None]:
    """Hold the machine's timed-CPU lock for the body; waits (and says so) while
    another process holds it."""
    path = lock_path()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:  # e.g. another user's file without write permission
        print(f"campaign: warning: cannot open the timed-job lock {path} ({exc.strerror}); "
              "timings may overlap other local jobs", file=sys.stderr)
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or "another process"
            print(f"campaign: waiting for timed local jobs of {holder} to finish (machine-wide lock {path})",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {what}\n".encode(errors="replace"), 0)
        yield
    finally:
        os.close(fd)  # closing drops the lock
