"""Names of the files a job leaves in its folder, and how to read them back.

`job.json` is written when the job starts and `exit.json` when the program
ended, so any later process can tell running, failed and lost-output jobs
apart without the submitting process (docs/design.md, "Job states").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

START_FILE = "job.json"
EXIT_FILE = "exit.json"
STDOUT_FILE = "kernel.out"
STDERR_FILE = "kernel.err"


def counters_path(output_csv: Path) -> Path:
    """Where a profiled program leaves its counters: results.csv ->
    results.counters.csv (kernels/torch/profile.py writes it so)."""
    stem = output_csv.name[:-4] if output_csv.name.endswith(".csv") else output_csv.name
    return output_csv.with_name(f"{stem}.counters.csv")


def read_json(path: Path) -> dict[str, Any] | None:
    """A job record, or None when it is missing or unreadable (a job killed
    while writing leaves no half record: writes go through a rename)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
