"""A job's reason holds what its program printed, and a program may print any byte: a NUL in the
output a lost figure's reason quotes, or in the stderr line a failure's reason gives, is kept as its
escape. PostgreSQL's text refuses NUL, and the sync that wrote it failed, so every later `jobs`,
`status` and `submit --wait` of the ledger ended in that error and the jobs stayed PENDING."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.byob.declared import declare
from tests.conftest import run_cli

# one of each end: exits 0 without its figure (LOST_OUTPUT), exits 3 (FAILED)
KERNEL = (
    "{name: nulbench, driven_by: tool, impls: {py: {argv: [nulbench, '{variant}', '{n}'], variants: [quiet, fails]}},"
    " figures: [{name: rate, regex: 'rate: (\\\\S+)', unit: GB/s, higher_is_better: true}]}"
)
EXPERIMENT = (
    "{name: nulsweep, repeats: 1, warmup: 0, check: false, walltime_min: 5,"
    " sweeps: [{kernel: nulbench, impls: [py], variants: [quiet, fails], threads: [1], n: [1]}]}"
)
PROGRAM = """#!/usr/bin/env python3
import sys
sys.stdout.buffer.write(b"junk\\x00here \\x07bell\\n")
sys.stderr.buffer.write(b"err\\x00or: disk full\\n")
sys.exit(3 if sys.argv[1] == "fails" else 0)
"""


def test_a_nul_the_program_printed_is_kept_as_its_escape(new_pg_ledger: Callable[[], str], tmp_path: Path) -> None:
    url = new_pg_ledger()
    env = declare(tmp_path, {"nulbench": KERNEL}, {"nulsweep": EXPERIMENT}, {"nulbench": PROGRAM})
    proc = run_cli(
        "--ledger", url, "submit", "experiment=nulsweep", "experiment.preflight=false", "--wait", cwd=tmp_path, env=env
    )
    assert "NUL" not in proc.stderr, proc.stderr
    jobs = run_cli("--ledger", url, "jobs", "--format", "json", cwd=tmp_path, env=env)
    assert jobs.returncode == 0, jobs.stderr
    reasons = {j["variant"]: (j["state"], j["reason"]) for j in json.loads(jobs.stdout)}
    assert reasons["quiet"][0] == "LOST_OUTPUT" and "last lines: junk\\x00here \\x07bell" in reasons["quiet"][1]
    assert reasons["fails"][0] == "FAILED" and "err\\x00or: disk full" in reasons["fails"][1]
