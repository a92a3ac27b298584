"""What every section of the H200 checks shares: the device, the results and
harness rows collected so far (written after each section, so a timeout
keeps what was done), do_bench, and the kernel programs run in-process.

The device is "cuda" unless --smoke runs on a CPU: sections read it as
`measure.DEVICE`, set once by the script's main before any section runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kernels.torch import harness  # noqa: E402

DEVICE = "cuda"  # "cpu" only for --smoke on a machine without a GPU
RESULTS: dict[str, Any] = {}
ROWS: list[dict[str, str]] = []
LINES: list[str] = []
T0 = time.monotonic()


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def bench(fn: Callable[[], object]) -> float:
    """Median seconds by triton.testing.do_bench (it clears a 256 MB cache
    before every call and times with CUDA events)."""
    if DEVICE != "cuda":  # --smoke on the CPU: a plain median, no triton
        times = []
        for _ in range(5):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return median(times)
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1e-3


def save(out: Path) -> None:
    (out / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    if ROWS:
        cols = ["section", *harness.CSV_COLUMNS]
        with (out / "harness_rows.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(ROWS)
    (out / "summary.txt").write_text("\n".join(LINES) + "\n")


def run_program(section: str, main: Callable[[Sequence[str]], int], argv: list[str]) -> list[dict[str, str]]:
    """Run a kernel program in-process exactly as `python -m` would; keep its rows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.csv")
        try:
            code = main([*argv, "--out", path])
        except SystemExit as exc:  # a usage error: report it, keep the script going
            say(f"  [{section}] usage error {exc.code} for {' '.join(argv)}")
            return []
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    if code != 0:
        say(f"  [{section}] exit {code} for {' '.join(argv)}")
    for r in rows:
        r["section"] = section
    ROWS.extend(rows)
    return rows


def harness_median(rows: list[dict[str, str]], n: int) -> tuple[float, str]:
    sel = [r for r in rows if int(r["n"]) == n]
    return median(float(r["time_s"]) for r in sel), sel[0]["rel_err"]


def case_for(spec: harness.KernelSpec, n: int, d: int, variant: str, **extra: Any) -> harness.Case:
    """The very case the harness times, for do_bench (same inputs, same call)."""
    args = argparse.Namespace(**{"sdpa_backend": "auto", "ff": None, **extra})
    ctx = harness.CaseContext(n=n, d=d, variant=variant, device=torch.device(DEVICE),
                              dtype=torch.bfloat16, args=args, seed=0)
    return spec.build(ctx)
