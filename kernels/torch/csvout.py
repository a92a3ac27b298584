"""The CSV side of the kernel program contract (docs/contracts.md).

Split from harness.py so that the profiler (profile.py) writes its counters CSV
with the same atomic writer and formatting as the results CSV, without
importing the timing code or torch.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from typing import Any

CSV_COLUMNS: tuple[str, ...] = (
    "kernel", "impl", "variant", "device", "dtype", "n", "d", "threads", "repeat",
    "time_s", "first_call_s", "rel_err", "gpu_model", "omp_proc_bind", "omp_places",
    "l2_flush", "backend",
)


def environment_columns(device: Any, args: argparse.Namespace) -> dict[str, str]:
    """Columns that describe where the run happened, not what it computed."""
    import torch  # here, not at the top: profile.py's counters writer needs no torch

    return {
        "impl": "torch",
        "device": device.type,
        "dtype": args.dtype,
        "d": str(args.d),
        "threads": str(torch.get_num_threads()),
        "gpu_model": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
        "omp_proc_bind": os.environ.get("OMP_PROC_BIND", ""),
        "omp_places": os.environ.get("OMP_PLACES", ""),
        "l2_flush": "1" if args.l2_flush else "0",
    }


def format_float(x: float | None) -> str:
    """Empty for None; 'nan' stays 'nan' (the ledger reads it as a failed check)."""
    if x is None:
        return ""
    return "nan" if math.isnan(x) else f"{x:.9g}"


def write_csv_atomic(path: str, rows: Sequence[dict[str, str]], columns: Sequence[str]) -> None:
    """Header plus rows to path.tmp, fsync, then rename: a killed job leaves
    either the old file or a complete new one, never half a file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(columns) + "\n")
        fh.writelines(",".join(csv_field(row.get(c, "")) for c in columns) + "\n" for row in rows)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def csv_field(value: str) -> str:
    """One field, quoted only where a comma, quote or newline needs it."""
    if any(ch in value for ch in ',"\n'):
        return '"' + value.replace('"', '""') + '"'
    return value
