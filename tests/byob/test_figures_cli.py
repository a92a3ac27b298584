"""Figures of merit as the analysis's own metric, through the CLI on this
machine (cluster=local): a fixed-duration program without a problem size,
swept over threads and a grid key, is judged on its rate (speedup and
efficiency in the rate's direction, an efficiency above 105% flagged) and
never on its time; `compare` calls a drop of a higher-is-better figure
worse; a sweep without n names the fix when the program needs one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows

# Prints a rate that grows as threads^2 (more than the threads can give, on purpose) times the
# number in the file `base` beside it, a latency of base/400 ms (a time it measured) and the set
# time it ran for: what a fixed-duration benchmark prints.
PROGRAM = """#!/bin/sh
echo "mode $2"
echo "rate: $(( $1 * $1 * $(cat "$(dirname "$0")/base") )) events/s"
echo "p99: $(awk "BEGIN {print $(cat "$(dirname "$0")/base") / 400}") ms"
echo "ran for: 1.0 s"
"""
KERNEL = """
name: myrate
driven_by: tool
fixed_duration: true
impls:
  sh: {argv: ["myrate", "{threads}", "{mode}"], variants: [plain]}
figures:
  - {name: rate, regex: 'rate: ([0-9.]+)', unit: events/s, higher_is_better: true}
  - {name: p99, regex: 'p99: ([0-9.]+) ms', unit: ms}
  - {name: ran_for, regex: 'ran for: ([0-9.]+) s', unit: s, duration: true}
"""
EXPERIMENT = """
name: myrate_sweep
repeats: 4
warmup: 0
check: false
sweeps:
  - {kernel: myrate, impls: [sh], variants: [plain], threads: [1, 2], grid: {mode: [a, b]}}
