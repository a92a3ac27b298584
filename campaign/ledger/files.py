"""Result rows in files: each finished attempt's rows written once as an
immutable Parquet file, read back through DuckDB (campaign.ledger.file_scan).

The ledger keeps only a pointer per file (`result_file`: the path relative to
the campaign's folder, the SHA-256 of its bytes, its row count, the schema
version of campaign.ledger.result_schema). A file is written under a temporary
name, fsynced and renamed into place before the pointer is inserted, in the
transaction that marks its attempt done: a crash between the two leaves an
unreferenced file, which nothing reads and `campaign status` sweeps. A file
whose bytes no longer match its pointer's hash is refused with one line
naming it, never read.

Where the files live (docs/results.md): a pointer's path is relative to its
campaign's folder (campaign.workdir, where its jobs' folders are; on the
shared filesystem in PostgreSQL team mode), so a copied or renamed ledger
still finds them. A ledger whose campaign folders are not on this machine (one
committed elsewhere, upgraded here) keeps the files its upgrade writes beside
it, in `<ledger stem>.results/c<id>/`, which then stands in for the campaign's
folder: a write goes to the campaign's folder when it exists here, else there;
a read looks in the campaign's folder, then there.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.whole_file import writer_gone
from campaign.ledger.result_schema import COLUMNS, SCHEMA_VERSION
from campaign.plumbing.errors import LedgerError
from campaign.plumbing.storage import writing

RESULTS = "results"  # the subfolder of a campaign's folder holding its result files
IMPORTS = "imports"  # beside an SQLite ledger, the stand-in folder of the rows imported without a campaign
SWEEP_AGE_S = 3600  # an unreferenced file younger than this may be a sync's between rename and commit
_TMP = ".tmp-"
_TMP_WRITER = re.compile(r"\.tmp-(?P<pid>\d+)@(?P<host>[^~/]+)~")  # a temporary file's writer
_MARK = ".writing-"  # a writer's marker (write_many): its files may lack pointers until it commits


@dataclass(frozen=True)
class Pointer:
    """What the ledger records of one written file."""

    path: str  # relative to the campaign's folder: results/<stem>-<hash>.parquet
    sha256: str
    rows: int
    schema_version: int = SCHEMA_VERSION


def homes(root: Path | None, campaign_id: int, workdir: str) -> list[Path]:
    """Where a campaign's pointers may be relative to, in the order a read
    looks: its folder, then (SQLite ledger: `root` = Ledger.results_root)
    `root/c<id>` beside the ledger."""
    out = [Path(workdir)] if workdir else []
    if root is not None:
        out.append(root / f"c{campaign_id}")
    return out


def write_home(root: Path | None, campaign_id: int, workdir: str) -> Path:
    """Where a new file of the campaign goes: its folder when that exists on
    this machine, else beside an SQLite ledger (`homes`). A PostgreSQL ledger
    has no beside: the campaign's folder is made (the shared filesystem)."""
    if workdir and (root is None or Path(workdir).is_dir()):
        return Path(workdir)
    if root is not None:
        return root / f"c{campaign_id}"
    raise LedgerError(f"campaign {campaign_id} has no folder to keep its result files in")


def pointer_homes(root: Path | None, campaign_id: int | None, workdir: str | None) -> list[Path]:
    """`homes`, and for a pointer of no campaign (rows imported without
    `--campaign`): `root/imports` beside an SQLite ledger; on PostgreSQL such
    a pointer's path is absolute (import_home), read from the filesystem root."""
    if campaign_id is not None:
        return homes(root, campaign_id, workdir or "")
    return [root / IMPORTS] if root is not None else [Path("/")]


def import_home(root: Path | None) -> Path:
    """Where a file of rows imported without a campaign goes: `root/imports`
    beside an SQLite ledger; a PostgreSQL ledger has no beside, so `runs/imports`
    of the current folder (on the shared filesystem), its pointer's path absolute."""
    return root / IMPORTS if root is not None else Path.cwd().resolve() / "runs" / IMPORTS


