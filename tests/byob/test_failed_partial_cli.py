"""A program that fails at its largest n measured the smaller ones in full:
the FAILED job keeps their rows (each n's rows are flushed once that n is
done), `rerun --failed` runs only the n that failed, and the report reads the
kept ones. Through the CLI on this machine (the local backend)."""

from __future__ import annotations

import json
import os
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


def test_a_job_failed_at_its_largest_n_keeps_the_smaller_ones(tmp_path: Path) -> None:
    for folder, name, text in (("conf/kernel", "big.yaml", KERNEL), ("conf/experiment", "big_sweep.yaml", EXPERIMENT),
                               ("bin", "big", PROGRAM)):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / name).write_text(text)
    (tmp_path / "bin" / "big").chmod(0o755)
    env = {"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf"), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    led = str(tmp_path / "ledger.sqlite")
    submit = run_cli("--ledger", led, "submit", "experiment=big_sweep", "campaign.name=big", cwd=tmp_path, env=env)
    assert submit.returncode == 3, submit.stdout + submit.stderr  # a job failed (the local backend waits)

    def cli(*args: str, code: int = 0) -> str:
        proc = run_cli("--ledger", led, *args, cwd=tmp_path, env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout

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