"""


def _setup(root: Path) -> dict[str, str]:
    (root / "conf" / "kernel").mkdir(parents=True)
    (root / "conf" / "experiment").mkdir()
    (root / "bin").mkdir()
    (root / "conf" / "kernel" / "myrate.yaml").write_text(KERNEL)
    (root / "conf" / "experiment" / "myrate_sweep.yaml").write_text(EXPERIMENT)
    program = root / "bin" / "myrate"
    program.write_text(PROGRAM)
    program.chmod(0o755)
    (root / "bin" / "base").write_text("1000\n")
    return {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}


def _submit(cwd: Path, ledger: Path, env: dict[str, str]) -> None:
    cwd.mkdir(exist_ok=True)  # each ledger its own runs/ folder beside it
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=myrate_sweep", cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s for (s,) in sql_rows(ledger, "SELECT state FROM job_attempt")} == {"COMPLETED"}


def two_rate_campaigns(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """The environment and two ledgers of the rate sweep: the second run after the program's rate
    dropped (its printed base 1000 -> 800), so a compare has a worse figure to find."""
    env = _setup(tmp_path)
    base, new = tmp_path / "b" / "ledger.sqlite", tmp_path / "n" / "ledger.sqlite"
    _submit(base.parent, base, env)
    (tmp_path / "bin" / "base").write_text("800\n")
    _submit(new.parent, new, env)
    return env, base, new


def test_fixed_duration_rate_is_judged_on_its_figure(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    _submit(tmp_path, ledger, env)
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "rep"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "local.md").read_text()
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "fixed-duration" in summary
    for said in ("slower", "time grows", "Largest speedup", "Threads"):  # nothing judged on the set time
        assert said not in summary
    assert "## Scaling with n" not in text and "## Threads" not in text
    assert "rate (higher is better): largest speedup over threads 4.00× at 2 threads against 1" in summary
    assert "Flagged: rate efficiency 200% above 105% at 2 threads" in summary
    merit = text.split("## Figures of merit", 1)[1]
    assert "**Scaling of rate over threads**" in merit and "ran_for" not in merit
    assert merit.count("| 4.00× | 200% † |") == 2  # one per grid value, never pooled
    assert "[mode=a]" in merit and "[mode=b]" in merit
    html = (tmp_path / "rep" / "local.html").read_text()
    assert "200% †" in html and "Scaling of rate over threads" in html

    proc = run_cli("--ledger", str(ledger), "report", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["speedup"] == [] and doc["fits"] == [] and doc["best_threads"] == []
    assert doc["figure_exponents"] == [] and doc["figure_crossovers"] == []  # no sizes: nothing over n
    # superlinear (4x on 2 threads): Amdahl's fit of 1/rate has a negative serial part, clipped to none
    # and the latency, the same at 1 and 2 threads, is all serial
    assert sorted((r["metric"], r["params"], r["serial_fraction"]) for r in doc["figure_serial_fractions"]) == [
        ("p99", "mode=a", 1.0), ("p99", "mode=b", 1.0), ("rate", "mode=a", 0.0), ("rate", "mode=b", 0.0)]
    # every figure it measured, a latency in ms too; never the one that reports its set time
    assert {r["metric"] for r in doc["figures_of_merit"]} == {"rate", "p99"}
    assert {r["value"] for r in doc["figures_of_merit"] if r["metric"] == "p99"} == {2.5}
    scaled = {(r["params"], r["threads"]): r for r in doc["figure_scaling"] if r["metric"] == "rate"}
    assert set(scaled) == {(f"mode={m}", t) for m in "ab" for t in (1, 2)}
    top = scaled[("mode=a", 2)]
    assert top["axis"] == "threads" and top["higher_is_better"] is True and top["base"] == 1
    assert top["value"] == 4000 and top["base_value"] == 1000
    assert top["speedup"] == pytest.approx(4.0) and top["efficiency"] == pytest.approx(2.0)
    assert top["superlinear"] is True and scaled[("mode=a", 1)]["superlinear"] is False

    proc = run_cli("--ledger", str(ledger), "advise", "threads", "--cluster", "local", "--partition", "local",
                   "--kernel", "myrate", "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert advice["judged_on"] == {"metric": "rate", "unit": "events/s", "higher_is_better": True, "cost": "1/value"}
    # 2 threads, unless the sizes were timed on a busy machine (a loaded test machine): then no advice at all
    shared = {r["params"] for r in advice["per_n"] if r["shared"]}
    assert {(r["params"], r["recommended"]) for r in advice["ranges"]} == {
        (m, None if m in shared else 2) for m in ("mode=a", "mode=b")}


def test_compare_calls_a_drop_of_a_rate_worse(tmp_path: Path) -> None:
    env, base, new = two_rate_campaigns(tmp_path)
    sel = "campaign=myrate_sweep-local,ledger="
    proc = run_cli("compare", sel + str(base), sel + str(new), "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    points = doc["points"]
    # the set time is not compared; the latency it measured is (2.5 -> 2 ms: better)
    assert len(points) == 8 and {p["metric"] for p in points} == {"rate", "p99"}
    assert {(p["metric"], p["verdict"]) for p in points} == {("rate", "worse"), ("p99", "better")}
    points = [p for p in points if p["metric"] == "rate"]
    assert all(p["higher_is_better"] and p["ratio"] == pytest.approx(1.25) for p in points)
    if all(r["shared"] == r["points"] for r in doc["summary"]):  # timed on a busy machine: no kernel verdict
        assert {r["verdict"] for r in doc["summary"]} == {"shared-machine"}
        return
    assert {(r["metric"], r["verdict"]) for r in doc["summary"]} == {("rate", "worse"), ("p99", "better")}
    proc = run_cli("compare", sel + str(base), sel + str(new), "--fail-on", "slower", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "worse" in proc.stdout
    proc = run_cli("compare", sel + str(base), sel + str(new), "--fail-on", "worse", cwd=tmp_path, env=env)
    assert proc.returncode == 3 and "4 point(s) slower or worse than BASE" in proc.stderr, proc.stderr
    proc = run_cli("compare", sel + str(new), sel + str(base), "--format", "json", cwd=tmp_path, env=env)
    assert {(p["metric"], p["verdict"]) for p in json.loads(proc.stdout)["points"]} == {("rate", "better"),
                                                                                        ("p99", "worse")}


def test_a_sweep_without_n_names_the_fix(tmp_path: Path) -> None:
    """A contract program loops over sizes: leaving n out is one line with the fix, exit 2."""
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "no_n.yaml").write_text("name: no_n\nsweeps:\n  - {kernel: attention_forward, impls: [c], "
                                    "variants: [naive]}\n")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=no_n", "--dry-run", cwd=tmp_path,
                   env={"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "experiment.sweeps.0.n is missing" in line and "n: [1000]" in line


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench not installed (make test installs it)")
def test_shipped_sysbench_for_a_set_time(tmp_path: Path) -> None:
    """conf/experiment/byob_sysbench_timed.yaml: events/s over threads 1, 2 x max_prime, no n."""
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=byob_sysbench_timed", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("--ledger", str(ledger), "report", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["speedup"] == [] and doc["exponents"] == []
    rows = [r for r in doc["figure_scaling"] if r["threads"] == 2]
    assert {r["params"] for r in rows} == {"seconds=1,max_prime=2000", "seconds=1,max_prime=4000"}
    assert all(r["metric"] == "events_per_s" and r["higher_is_better"] and r["speedup"] > 0 for r in rows)
    assert all(r["efficiency"] == pytest.approx(r["speedup"] / 2) for r in rows)
    assert all(r["superlinear"] == (r["efficiency"] > 1.05) for r in rows)
