"""A tool-driven program that reads no `{dtype}` has no element type: through
the CLI on this machine, beside one that reads it, its runs show no dtype in
`show` (both readers), `jobs`, `results` and the report, whose grouping keeps
the NULL dtype as a value of its own; the other program keeps its fp32. The
runs' keys are not changed (the stored spec keeps the plan's dtype)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from campaign.job.element_type import untyped
from tests.conftest import run_cli, sql_rows

PROGRAM = """#!/bin/sh
sleep "0.$(( 2 / $1 ))"
echo "rate: $(( 100 * $1 ))"
"""
KERNELS = {"plain": '["prog", "{threads}"]', "typed": '["prog", "{threads}", "--precision={dtype}"]'}
KERNEL = """
name: {name}
driven_by: tool
impls:
  sh: {{argv: {argv}, variants: [v]}}
figures:
  - {{name: rate, regex: 'rate: ([0-9.]+)', unit: op/s, higher_is_better: true}}
"""
EXPERIMENT = """
name: two
repeats: 2
warmup: 0
check: false
sweeps:
  - {kernel: plain, impls: [sh], variants: [v], threads: [1, 2], grid: {mode: [a, b]}}
  - {kernel: typed, impls: [sh], variants: [v], threads: [1, 2]}
"""


def _campaign(root: Path) -> tuple[Path, dict[str, str]]:
    (root / "conf" / "kernel").mkdir(parents=True)
    (root / "conf" / "experiment").mkdir()
    (root / "bin").mkdir()
    for name, argv in KERNELS.items():
        (root / "conf" / "kernel" / f"{name}.yaml").write_text(KERNEL.format(name=name, argv=argv))
    (root / "conf" / "experiment" / "two.yaml").write_text(EXPERIMENT)
    (root / "bin" / "prog").write_text(PROGRAM)
    (root / "bin" / "prog").chmod(0o755)
    env = {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}
    ledger = root / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=two", cwd=root, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ledger, env


def test_a_program_without_a_dtype_shows_none_everywhere(tmp_path: Path) -> None:
    ledger, env = _campaign(tmp_path)
    cli = ("--ledger", str(ledger))
    assert {d for (d,) in sql_rows(ledger, "SELECT dtype FROM run")} == {"fp32"}  # the plan's, in its key

    jobs = json.loads(run_cli(*cli, "jobs", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert {(j["kernel"], j["dtype"]) for j in jobs} == {("plain", None), ("typed", "fp32")}
    assert sorted(j["params"] for j in jobs if j["kernel"] == "plain") == ["mode=a", "mode=a", "mode=b", "mode=b"]
    table = run_cli(*cli, "jobs", "--no-sync", cwd=tmp_path, env=env).stdout
    for label in ("plain/sh/v local 1t mode=a", "plain/sh/v local 2t mode=b", "typed/sh/v fp32 local 2t"):
        assert f"  {label}  " in table, table

    for kernel, dtype, words in (("plain", None, "dtype none (the program reads no {dtype})"),
                                 ("typed", "fp32", "dtype fp32")):
        job = next(j["job_id"] for j in jobs if j["kernel"] == kernel)
        for sync in ((), ("--no-sync",)):  # the ORM path and the light one: the same words
            text = run_cli(*cli, "show", *sync, job, cwd=tmp_path, env=env).stdout
            assert f"device cpu  {words}  threads" in text, text
            assert ("fp32" in text.splitlines()[1]) == (dtype is not None)  # the run's label
            record = json.loads(run_cli(*cli, "show", *sync, job, "--format", "json", cwd=tmp_path, env=env).stdout)
            assert record["dtype"] == dtype

    rows = json.loads(run_cli(*cli, "results", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert {(r["kernel"], r["dtype"]) for r in rows} == {("plain", None), ("typed", "fp32")}
    assert len(rows) == 12  # 6 runs x 2 repeats: none lost to a NULL dtype

    proc = run_cli(*cli, "report", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    speedup = json.loads(proc.stdout)["speedup"]
    # one configuration per kernel and grid value: the NULL dtype grouped as a value, never dropped
    assert sorted((r["kernel"], r["dtype"], r["params"], r["threads"]) for r in speedup) == [
        ("plain", None, "mode=a", 1), ("plain", None, "mode=a", 2), ("plain", None, "mode=b", 1),
        ("plain", None, "mode=b", 2), ("typed", "fp32", "", 1), ("typed", "fp32", "", 2)]
    proc = run_cli(*cli, "report", "--out", str(tmp_path / "rep"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "local.md").read_text()
    assert "plain/sh/v local 1t mode=a" in text  # the job table's run label (campaign.results.frames)
    assert "plain/sh/v local [mode=a]" in text and "typed/sh/v fp32 local" in text and "plain/sh/v fp32" not in text

    proc = run_cli(*cli, "submit", "experiment=two", cwd=tmp_path, env=env)  # the same runs: nothing new planned
    assert proc.returncode == 0, proc.stderr
    assert sql_rows(ledger, "SELECT count(*) FROM run") == [(6,)]


def test_untyped_reads_the_driver_spec() -> None:
    """The rule: {dtype} anywhere in the templates, or a cost model that sizes elements by dtype."""
    spec = {"argv": ["bench", "--threads={threads}"], "env": {"X": "1"}, "figures": [{"source": "stdout"}]}
    assert untyped(json.dumps(spec))
    for reads in ({"env": {"PRECISION": "{dtype}"}}, {"argv": ["bench", "{dtype}"]}, {"script": "run {dtype}"},
                  {"inputs": {"in.txt": "p={dtype}"}}, {"figures": [{"source": "out_{dtype}.txt"}]},
                  {"element_bytes": {"fp32": 4}}):
        assert not untyped(json.dumps({**spec, **reads})), reads
    assert untyped(json.dumps({**spec, "argv": ["bench", "{{dtype}}"]}))  # literal braces: no placeholder
    assert not untyped("not json") and not untyped(None)  # not a driver's spec: not judged
