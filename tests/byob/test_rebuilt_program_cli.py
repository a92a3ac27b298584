"""A tool-driven benchmark is identified by its own program's content, not
only by our driver: through the CLI on this machine, a C program declared in
YAML is compiled, submitted, resubmitted unchanged (nothing new), rebuilt
with another setting and resubmitted. The second build runs, `submit` names
the change (`user.<program>`), and the report takes the new build alone and
names the old build's runs as superseded; `results` keeps both builds' rows."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows

SOURCE = r"""#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    printf("rate: %ld\n", (long)RATE + 0 * n);
    return 0;
}
"""
KERNEL = """
name: rebuilt
driven_by: tool
impls:
  c: {argv: ["rebuiltbench", "{n}"], variants: [v]}
figures:
  - {name: rate, regex: 'rate: ([0-9]+)', unit: op/s, higher_is_better: true}
"""
EXPERIMENT = """
name: rebuild
repeats: 2
warmup: 0
check: false
sweeps:
  - {kernel: rebuilt, impls: [c], variants: [v], threads: [1], n: [10]}
"""


def _build(root: Path, rate: int) -> None:
    """Compile the program into bin/ as a user does: a new file at the same path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on this machine")
    (root / "bench.c").write_text(SOURCE)
    subprocess.run([cc, "-O2", f"-DRATE={rate}", "-o", str(root / "bin" / "rebuiltbench"), str(root / "bench.c")],
                   check=True, capture_output=True)


def _project(root: Path) -> dict[str, str]:
    """The user's config folder and bin/ under `root`; the environment that finds both."""
    (root / "conf" / "kernel").mkdir(parents=True)
    (root / "conf" / "experiment").mkdir()
    (root / "bin").mkdir()
    (root / "conf" / "kernel" / "rebuilt.yaml").write_text(KERNEL)
    (root / "conf" / "experiment" / "rebuild.yaml").write_text(EXPERIMENT)
    return {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}


def test_a_rebuilt_program_runs_again_and_supersedes_the_old_build(tmp_path: Path) -> None:
    env = _project(tmp_path)
    ledger = tmp_path / "ledger.sqlite"

    def submit() -> str:
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=rebuild", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    _build(tmp_path, 100)
    first = submit()
    assert "1 runs planned, 0 already in the ledger, 1 submitted" in first, first
    same = submit()  # the same binary: nothing new
    assert "1 already in the ledger, 0 submitted" in same and "new run" not in same, same

    _build(tmp_path, 200)  # rebuilt with another setting: another file's content
    again = submit()
    assert "0 already in the ledger, 1 submitted" in again, again
    [line] = [ln for ln in again.splitlines() if "new run(s):" in ln]
    assert "1 new run(s): user.rebuiltbench 'sha256:" in line and "-> 'sha256:" in line, line
    assert "this once" not in line  # the note is for ledgers written before the program was hashed
    first_jobs = [str(j) for (j,) in sql_rows(ledger, "SELECT job_id FROM job_attempt ORDER BY id")][:1]

    cli = ("--ledger", str(ledger))
    rows = json.loads(run_cli(*cli, "results", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert sorted(r["value"] for r in rows) == [100, 100, 200, 200]  # both builds' rows kept as stored

    proc = run_cli(*cli, "report", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    [rec] = data["scope"]["superseded"]
    assert rec["runs"] == 1 and rec["rows"] == 2 and rec["job_ids"] == first_jobs
    assert "user.rebuiltbench" in rec["change"], rec
    values = [(f["value"], f["repeats"]) for f in data["figures_of_merit"] if f["metric"] == "rate"]
    assert values == [(200, 2)], data["figures_of_merit"]  # the new build alone, never pooled


def test_a_reverted_program_is_the_latest_again(tmp_path: Path) -> None:
    """Build A, build B, then A again: the third submit sends nothing (A's run is in the ledger), yet
    A is what the user last submitted, so the report takes A's rows and names B's run superseded."""
    env = _project(tmp_path)
    cli = ("--ledger", str(tmp_path / "ledger.sqlite"))

    def submit(rate: int) -> str:
        _build(tmp_path, rate)
        proc = run_cli(*cli, "submit", "experiment=rebuild", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    def reported() -> tuple[list[int], list[str]]:
        proc = run_cli(*cli, "report", "--json", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        return ([f["value"] for f in data["figures_of_merit"] if f["metric"] == "rate"],
                [r["change"] for r in data["scope"]["superseded"]])

    submit(100)
    first_hash = (tmp_path / "bin" / "rebuiltbench").read_bytes()
    submit(200)
    assert reported()[0] == [200]
    again = submit(100)
    assert (tmp_path / "bin" / "rebuiltbench").read_bytes() == first_hash, "the compiler wrote another binary"
    assert "1 already in the ledger, 0 submitted" in again, again
    values, changes = reported()
    assert values == [100], values  # the build submitted last, not the run created last
    [change] = changes
    assert "user.rebuiltbench" in change, change
    third = submit(300)  # what changed is told against the latest build, the reverted one
    [line] = [ln for ln in third.splitlines() if "new run(s):" in ln]
    assert f"user.rebuiltbench 'sha256:{hashlib.sha256(first_hash).hexdigest()[:16]}' -> " in line, line