def locate(places: Sequence[Path], path: str) -> Path:
    """The first of `places` holding the pointer's `path`; a LedgerError
    naming where it was looked for when none does."""
    for place in places:
        if (place / path).is_file():
            return place / path
    where = " or ".join(str(place / path) for place in places) or path
    raise LedgerError(
        f"result file {where} is missing; its rows cannot be reported (restore it, or the "
        f"campaign's folder, from a backup)"
    )


# Parquet statistics (min/max: what lets a reader skip a file) on the columns a query selects rows by, the
# attempt and the configuration; dictionary pages for every column but the measured numbers, distinct in
# each row. Measured, 100,000 rows: 37 ms a write with statistics and dictionaries everywhere, 21 ms so.
_STATISTICS = [c.name for c in COLUMNS if c.key or c.name in ("attempt_id", "campaign_id")]
_DICTIONARY = [c.name for c in COLUMNS if c.kind != "float"]


def write_many(
    items: Sequence[tuple[Path, str, Any]], marks: list[Path] | None = None, created: list[Path] | None = None
) -> list[Pointer]:
    """Each table as the immutable file `home/results/<stem>-<hash>.parquet`
    (pointer path `results/<stem>-<hash>.parquet`): written whole under a
    temporary name, made durable, renamed, the renames made durable: an
    fsync of each file and folder, or, where one call writes SYNCFS_FROM
    files or more to one filesystem (an upgrade), one syncfs(2) of it. Each folder written
    first gets a marker (`sweep` looks only where one is); `marks` collects
    them for the caller to `unmark` once its pointers are committed (else
    they stay, and the folder is swept until they are old); `created` the
    files it made (not one already there with the same bytes), for the
    caller to remove if its transaction fails. A failure here removes at
    once what it wrote; a full disk or read-only folder is a StorageError
    naming the file and the bytes it needed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    staged: list[tuple[Path, Path]] = []
    pointers, made = [], []
    folders: dict[Path, Path] = {}
    try:
        for home, stem, table in items:
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="zstd", write_statistics=_STATISTICS, use_dictionary=_DICTIONARY)
            data = sink.getvalue().to_pybytes()
            digest = hashlib.sha256(data).hexdigest()
            name = f"{stem}-{digest[:16]}.parquet"
            folder = home / RESULTS
            tmp = folder / f"{_TMP}{os.getpid()}@{socket.gethostname()}~{name}"  # whose: `sweep`
            with writing(tmp, len(data)):
                if folder not in folders:
                    folder.mkdir(parents=True, exist_ok=True)
                    folders[folder] = folder / f"{_MARK}{os.getpid()}-{secrets.token_hex(8)}"
                    folders[folder].touch()
                staged.append((tmp, folder / name))
                with open(tmp, "wb") as f:
                    f.write(data)
            pointers.append(Pointer(f"{RESULTS}/{name}", digest, table.num_rows))
        with writing(next(iter(folders), Path.cwd())):  # an fsync or a rename may meet the full disk too
            _durable([tmp for tmp, _ in staged])
            for tmp, final in staged:
                if not final.exists():  # (one there already has these bytes: a copy of the ledger may use it)
                    made.append(final)
                os.replace(tmp, final)
            _durable(sorted(folders))
    except BaseException:
        remove([*(tmp for tmp, _ in staged), *made, *folders.values()])
        raise
    if marks is not None:
        marks += folders.values()
    if created is not None:
        created += made
    return pointers


def remove(paths: Sequence[Path]) -> None:
    """Files a failed write wrote (write_many, a rolled-back ingest), at once: the disk they filled is free again."""
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            continue


def unmark(marks: Sequence[Path]) -> None:
    """Remove write_many's markers: their files' pointers are committed."""
    for mark in marks:
        try:
            mark.unlink()
        except OSError:
            continue


# Paths on one filesystem from which one syncfs(2) is cheaper than an fsync(2) of each. A sync's batch
# writes one file (one per campaign in it): syncfs then waited for every dirty page of the filesystem,
# other users' writes included (measured on a shared VM: 0.01 s a sync alone, 1-7 s beside a writer);
# an upgrade of an old ledger writes hundreds at once.
SYNCFS_FROM = 16


def _durable(paths: Sequence[Path]) -> None:
    """What was written to these files (or folder entries) on stable storage:
    an fsync of each, or one syncfs of a filesystem that holds SYNCFS_FROM of them (Linux)."""
    by_device: dict[int, list[Path]] = {}
    for path in paths:
        by_device.setdefault(os.stat(path).st_dev, []).append(path)
    syncfs = getattr(_libc(), "syncfs", None) if any(len(g) >= SYNCFS_FROM for g in by_device.values()) else None
    for group in by_device.values():
        if syncfs is not None and len(group) >= SYNCFS_FROM and _synced(syncfs, group[0]):
            continue
        for path in group:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _synced(syncfs: Any, path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return bool(syncfs(fd) == 0)
    finally:
        os.close(fd)


def _libc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def sha256(path: Path) -> str:
    """SHA-256 of the file's bytes (a result file's pointer, an imported file's fingerprint)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verified(paths: Sequence[tuple[Path, str]]) -> list[str]:
    """The files as strings, each checked against its pointer's hash; a
    missing or changed one is a LedgerError naming it (never read)."""
    out = []
    for path, digest in paths:
        try:
            actual = sha256(path)
        except OSError as exc:
            raise LedgerError(
                f"result file {path} is unreadable ({exc.strerror}); its rows cannot be reported"
            ) from None
        if actual != digest:
            raise LedgerError(
                f"result file {path} does not match the hash the ledger recorded for it "
                f"(sha256 {actual[:16]}..., recorded {digest[:16]}...): it was changed after it was "
                f"written; restore it from a backup"
            )
        out.append(str(path))
    return out


