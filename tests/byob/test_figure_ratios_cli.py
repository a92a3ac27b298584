"""A figure's ratio between two implementations, through the CLI on this
machine (cluster=local): report --json's figure_ratios and the report's
table say which implementation is better in the figure's direction."""

from __future__ import annotations

import json
from pathlib import Path

from tests.byob.declared import declare
from tests.conftest import run_cli, sql_rows

# the rate is the program's first argument: the two implementations pass 3000 and 1000
PROGRAM = """#!/bin/sh
echo "rate: $1 items/s"
echo "latency: $2 us"
"""
KERNEL = """
name: tworate
driven_by: tool
impls:
  fast: {argv: ["tworate", "3000", "10"], variants: [plain]}
  slow: {argv: ["tworate", "1000", "40"], variants: [plain]}
figures:
  - {name: rate, regex: 'rate: ([0-9.]+)', unit: items/s, higher_is_better: true}
  - {name: latency, regex: 'latency: ([0-9.]+) us', unit: us}
"""
EXPERIMENT = """
name: tworate_sweep
repeats: 3
warmup: 0
check: false
sweeps:
  - {kernel: tworate, impls: [fast, slow], variants: [plain], threads: [1]}
"""


def test_the_better_implementation_in_each_figures_direction(tmp_path: Path) -> None:
    env = declare(tmp_path, {"tworate": KERNEL}, {"tworate_sweep": EXPERIMENT}, {"tworate": PROGRAM})
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=tworate_sweep", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s for (s,) in sql_rows(ledger, "SELECT state FROM job_attempt")} == {"COMPLETED"}
    proc = run_cli("--ledger", str(ledger), "report", "--json", "--keys", "figure_ratios", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    got = {r["metric"]: r for r in json.loads(proc.stdout)["figure_ratios"]}
    assert set(got) == {"rate", "latency"}
    rate, latency = got["rate"], got["latency"]
    assert (rate["dimension"], rate["a"], rate["b"], rate["value_a"], rate["value_b"]) == (
        "impl", "fast", "slow", 3000.0, 1000.0)
    assert rate["ratio"] == 3.0 and rate["higher_is_better"] and rate["better"] == "a"
    assert latency["ratio"] == 0.25 and not latency["higher_is_better"] and latency["better"] == "a"
    assert rate["n"] is None and rate["threads"] == 1  # a program without a problem size
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "rep"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep" / "local.md").read_text()
    assert "**Ratios of rate [items/s] between values of one dimension (higher is better)**" in md
    assert "| impl | fast | slow | 1 | – | 3000 | 1000 | 3.00× | a |" in md
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    # the finding, unless the machine was busy while the jobs ran (then no ratio rests on a clean point)
    assert "rate (higher is better): impl fast is 3.00× better than slow" in summary or \
        "busy machine" in md, summary
