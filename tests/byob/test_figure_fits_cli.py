"""A figure's serial fraction and crossovers over n, through the CLI on this
machine (cluster=local): report --json's figure_serial_fractions and
figure_crossovers, and the report's tables, in each figure's direction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.byob.declared import declare
from tests.conftest import run_cli, sql_rows

# At n = 1000 the cost of one unit of work is Amdahl's 0.2 + 0.8/T (serial fraction 0.2); at n = 100 more
# threads only add overhead, 1 + 0.1 (T - 1). Two thread counts, which any machine has: the fit through
# two points is exact. The rate is 1000 / cost, the latency the cost itself.
PROGRAM = """#!/bin/sh
awk -v t="$1" -v n="$2" 'BEGIN {
  c = (n >= 1000) ? 0.2 + 0.8 / t : 1 + 0.1 * (t - 1)
  printf "rate: %.9f items/s\\nlatency: %.9f ms\\n", 1000 / c, c
}'
"""
KERNEL = """
name: amdahlish
driven_by: tool
impls:
  sh: {argv: ["amdahlish", "{threads}", "{n}"], variants: [plain]}
figures:
  - {name: rate, regex: 'rate: ([0-9.]+)', unit: items/s, higher_is_better: true}
  - {name: latency, regex: 'latency: ([0-9.]+) ms', unit: ms}
"""
EXPERIMENT = """
name: amdahlish_sweep
repeats: 3
warmup: 0
check: false
sweeps:
  - {kernel: amdahlish, impls: [sh], variants: [plain], threads: [1, 2], n: [100, 1000]}
"""


def test_serial_fraction_and_crossovers_in_each_figures_direction(tmp_path: Path) -> None:
    env = declare(tmp_path, {"amdahlish": KERNEL}, {"amdahlish_sweep": EXPERIMENT}, {"amdahlish": PROGRAM})
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=amdahlish_sweep", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s for (s,) in sql_rows(ledger, "SELECT state FROM job_attempt")} == {"COMPLETED"}
    proc = run_cli("--ledger", str(ledger), "report", "--json", "--keys",
                   "figure_serial_fractions,figure_crossovers", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    fractions = {(r["metric"], r["n"]): r for r in doc["figure_serial_fractions"]}
    assert set(fractions) == {(m, n) for m in ("rate", "latency") for n in (100, 1000)}
    for metric in ("rate", "latency"):  # the same cost, one as a rate and one as a time: one fraction
        fit = fractions[(metric, 1000)]
        assert (fit["axis"], fit["law"], fit["points"], fit["min_axis"], fit["max_axis"]) == (
            "threads", "amdahl", 2, 1, 2)
        assert fit["serial_fraction"] == pytest.approx(0.2, abs=1e-6) and fit["single_repeat"] is False
        assert fractions[(metric, 100)]["serial_fraction"] == 1.0  # more threads made it slower: all serial
    crossings = {(r["metric"], r["a"], r["b"]): r for r in doc["figure_crossovers"]}
    assert set(crossings) == {(m, a, b) for m in ("rate", "latency") for a, b in ((1, 2),)}
    for r in crossings.values():
        assert (r["axis"], r["crossed"], r["n_before"], r["n_at"], r["within_noise"]) == (
            "threads", True, 100, 1000, False)
        assert type(r["n_before"]) is int and type(r["n_at"]) is int  # sizes are integers in JSON
    assert crossings[("rate", 1, 2)]["higher_is_better"] and not crossings[("latency", 1, 2)]["higher_is_better"]
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "rep"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep" / "local.md").read_text().split("## Figures of merit", 1)[1]
    assert "**Serial fraction of rate (Amdahl, higher is better)**" in md
    assert "**Crossovers of latency over n (lower is better)**" in md
    assert "| 1 → 2 threads | 100 < n ≤ 1000 | outside noise |" in md
