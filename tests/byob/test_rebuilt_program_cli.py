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
#ifdef FAIL_ABOVE
    if (n > FAIL_ABOVE) { fprintf(stderr, "n=%ld too large\n", n); return 3; }
#endif
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


def _build(root: Path, rate: int, *defines: str) -> str:
    """Compile the program into bin/ as a user does: a new file at the same path; its sha256."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on this machine")
    (root / "bench.c").write_text(SOURCE)
    subprocess.run(
        [cc, "-O2", f"-DRATE={rate}", *defines, "-o", str(root / "bin" / "rebuiltbench"), str(root / "bench.c")],
        check=True,
        capture_output=True,
    )
    return hashlib.sha256((root / "bin" / "rebuiltbench").read_bytes()).hexdigest()


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
    # the dry run says what a submit would say of it, before anything runs
    dry = run_cli("--ledger", str(ledger), "submit", "experiment=rebuild", "--dry-run", cwd=tmp_path, env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    [planned] = [ln for ln in dry.stdout.splitlines() if "new run(s):" in ln]
    again = submit()
    assert "0 already in the ledger, 1 submitted" in again, again
    [line] = [ln for ln in again.splitlines() if "new run(s):" in ln]
    assert planned == f"# {line.strip()}", (planned, line)
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
        return (
            [f["value"] for f in data["figures_of_merit"] if f["metric"] == "rate"],
            [r["change"] for r in data["scope"]["superseded"]],
        )

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


def _report(cli: tuple[str, ...], root: Path, env: dict[str, str]) -> tuple[dict, list[str]]:
    """`report --json` and the markdown report's builds table rows."""
    proc = run_cli(*cli, "report", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    out = root / "report"
    md = run_cli(*cli, "report", "--out", str(out), cwd=root, env=env)
    assert md.returncode == 0, md.stderr
    text = (out / "local.md").read_text()
    table = text[text.index("**Kernel builds per partition") :].split("\n\n")[1].splitlines()[2:]
    return json.loads(proc.stdout), table


def test_the_builds_table_names_the_build_whose_rows_are_reported(tmp_path: Path) -> None:
    """A rebuilt program's report takes the new build's rows alone: its builds table (text and
    `report --json` `builds`) named the superseded build beside it, one program twice, as if both
    made the numbers shown; it names the new build only."""
    env = _project(tmp_path)
    cli = ("--ledger", str(tmp_path / "ledger.sqlite"))
    for rate in (100, 200):
        sha = _build(tmp_path, rate)
        proc = run_cli(*cli, "submit", "experiment=rebuild", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    data, table = _report(cli, tmp_path, env)
    assert [f["value"] for f in data["figures_of_merit"]] == [200]
    assert [b["sha256"] for b in data["builds"]] == [sha], data["builds"]
    assert table == [f"| local | rebuilt | c | rebuiltbench | user binary {sha[:12]} |"], table


def test_the_builds_table_names_a_failed_jobs_program_whose_rows_are_reported(tmp_path: Path) -> None:
    """A job that fails at its second n keeps the rows of its first (FAILED, a partial state), and the
    report shows them: the builds table left that program out (it read COMPLETED attempts only), so
    the numbers shown had no program named; it names it."""
    env = _project(tmp_path)
    (tmp_path / "conf" / "experiment" / "rebuild.yaml").write_text(EXPERIMENT.replace("n: [10]", "n: [10, 20]"))
    sha = _build(tmp_path, 100, "-DFAIL_ABOVE=10")
    cli = ("--ledger", str(tmp_path / "ledger.sqlite"))
    proc = run_cli(*cli, "submit", "experiment=rebuild", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert sql_rows(tmp_path / "ledger.sqlite", "SELECT state FROM job_attempt") == [("FAILED",)]
    data, table = _report(cli, tmp_path, env)
    assert [(f["n"], f["value"]) for f in data["figures_of_merit"]] == [(10, 100)]
    assert [b["sha256"] for b in data["builds"]] == [sha], data["builds"]
    assert table == [f"| local | rebuilt | c | rebuiltbench | user binary {sha[:12]} |"], table


def test_show_names_no_build_of_ours_for_a_campaign_of_user_programs(tmp_path: Path) -> None:
    """On this machine a campaign of the user's programs alone ran no build, yet `show` said
    `build: key ...  job - COMPLETED  folder <repo>/kernels/build` (our `make kernels` output, linked
    because it had been built earlier), as if our build made the user's binary; on Slurm the same
    campaign said `build: none`. It says none here too."""
    from campaign.config.load import repo_root
    from campaign.job.build import read_record

    if read_record(repo_root() / "kernels" / "build") is None:
        pytest.skip("our kernels are not built here (make kernels): nothing that could be linked")
    env = _project(tmp_path)
    sha = _build(tmp_path, 100)
    cli = ("--ledger", str(tmp_path / "ledger.sqlite"))
    proc = run_cli(*cli, "submit", "experiment=rebuild", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [(job,)] = sql_rows(tmp_path / "ledger.sqlite", "SELECT job_id FROM job_attempt")
    shown = run_cli(*cli, "show", str(job), cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = {line.split(":")[0]: line for line in shown.stdout.splitlines() if line.startswith(("build:", "program:"))}
    assert lines["build"] == "build: none (no C/Fortran programs)", shown.stdout
    assert lines["program"].endswith(f"user binary sha256 {sha[:12]}"), shown.stdout


def test_a_changed_declaration_supersedes_the_runs_of_the_old_one(tmp_path: Path) -> None:
    """A `script:` edited (or a pattern, or an argv) is new runs, `submit` says so (`argv[3] ...`),
    and the report reads the new declaration's runs alone: they were pooled with the old ones, one
    median of 1.0 and 2.0 reported as 1.5 over 6 repeats (seen configuring a program from
    docs/byob.md, whose 'How it works' promises a new pattern is never mixed with the old)."""
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    kernel = conf / "kernel" / "decl.yaml"
    text = (
        'name: decl\ndriven_by: tool\nimpls:\n  sh: {script: "echo v: 1.0 s", variants: [v]}\n'
        "figures:\n  - {name: x, regex: 'v: ([0-9.]+)', unit: s}\n"
    )
    kernel.write_text(text)
    (conf / "experiment" / "decl.yaml").write_text(
        EXPERIMENT.replace("rebuilt", "decl")
        .replace("[c]", "[sh]")
        .replace("name: rebuild", "name: decl")
        .replace(", n: [10]", "")
    )
    env, cli = {"CAMPAIGN_CONFIG_PATH": str(conf)}, ("--ledger", str(tmp_path / "ledger.sqlite"))
    first = run_cli(*cli, "submit", "experiment=decl", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    kernel.write_text(text.replace("v: 1.0 s", "v: 2.0 s"))
    again = run_cli(*cli, "submit", "experiment=decl", cwd=tmp_path, env=env)
    assert again.returncode == 0 and "1 new run(s): argv[3]" in again.stdout, again.stdout + again.stderr
    proc = run_cli(*cli, "report", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    values = [(f["value"], f["repeats"]) for f in data["figures_of_merit"] if f["metric"] == "x"]
    assert values == [(2.0, 2)], data["figures_of_merit"]  # the new declaration alone, never pooled
    [rec] = data["scope"]["superseded"]
    assert rec["runs"] == 1 and rec["rows"] == 2 and "argv[3]" in rec["change"] and "2.0 s" in rec["change"], rec
