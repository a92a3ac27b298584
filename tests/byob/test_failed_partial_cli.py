"""A program that fails at its largest n measured the smaller ones in full:
the FAILED job keeps their rows (each n's rows are flushed once that n is
done), `rerun --failed` runs only the n that failed, and the report reads the
kept ones. Through the CLI on this machine (the local backend)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tests.conftest import run_cli

PROGRAM = """#!/bin/sh
if [ "$1" -gt 1000 ]; then echo "big: cannot allocate $1 elements" >&2; exit 4; fi
echo "time: 0.00$1 s"
"""
KERNEL = """
name: big
driven_by: tool
impls:
  sh: {argv: ["big", "{n}"], variants: [plain]}
figures:
  - {name: time, regex: 'time: ([0-9.]+) s', unit: s}
"""
EXPERIMENT = """
name: big_sweep
repeats: 2
warmup: 0
check: false
sweeps:
  - {kernel: big, impls: [sh], variants: [plain], threads: [1], n: [100, 1000, 2000]}
"""


def _sweep(tmp_path: Path, program: str) -> Callable[..., str]:
    """The kernel, sweep and program in `tmp_path`; the CLI on its ledger (asserting its exit code)."""
    for folder, name, text in (
        ("conf/kernel", "big.yaml", KERNEL),
        ("conf/experiment", "big_sweep.yaml", EXPERIMENT),
        ("bin", "big", program),
    ):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / name).write_text(text)
    (tmp_path / "bin" / "big").chmod(0o755)
    env = {"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf"), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    led = str(tmp_path / "ledger.sqlite")

    def cli(*args: str, code: int = 0) -> str:
        proc = run_cli("--ledger", led, *args, cwd=tmp_path, env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout

    return cli


def test_a_job_failed_at_its_largest_n_keeps_the_smaller_ones(tmp_path: Path) -> None:
    cli = _sweep(tmp_path, PROGRAM)
    cli("submit", "experiment=big_sweep", "campaign.name=big", code=3)  # a job failed (the local backend waits)
    [job] = json.loads(cli("jobs", "--failed", "--format", "json"))
    assert job["state"] == "FAILED" and "big: cannot allocate 2000 elements" in job["reason"], job
    kept = {(r["n"], r["repeat"]): r["value"] for r in json.loads(cli("results", "--format", "json"))}
    assert kept == {(100, 0): 0.00100, (100, 1): 0.00100, (1000, 0): 0.001000, (1000, 1): 0.001000}
    assert "missing n = [2000]" in cli("show", job["job_id"])
    rerun = cli("rerun", "big", "--failed", code=3)  # n = 2000 fails again
    assert "only the missing n 2000" in rerun, rerun
    [again] = json.loads(cli("jobs", "--failed", "--format", "json"))
    assert again["job_id"] != job["job_id"] and again["state"] == "FAILED"
    after = {(r["n"], r["repeat"]) for r in json.loads(cli("results", "--format", "json"))}
    assert after == set(kept)  # the rerun measured nothing new, and lost nothing
    doc = json.loads(cli("report", "--json", "--keys", "figures_of_merit"))
    assert sorted({r["n"] for r in doc["figures_of_merit"]}) == [100, 1000]


def test_a_rerun_that_failed_before_its_first_n_keeps_to_the_missing_n(tmp_path: Path) -> None:
    """A rerun of the missing n that fails again before finishing one of them
    stores no rows and no missing n of its own; its own n are still the only
    ones missing, so the next rerun runs those alone, not the n the first
    attempt measured (which would then count twice in every median)."""
    flag = tmp_path / "fail"
    flag.touch()
    program = PROGRAM.replace('if [ "$1" -gt 1000 ]', f'if [ -e {flag} ] && [ "$1" -gt 1000 ]')
    cli = _sweep(tmp_path, program)
    cli("submit", "experiment=big_sweep", "campaign.name=big", code=3)
    assert "only the missing n 2000" in cli("rerun", "big", "--failed", code=3)  # fails before its one n
    flag.unlink()
    last = cli("rerun", "big", "--failed")
    assert "only the missing n 2000" in last, last
    rows = json.loads(cli("results", "--format", "json"))
    measured = sorted((r["n"], r["repeat"], r["attempt"]) for r in rows)
    assert measured == [(100, 0, 1), (100, 1, 1), (1000, 0, 1), (1000, 1, 1), (2000, 0, 3), (2000, 1, 3)], measured
    doc = json.loads(cli("report", "--json", "--keys", "figures_of_merit"))
    assert {r["n"]: r["repeats"] for r in doc["figures_of_merit"]} == {100: 2, 1000: 2, 2000: 2}
