"""Names of the files a job leaves in its folder, and how to read them back.

`job.json` is written when the job starts and `exit.json` when the program
ended, so any later process can tell running, failed and lost-output jobs
apart without the submitting process (docs/design.md, "Job states").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

START_FILE = "job.json"
EXIT_FILE = "exit.json"
STDOUT_FILE = "kernel.out"
STDERR_FILE = "kernel.err"
CANCEL_FILE = "cancel.json"  # left by `campaign cancel`: the job must not start (or is being stopped)


def counters_path(output_csv: Path) -> Path:
    """Where a profiled program leaves its counters: results.csv ->
    results.counters.csv (kernels/torch/profile.py writes it so)."""
    stem = output_csv.name[:-4] if output_csv.name.endswith(".csv") else output_csv.name
    return output_csv.with_name(f"{stem}.counters.csv")


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A job record, or None when it is missing or unreadable (a job killed
    while writing leaves no half record: writes go through a rename). A plain
    open, no pathlib: a sync of 10,000 finished jobs reads 20,000 of them."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = json.loads(read_all(fd))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """A job record written whole or not at all (a temporary file of this
    process renamed into place: ranks of one job may write at once), so
    read_json never sees half of one."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def read_all(fd: int, size: int = 1 << 16) -> bytes:
    """The rest of an open file's bytes, by plain reads (no file object: a
    sync reads 30,000 small files, and `open().read()` costs 2 us more each)."""
    parts: list[bytes] = []
    while True:
        data = os.read(fd, size)
        if not data:
            return b"".join(parts)
        parts.append(data)
