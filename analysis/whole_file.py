"""Files written whole or not at all, and what a killed writer left swept.

A report is written into a folder by name (`<cluster>.md`, `.html`, the PNG
figures), an export (`campaign results --out`) and a ledger's backup beside
their own names. Written in place, a kill or a full disk part way left a file cut
short under the name of a complete one, which a browser shows as a report
that simply ends; and `report` run again over a folder an earlier one wrote
replaced what was there byte by byte. Each file is written under a
temporary name beside its own and renamed onto it once complete: a name
holds the old file or the new one, never part of one.

A writer killed outright (SIGKILL, the OOM killer, a lost node) removes
nothing: its temporary file stayed, hidden, and each such kill added one. The
name says whose it is (`.<name>.<pid>@<host>.tmp`), so the next write into
that folder removes those of writers this host shows gone, and any left
LEFTOVER_AGE_S unchanged (another host's, a reused PID's). Nothing reads a
temporary name as data.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

LEFTOVER_AGE_S = 3600  # a temporary file unchanged this long has no writer left (a write keeps it fresh)
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)(?:@(?P<host>[^@/]+))?\.tmp")


@contextmanager
def whole(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write (`fresh_temporary`); renamed onto `path` when the
    block ends without an error, removed otherwise. An OSError of the write names `path`, not the
    temporary name."""
    tmp = fresh_temporary(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:  # (a write() names no file)
        if exc.filename not in (None, str(tmp)):
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        tmp.unlink(missing_ok=True)


def fresh_temporary(path: Path) -> Path:
    """This process's temporary name beside `path` (two writers of one name never share one),
    after removing from `path`'s folder what killed writers left (`sweep_leftovers`)."""
    sweep_leftovers(path)
    return path.with_name(f".{path.name}.{os.getpid()}@{socket.gethostname()}.tmp")


def sweep_leftovers(path: Path) -> list[Path]:
    """Remove the temporary files of writers gone from `path`'s folder: those named by this host
    whose process is gone, and those unchanged for LEFTOVER_AGE_S (a name without a host, an older
    release's, only for `path`'s own name: the folder may be anyone's). Returns what was removed;
    a folder that cannot be read or a file that cannot be removed is left to the write to report."""
    cutoff = time.time() - LEFTOVER_AGE_S
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        found = _LEFTOVER.fullmatch(entry.name)
        if found is None or (found["host"] is None and found["name"] != path.name):
            continue
        with suppress(OSError):
            gone = found["host"] is not None and writer_gone(int(found["pid"]), found["host"])
            if gone or entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def writer_gone(pid: int, host: str) -> bool:
    """The process `pid` of `host` that named a temporary file is gone for certain: `host` is this
    one and no process has that PID (a PID reused since counts as alive: the file then waits for
    its age). Another host's cannot be seen from here."""
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (a number past any PID: no process of ours)
        return True
    except PermissionError:  # another user's process
        return False
    return False