def unsettled(place: Path) -> bool:
    """A marker or a temporary file in the place's `results/`: a writer
    may have left files there that no pointer names (what `sweep` is for)."""
    try:
        with os.scandir(place / RESULTS) as entries:
            return any(e.name.startswith((_MARK, _TMP)) for e in entries)
    except OSError:
        return False


def is_temporary(path: Path) -> bool:
    """A writer's file not yet renamed into place (write_many)."""
    return path.name.startswith(_TMP)


def sweep(
    places: Sequence[Path], referenced: set[str], removable: Callable[[Path], bool], older_than_s: float = SWEEP_AGE_S
) -> list[Path]:
    """Remove, from each place's `results/`, the leftover temporary files (never
    a pointer's: whole or cut short, they go; at once where their writer, named
    in the file's name, is gone from this host) and the result files no pointer names (`referenced`: each pointed-to file's
    path as `referenced_path` writes it) that `removable` says lose nothing
    (campaign.results.sweep: every row held by a verified file of this
    ledger, e.g. a sync killed between the rename and its commit, whose
    attempts a later sync stored again), once older than `older_than_s`. A
    campaign's folder may be shared by copies of the ledger: a file another
    copy points to is never removable here. The markers of writers gone
    that long go too, once nothing younger is left to decide. Returns what
    was removed. (Paths as strings: `status` looks through every folder, and
    a Path made and hashed per entry is most of its look, BENCHMARKS.md 13i.)"""
    cutoff = time.time() - older_than_s
    removed = []
    for place in places:
        folder = place / RESULTS
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        marks, undecided = [], False
        for entry in entries:
            if entry.name.startswith(_MARK):
                marks.append(Path(entry.path))
            if not entry.name.endswith(".parquet") or entry.path in referenced:
                continue
            path = Path(entry.path)
            writer = _TMP_WRITER.match(entry.name)
            try:
                if writer is not None and writer_gone(int(writer["pid"]), writer["host"]):
                    path.unlink()  # a killed writer's, whatever its age: it renames nothing any more
                    removed.append(path)
                    continue
                if path.stat().st_mtime >= cutoff:
                    undecided = True
                    continue
                # a temporary name no pointer ever named (the rename precedes the commit): its rows'
                # origin still holds them, whole or cut short; any other file only when nothing is lost
                if not is_temporary(path) and not removable(path):
                    continue
                path.unlink()
                removed.append(path)
            except OSError:
                continue
        for mark in marks if not undecided else []:
            try:
                if mark.stat().st_mtime < cutoff:
                    mark.unlink()
            except OSError:
                continue
    return removed


def referenced_path(place: str, pointer: str) -> str:
    """A pointer's file as `sweep` compares it: the place (as str(Path)) joined
    to the pointer's relative path, normalised as a Path would have it."""
    return os.path.join(place, os.path.normpath(pointer))
