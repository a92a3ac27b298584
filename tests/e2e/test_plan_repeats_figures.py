"""plan-repeats of a tool-driven, fixed-duration program plans from the figure that `compare`
judges, not from the run's time: through the CLI on this machine (cluster=local), a program that
runs for a set time and prints a rate that varies from repeat to repeat."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_cli

# the rate differs by repeat (a fixed spread: no random numbers), the time is the set one
PROGRAM = """#!{python}
import sys
repeat = int(sys.argv[1])
print(f"rate: {{(100.0, 160.0, 70.0, 130.0)[repeat % 4] * (1 + 0.1 * int(sys.argv[2]))}} ev/s")
print("errors: 0")
print("total time: 0.05s")  # (its set time; it ends at once, so the job's wall time says little)
"""
KERNEL = """
name: spread
driven_by: tool
fixed_duration: true
impls:
  py: {argv: ["spreadbench", "{repeat}", "{replicate_bump}"], variants: [v]}
figures:
  - {name: rate, regex: 'rate: ([0-9.]+) ev/s', unit: ev/s, higher_is_better: true}
  - {name: errors, regex: 'errors: ([0-9]+)', unit: count}
  - {name: total, regex: 'total time: ([0-9.]+)s', unit: s, duration: true}
"""
EXPERIMENT = """
name: spread
repeats: 4
warmup: 0
check: false
replicates: 2
sweeps:
  - {kernel: spread, impls: [py], variants: [v], threads: [1], args: {replicate_bump: 0}}
"""


def test_a_fixed_duration_programs_plan_reads_its_figure(tmp_path: Path) -> None:
    """The plan's within-job spread was the run's time's (one set time: ~0%, or each invocation's
    wall time), for the rate as for the set time: a plan that a compare of the rate then missed.
    It is the figure's own, as compare judges it, and the set time is no point of the plan; nor is a
    count of 0, which has no ratio to plan (it gave NaN, in JSON too), and the program's figures are
    one run, their shared time counted once (they were 3 runs)."""
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "spreadbench"
    program.write_text(PROGRAM.format(python=sys.executable))
    program.chmod(0o755)
    for folder, name, text in (("kernel", "spread", KERNEL), ("experiment", "spread", EXPERIMENT)):
        (tmp_path / "conf" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "conf" / folder / f"{name}.yaml").write_text(text)
    env = {"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf"), "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"}
    cli = ("--ledger", str(tmp_path / "ledger.sqlite"))
    proc = run_cli(*cli, "submit", "experiment=spread", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli(*cli, "--format", "json", "plan-repeats", "spread-local", "--width", "5%",
                   "--job-overhead", "1", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout, parse_constant=lambda word: pytest.fail(f"{word} in the JSON"))
    rows = pd.DataFrame(json.loads(run_cli(*cli, "results", "--format", "json", cwd=tmp_path, env=env).stdout))
    rate = rows[rows["metric"] == "rate"]
    within = rate.groupby("replicate")["value"].apply(lambda v: v.map(math.log).var(ddof=1)).mean()
    [point] = plan["neediest"]  # the rate alone: the set time is judged nowhere, the zero count is left out
    assert (plan["runs"], plan["points"], plan["unplanned"]) == (1, 1, 1), plan
    assert "1 figure point(s) left out: a value at or below zero" in run_cli(
        *cli, "plan-repeats", "spread-local", "--job-overhead", "1", cwd=tmp_path, env=env).stdout
    assert "metric=rate" in point["point"], point
    assert math.isclose(point["t1"], math.sqrt(within), rel_tol=1e-6), (point, math.sqrt(within))
