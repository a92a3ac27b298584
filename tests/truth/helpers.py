"""Shared by the tests of what the ledger and the CLI tell (tests/truth/, tests/slurm/test_truth_slurm.py):
ledger reads and waiting for a running fake kernel."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.fixtures import FAKE_CONF, FAKE_KERNEL

FAKE_ENV = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}


def db(ledger: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    from tests.conftest import sql_rows  # (a SELECT of result rows reads the result files)

    return sql_rows(ledger, sql, *params)


def wait_for_rows(runs: Path, n_done: int, repeats: int, deadline_s: float = 120) -> Path:
    """The attempt folder of the (one) slow fake job, once `n_done` n have rows
    in its temporary CSV; the kernel is still running then."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for tmp in runs.rglob("results.csv.tmp"):
            lines = tmp.read_text().count("\n")
            if lines >= 1 + n_done * repeats and (tmp.parent / "job.json").is_file():
                start = json.loads((tmp.parent / "job.json").read_text())
                if "kernel_pid" in start:
                    return tmp.parent
        time.sleep(0.2)
    raise AssertionError(f"no job under {runs} finished {n_done} n within {deadline_s} s")


def pids(workdir: Path) -> tuple[int, int]:
    """(kernel PID = its process group, the PID of the child it started)."""
    kernel = json.loads((workdir / "job.json").read_text())["kernel_pid"]
    child = int((workdir / "results.csv.child").read_text())
    return kernel, child


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[:1] != ["Z"]
