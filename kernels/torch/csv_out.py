"""The torch kernels' CSV file (docs/design.md#kernel-program-contract).

FILE.tmp while the kernel runs: the header at once, each n's rows appended
and flushed as soon as they are measured (a job stopped by its walltime, a
cancel or OOM leaves the finished n for the ledger to ingest), fsync and
rename to FILE only at the end, so a killed job never leaves a file that
looks complete.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class CsvAppender:
    """FILE.tmp while the kernel runs: the header at once, each n's rows
    appended and flushed as soon as they are measured (a job stopped by its
    walltime, a cancel or OOM leaves the finished n for the ledger), fsync and
    rename to FILE only in `finish`, so a killed job never leaves a file that
    looks complete."""

    def __init__(self, path: str, columns: Sequence[str]) -> None:
        self.path, self.columns, self.tmp = path, list(columns), f"{path}.tmp"
        self._fh = open(self.tmp, "w", encoding="utf-8", newline="")  # noqa: SIM115 - open until finish()
        self._fh.write(",".join(self.columns) + "\n")
        self._fh.flush()

    def append(self, rows: Sequence[dict[str, str]]) -> None:
        self._fh.writelines(",".join(_csv_field(row.get(c, "")) for c in self.columns) + "\n" for row in rows)
        self._fh.flush()

    def finish(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self.tmp, self.path)


def write_csv_atomic(path: str, rows: Sequence[dict[str, str]], columns: Sequence[str]) -> None:
    """Header plus rows to path.tmp, fsync, then rename: a killed job leaves
    either the old file or a complete new one, never half a file."""
    out = CsvAppender(path, columns)
    out.append(rows)
    out.finish()


def _csv_field(value: str) -> str:
    if any(ch in value for ch in ',"\n'):
        return '"' + value.replace('"', '""') + '"'
    return value
