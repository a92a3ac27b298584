"""Writes the machine refused (a full disk, a quota, a read-only filesystem),
as one line that names the path written and, for space, how much was free
and how much the write needed: exit 1 (StorageError), wherever it strikes
(the ledger, a result file, a job's folder, a report). A disk error is not
bad input: the same command runs once there is room."""

from __future__ import annotations

import errno
import resource
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from campaign.plumbing.errors import StorageError

SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
STORAGE_ERRNOS = SPACE_ERRNOS | {errno.EROFS}
# SQLite's names for the same: the database or its journal could not grow, or the file cannot be written
SQLITE_SPACE = frozenset({"SQLITE_FULL"})
SQLITE_STORAGE = SQLITE_SPACE | {"SQLITE_READONLY", "SQLITE_READONLY_DBMOVED", "SQLITE_READONLY_DIRECTORY"}


def free_bytes(path: Path) -> int | None:
    """Free bytes (for this user) on the filesystem that holds `path`, or its nearest existing folder."""
    for place in (path, *path.parents):
        try:
            return shutil.disk_usage(place).free
        except OSError:
            continue
    return None


def size_text(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def storage_error(
    path: Path | str,
    read_only: bool,
    needed: int | None = None,
    what: str = "",
    needs: str = "",
    cause: int | None = None,
) -> StorageError:
    """The one line: `path`, why, and (space) what was free beside what the write needed
    (`needed` bytes, or in words: `needs`). `cause`, the errno where one is known: a quota
    (EDQUOT) or a file size limit (EFBIG, `ulimit -f`) is said as such, not as a full disk with
    terabytes free."""
    path = Path(path)
    if read_only:
        return StorageError(
            f"cannot write {path}{what}: read-only file system; make it writable, or point "
            f"campaign at a writable place, and run the command again"
        )
    free = free_bytes(path)
    room = f"{size_text(free)} free there now" if free is not None else "free space unknown"
    need = f"; {size_text(needed)} needed" if needed is not None else f"; {needs}" if needs else ""
    if cause == errno.EDQUOT:
        return StorageError(
            f"writing {path}{what} failed: disk quota exceeded ({room}, but not within your quota"
            f"{need}); free space within your quota (`quota -s`) and run the command again"
        )
    if cause == errno.EFBIG:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY:
            return StorageError(
                f"writing {path}{what} failed: file too large for this process's file size limit "
                f"({size_text(limit)}, `ulimit -f`{need}); raise the limit and run the command again"
            )
        return StorageError(
            f"writing {path}{what} failed: file too large for that filesystem{need}; point "
            "campaign at another filesystem and run the command again"
        )
    return StorageError(
        f"writing {path}{what} failed: no space left ({room}{need}); free space on that "
        f"filesystem and run the command again"
    )


def is_storage(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def from_os_error(exc: OSError, path: Path | str, needed: int | None = None) -> StorageError:
    """storage_error of an OSError the kernel raised while writing `path` (its own filename, if it has one)."""
    return storage_error(exc.filename or path, exc.errno == errno.EROFS, needed, cause=exc.errno)


@contextmanager
def writing(path: Path | str, needed: int | None = None) -> Iterator[None]:
    """Turn a full disk or read-only filesystem met inside the block into a StorageError naming
    `path` (a write() call's error names no file); any other error passes unchanged."""
    try:
        yield
    except OSError as exc:
        if not is_storage(exc):
            raise
        raise from_os_error(exc, path, needed) from None


def sqlite_storage(exc: BaseException, ledger: Path, size: int | None) -> StorageError | None:
    """A StorageError for an SQLite error that is the disk's (full, read-only), else None. How much
    a write adds is SQLite's to know; its journal takes up to the ledger's own size (`size`)."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if name == "SQLITE_IOERR_WRITE" and limit != resource.RLIM_INFINITY:  # SQLite's word for EFBIG
        held = f" and the ledger at {size_text(size)}" if size is not None else ""
        return StorageError(
            f"writing {ledger} (the ledger) failed: disk I/O error, with this process's file size "
            f"limit at {size_text(limit)} (`ulimit -f`){held}; raise the limit and run the command "
            "again"
        )
    if name not in SQLITE_STORAGE:
        return None
    needs = (
        f"a write needs room for its journal, up to the ledger's size ({size_text(size)}), and for what it adds"
        if size is not None
        else ""
    )
    return storage_error(ledger, name not in SQLITE_SPACE, what=" (the ledger)", needs=needs)
